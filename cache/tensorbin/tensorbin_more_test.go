package tensorbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTensorbinRoundTrip(t *testing.T) {
	t.Parallel()
	nd := WidthShardedConfig(64, 96)
	nd.NdShardSpec = &NdShardSpec{
		ShardShape:           []uint32{64, 32},
		Grid:                 []CoreRange{{Start: CoreCoord{0, 0}, End: CoreCoord{7, 0}}, {Start: CoreCoord{1, 2}, End: CoreCoord{3, 4}}},
		Orientation:          ColMajorOrientation,
		DistributionStrategy: 1,
	}
	nd.CreatedWithNdShardSpec = true
	tests := []struct {
		name   string
		h      Header
		shards [][]byte
	}{
		{
			name: "dramshard bfp8 mesh 1x2",
			h: NewMeshShardedHeader(NewTensorSpec([]int{64, 96}, tile.BFLOAT8_B, tile.TILE, WidthShardedConfig(64, 96)),
				-1, []uint64{6 * tile.BFP8TileBytes, 6 * tile.BFP8TileBytes}),
		},
		{
			name: "row major bf16 replicated",
			h:    NewReplicatedHeader(NewTensorSpec([]int{1, 1, 160, 32}, tile.BFLOAT16, tile.ROW_MAJOR, InterleavedConfig()), 10240),
		},
		{
			name: "uneven bfp4 shards dim 0 over 1x3",
			h:    NewMeshShardedHeader(NewTensorSpec([]int{32, 64}, tile.BFLOAT4_B, tile.TILE, nd), 0, []uint64{100, 1, 576}),
		},
		{
			name: "no topology, shared buffer",
			h: Header{
				Spec:      NewTensorSpec([]int{32, 32}, tile.FLOAT32, tile.TILE, InterleavedConfig()),
				MeshShape: []uint32{1, 2},
				Shards:    []Shard{{0, 4096, []uint32{0, 0}}, {0, 4096, []uint32{0, 1}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := tc.h
			var shards [][]byte
			for i, s := range h.Shards {
				b := make([]byte, s.Size)
				for j := range b {
					b[j] = byte(i*7 + j)
				}
				shards = append(shards, b)
			}
			if len(h.Shards) == 2 && h.Shards[0].Offset == h.Shards[1].Offset {
				shards[1] = shards[0]
			}
			var buf bytes.Buffer
			require.NoError(t, WriteTensorbin(&buf, &h, shards))
			file := buf.Bytes()
			require.Zero(t, h.DataOffset%DataAlignment)
			require.Equal(t, h.DataOffset+h.DataSize(), uint64(len(file)))

			got, err := ReadTensorbinHeader(bytes.NewReader(file), int64(len(file)))
			require.NoError(t, err)
			if got.Spec.Memory.ShardSpec != nil && h.Spec.Memory.ShardSpec != nil {
				assert.Equal(t, *h.Spec.Memory.ShardSpec, *got.Spec.Memory.ShardSpec)
			}
			assert.Equal(t, &h, got)
			for i := range h.Shards {
				data := make([]byte, h.Shards[i].Size)
				_, err := ShardSection(bytes.NewReader(file), got, i).ReadAt(data, 0)
				if len(data) > 0 {
					require.NoError(t, err)
				}
				assert.Equal(t, shards[i], data, "shard %d", i)
				assert.Zero(t, h.Shards[i].Offset%DataAlignment)
			}
		})
	}
}

func TestWidthShardedConfig(t *testing.T) {
	t.Parallel()
	m := WidthShardedConfig(5120, 8704)
	assert.Equal(t, WidthSharded, m.Layout)
	assert.Equal(t, DRAM, m.Buffer)
	require.NotNil(t, m.ShardSpec)
	assert.Equal(t, ShardSpec{
		Grid:   []CoreRange{{Start: CoreCoord{0, 0}, End: CoreCoord{7, 0}}},
		ShapeH: 5120, ShapeW: 1088, Orientation: RowMajorOrientation,
	}, *m.ShardSpec)
	assert.Equal(t, uint32(32), WidthShardedConfig(1, 200).ShardSpec.ShapeW)
	// ttnn serializes the nd_shard_spec it derives from the legacy spec.
	require.NotNil(t, m.NdShardSpec)
	assert.Equal(t, NdShardSpec{
		ShardShape:           []uint32{5120, 1088},
		Grid:                 []CoreRange{{Start: CoreCoord{0, 0}, End: CoreCoord{7, 0}}},
		Orientation:          RowMajorOrientation,
		DistributionStrategy: RoundRobin1D,
	}, *m.NdShardSpec)
	assert.False(t, m.CreatedWithNdShardSpec)

	// qkvzab.dramshard of the 27B on 1x2 ([5120, 8240] BFLOAT8_B per
	// device): ttnn 0.81.1 writes a 632-byte header (data at 640).
	spec := NewTensorSpec([]int{5120, 8240}, tile.BFLOAT8_B, tile.TILE, WidthShardedConfig(5120, 8240))
	size := uint64(160 * 258 * tile.BFP8TileBytes)
	h := NewMeshShardedHeader(spec, -1, []uint64{size, size})
	enc, err := EncodeHeader(&h)
	require.NoError(t, err)
	assert.Equal(t, uint64(632), binary.LittleEndian.Uint64(enc))
	got, err := ReadTensorbinHeader(bytes.NewReader(enc), int64(len(enc))+int64(h.DataSize())) // reads the header only
	require.NoError(t, err)
	assert.Equal(t, h.Spec.Memory, got.Spec.Memory)
}

// chunkWriter records writes and can fail after a byte budget.
type chunkWriter struct {
	bytes.Buffer
	failAfter int
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	if w.failAfter >= 0 && w.Len()+len(p) > w.failAfter {
		return 0, errors.New("disk full")
	}
	return w.Buffer.Write(p)
}

func TestWriterStreaming(t *testing.T) {
	t.Parallel()
	spec := NewTensorSpec([]int{32, 32}, tile.BFLOAT8_B, tile.TILE, InterleavedConfig())
	h := NewMeshShardedHeader(spec, -1, []uint64{1000, 1088})
	a, b := bytes.Repeat([]byte{1}, 1000), bytes.Repeat([]byte{2}, 1088)

	var whole bytes.Buffer
	h1 := h
	require.NoError(t, WriteTensorbin(&whole, &h1, [][]byte{a, b}))

	// The same bytes written in odd-sized pieces spanning both shards.
	var pieces chunkWriter
	pieces.failAfter = -1
	h2 := h
	tw, err := NewWriter(&pieces, &h2)
	require.NoError(t, err)
	all := append(append([]byte{}, a...), b...)
	for len(all) > 0 {
		n := min(len(all), 333)
		k, err := tw.Write(all[:n])
		require.NoError(t, err)
		require.Equal(t, n, k)
		all = all[n:]
	}
	require.NoError(t, tw.Close())
	assert.Equal(t, whole.Bytes(), pieces.Bytes())
	off := int(h2.DataOffset)
	assert.Equal(t, make([]byte, 24), pieces.Bytes()[off+1000:off+1024], "gap is zero filled")

	// Too many bytes, too few bytes, and a failing writer.
	h3 := h
	tw, err = NewWriter(&bytes.Buffer{}, &h3)
	require.NoError(t, err)
	_, err = tw.Write(make([]byte, 2089))
	assert.ErrorContains(t, err, "past the last shard")

	tw, err = NewWriter(&bytes.Buffer{}, &h3)
	require.NoError(t, err)
	_, err = tw.Write(make([]byte, 10))
	require.NoError(t, err)
	assert.ErrorContains(t, tw.Close(), "of 2112 data bytes written")

	_, err = NewWriter(&chunkWriter{failAfter: 10}, &h3)
	assert.ErrorContains(t, err, "disk full")
	tw, err = NewWriter(&chunkWriter{failAfter: 500}, &h3)
	require.NoError(t, err)
	_, err = tw.Write(a)
	assert.ErrorContains(t, err, "disk full")

	bad := h
	bad.Shards = []Shard{{Offset: 8, Size: 10, Coord: []uint32{0, 0}}}
	_, err = EncodeHeader(&bad)
	assert.ErrorContains(t, err, "not 64-aligned")
	bad.Shards = []Shard{{Offset: 0, Size: 100}, {Offset: 64, Size: 10}}
	_, err = EncodeHeader(&bad)
	assert.ErrorContains(t, err, "overlap")
	assert.Error(t, WriteTensorbin(&bytes.Buffer{}, &h, [][]byte{a}))
	assert.Error(t, WriteTensorbin(&bytes.Buffer{}, &h, [][]byte{a, a}))
}

// TestReadCorrupt checks that truncated or damaged files give errors naming
// the file and a byte offset, never a panic.
func TestReadCorrupt(t *testing.T) {
	t.Parallel()
	sample, err := os.ReadFile(samplePath(t, sampleCases[1].file))
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "x.tensorbin")

	check := func(t *testing.T, data []byte) {
		t.Helper()
		require.NoError(t, os.WriteFile(path, data, 0o644))
		_, err := ReadTensorbinFile(path)
		require.Error(t, err)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, "reading header of "+path+": "), msg)
		assert.Contains(t, msg, "byte ")
	}
	t.Run("truncated", func(t *testing.T) {
		for _, n := range []int{0, 7, 8, 100, 447, 448, 1000, len(sample) - 1} {
			check(t, sample[:n])
		}
	})
	t.Run("header size", func(t *testing.T) {
		d := bytes.Clone(sample)
		d[0], d[7] = 0xff, 0x7f
		check(t, d)
		d = bytes.Clone(sample)
		d[0], d[1] = 4, 0
		check(t, d)
	})
	t.Run("bad root", func(t *testing.T) {
		d := bytes.Clone(sample)
		d[8], d[9] = 0xf0, 0xff
		check(t, d)
	})
	t.Run("shard past end", func(t *testing.T) {
		// The second shard's size field lives at header byte 216+8.
		d := bytes.Clone(sample)
		d[8+216+8+2] = 0x10
		check(t, d)
	})
	t.Run("every byte flipped", func(t *testing.T) {
		// Flipping any header byte must not panic; it may still parse.
		for i := range 448 {
			d := bytes.Clone(sample)
			d[i] ^= 0xff
			_, _ = ReadTensorbinHeader(bytes.NewReader(d), int64(len(d)))
		}
	})
}

func TestNames(t *testing.T) {
	t.Parallel()
	for d := tile.BFLOAT16; d <= tile.INVALID; d++ {
		p, err := tile.ParseDType(d.String())
		require.NoError(t, err)
		assert.Equal(t, d, p)
	}
	_, err := tile.ParseDType("FP8")
	assert.Error(t, err)
	assert.Equal(t, "DType(42)", tile.DType(42).String())
	for _, l := range []tile.Layout{tile.TILE, tile.ROW_MAJOR} {
		p, err := tile.ParseLayout(l.String())
		require.NoError(t, err)
		assert.Equal(t, l, p)
	}
}

// TestMeshMappedHeader: a 2-D mesh mapper (ShardTensor2dMesh) writes the
// mesh as its distribution shape, one placement per mesh axis and every
// mesh coordinate, and the header parses back to the same fields.
func TestMeshMappedHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		rows, cols int
		pl         [2]Placement
		sizes      []uint64
		offsets    []uint64 // per shard, in coordinate order
	}{
		{"norm_distributed on 1x2: [Replicate, Shard(2)]", 1, 2, [2]Placement{PlacementReplicate, PlacementShard(2)},
			[]uint64{5120, 5120}, []uint64{0, 5120}},
		{"embedding on 1x4: [Replicate, Shard(3)]", 1, 4, [2]Placement{PlacementReplicate, PlacementShard(3)},
			[]uint64{100, 100, 100, 100}, []uint64{0, 128, 256, 384}},
		{"2x2 [Shard(0), Replicate]: rows share a buffer", 2, 2, [2]Placement{PlacementShard(0), PlacementReplicate},
			[]uint64{64, 64}, []uint64{0, 0, 64, 64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := NewTensorSpec([]int{1, 1, 80, 32}, tile.BFLOAT16, tile.ROW_MAJOR, InterleavedConfig())
			h, err := NewMeshMappedHeader(spec, tc.rows, tc.cols, tc.pl, tc.sizes)
			require.NoError(t, err)
			var coords [][]uint32
			for r := 0; r < tc.rows; r++ {
				for c := 0; c < tc.cols; c++ {
					coords = append(coords, []uint32{uint32(r), uint32(c)})
				}
			}
			require.Len(t, h.Shards, len(coords))
			for i, s := range h.Shards {
				assert.Equal(t, coords[i], s.Coord)
				assert.Equal(t, tc.offsets[i], s.Offset, "shard %d", i)
			}
			// Write each distinct buffer once, then parse the file back.
			var buf bytes.Buffer
			w, err := NewWriter(&buf, &h)
			require.NoError(t, err)
			for i, sz := range tc.sizes {
				_, err := w.Write(bytes.Repeat([]byte{byte(i + 1)}, int(sz)))
				require.NoError(t, err)
			}
			require.NoError(t, w.Close())
			got, err := ReadTensorbinHeader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			require.NoError(t, err)
			assert.Equal(t, []uint32{uint32(tc.rows), uint32(tc.cols)}, got.MeshShape)
			require.NotNil(t, got.Topology)
			assert.Equal(t, []uint32{uint32(tc.rows), uint32(tc.cols)}, got.Topology.DistributionShape)
			assert.Equal(t, tc.pl[:], got.Topology.Placements)
			assert.Equal(t, coords, got.Topology.MeshCoords)
			assert.Equal(t, &h, got)
		})
	}
	_, err := NewMeshMappedHeader(NewTensorSpec([]int{32}, tile.BFLOAT16, tile.ROW_MAJOR, InterleavedConfig()), 1, 2,
		[2]Placement{PlacementReplicate, PlacementShard(0)}, []uint64{64})
	assert.ErrorContains(t, err, "2 distinct buffers")
	assert.Equal(t, "Replicate", PlacementReplicate.String())
	assert.Equal(t, "Shard(-1)", PlacementShard(-1).String())
}

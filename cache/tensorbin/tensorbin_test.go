package tensorbin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headerDump mirrors the reconstructed samples' .header.json files.
type headerDump struct {
	HeaderSize uint64 `json:"header_size"`
	DataOffset uint64 `json:"data_offset"`
	TensorSpec struct {
		Shape        []uint32 `json:"shape"`
		DataType     string   `json:"data_type"`
		PageConfig   string   `json:"page_config"`
		Tile         []any    `json:"tile"`
		MemoryConfig struct {
			MemoryLayout           string `json:"memory_layout"`
			BufferType             string `json:"buffer_type"`
			ShardSpec              any    `json:"shard_spec"`
			NdShardSpec            any    `json:"nd_shard_spec"`
			CreatedWithNdShardSpec bool   `json:"created_with_nd_shard_spec"`
		} `json:"memory_config"`
		Alignment []uint32 `json:"alignment"`
	} `json:"tensor_spec"`
	MeshShape []uint32 `json:"mesh_shape"`
	Shards    []struct {
		Offset         uint64   `json:"offset"`
		Size           uint64   `json:"size"`
		MeshCoordinate []uint32 `json:"mesh_coordinate"`
	} `json:"shards"`
	TensorTopology struct {
		DistributionShape []uint32 `json:"distribution_shape"`
		Placements        []struct {
			Type      string `json:"type"`
			TensorDim int32  `json:"tensor_dim"`
		} `json:"placements"`
		MeshCoords [][]uint32 `json:"mesh_coords"`
	} `json:"tensor_topology"`
}

// schemaDTypeNames are the FlatBuffer enum names used by the JSON dumps.
var schemaDTypeNames = map[string]tile.DType{"BFloat16": tile.BFLOAT16, "Float32": tile.FLOAT32, "BFloat8B": tile.BFLOAT8_B, "BFloat4B": tile.BFLOAT4_B}

type sampleCase struct {
	file string
	// build returns the header and shard buffers our writer should produce
	// for the same tensor, from the golden number-format files.
	build func(t *testing.T) (Header, [][]byte)
}

var sampleCases = []sampleCase{
	{
		file: "sample_replicated_dtype_BFLOAT16_layout_TILE.tensorbin",
		build: func(t *testing.T) (Header, [][]byte) {
			data := readGolden(t, "randn_bf16_64x32.tile.bf16")
			spec := NewTensorSpec([]int{64, 32}, tile.BFLOAT16, tile.TILE, InterleavedConfig())
			return NewReplicatedHeader(spec, uint64(len(data))), [][]byte{data}
		},
	},
	{
		file: "sample_shard_dim-1_mesh1x2_dtype_BFLOAT8_B_layout_TILE.tensorbin",
		build: func(t *testing.T) (Header, [][]byte) {
			// ShardTensorToMesh(dim=-1) of the 32x64 matrix: each device
			// gets a [32,32] column block, i.e. one tile.
			in := bytesToF32(readGolden(t, "mixed_32x64.input.f32"))
			var shards [][]byte
			var sizes []uint64
			for d := range 2 {
				buf := make([]byte, tile.TilesBytes(tile.BFLOAT8_B, 32, 32))
				_, err := tile.PackStrip(tile.BFLOAT8_B, buf, in[d*32:], 32, 32, 64)
				require.NoError(t, err)
				shards = append(shards, buf)
				sizes = append(sizes, uint64(len(buf)))
			}
			spec := NewTensorSpec([]int{32, 32}, tile.BFLOAT8_B, tile.TILE, InterleavedConfig())
			return NewMeshShardedHeader(spec, -1, sizes), shards
		},
	},
}

func samplePath(t *testing.T, name string) string {
	return filepath.Join("testdata", "reconstructed", name)
}

func TestReadReconstructedSamples(t *testing.T) {
	t.Parallel()
	for _, c := range sampleCases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			path := samplePath(t, c.file)
			h, err := ReadTensorbinFile(path)
			require.NoError(t, err)

			var d headerDump
			raw, err := os.ReadFile(path + ".header.json")
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &d))

			assert.Equal(t, d.HeaderSize, h.HeaderSize)
			assert.Equal(t, d.DataOffset, h.DataOffset)
			assert.Equal(t, d.TensorSpec.Shape, h.Spec.Shape)
			assert.Equal(t, schemaDTypeNames[d.TensorSpec.DataType], h.Spec.DType)
			assert.Equal(t, map[string]tile.Layout{"tile": tile.TILE, "row_major": tile.ROW_MAJOR}[d.TensorSpec.PageConfig], h.Spec.Layout)
			assert.Equal(t, []any{32.0, 32.0, false}, d.TensorSpec.Tile)
			assert.Equal(t, TileShape{H: 32, W: 32}, h.Spec.Tile)
			mc := d.TensorSpec.MemoryConfig
			assert.Equal(t, mc.MemoryLayout, h.Spec.Memory.Layout.String())
			assert.Equal(t, mc.BufferType, h.Spec.Memory.Buffer.String())
			assert.Nil(t, mc.ShardSpec)
			assert.Nil(t, mc.NdShardSpec)
			assert.Nil(t, h.Spec.Memory.ShardSpec)
			assert.Nil(t, h.Spec.Memory.NdShardSpec)
			assert.Equal(t, mc.CreatedWithNdShardSpec, h.Spec.Memory.CreatedWithNdShardSpec)
			assert.Equal(t, d.TensorSpec.Alignment, h.Spec.Alignment)
			assert.Equal(t, d.MeshShape, h.MeshShape)
			require.Len(t, h.Shards, len(d.Shards))
			for i, s := range d.Shards {
				assert.Equal(t, Shard{Offset: s.Offset, Size: s.Size, Coord: s.MeshCoordinate}, h.Shards[i])
			}
			require.NotNil(t, h.Topology)
			tt := d.TensorTopology
			assert.Equal(t, tt.DistributionShape, h.Topology.DistributionShape)
			require.Len(t, h.Topology.Placements, len(tt.Placements))
			for i, p := range tt.Placements {
				assert.Equal(t, Placement{Shard: p.Type == "Shard", Dim: p.TensorDim}, h.Topology.Placements[i])
			}
			assert.Equal(t, tt.MeshCoords, h.Topology.MeshCoords)
		})
	}
}

func TestWriteMatchesReconstructedSamples(t *testing.T) {
	t.Parallel()
	for _, c := range sampleCases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(samplePath(t, c.file))
			require.NoError(t, err)
			wantH, err := ReadTensorbinHeader(bytes.NewReader(want), int64(len(want)))
			require.NoError(t, err)

			h, shards := c.build(t)
			var buf bytes.Buffer
			require.NoError(t, WriteTensorbin(&buf, &h, shards))
			got := buf.Bytes()

			// (a) our reader sees the same semantics in our file.
			gotH, err := ReadTensorbinHeader(bytes.NewReader(got), int64(len(got)))
			require.NoError(t, err)
			assert.Equal(t, wantH, gotH)

			// (b) the data regions are byte-identical.
			assert.Equal(t, want[wantH.DataOffset:], got[gotH.DataOffset:])

			// (c) the whole file is byte-identical: same builder call order,
			// same field order per table, same vtable de-duplication and the
			// same padding as flatbuffers 2.0.8's C++ builder.
			assert.Equal(t, want, got)
		})
	}
}

// readGolden reads one of the number-format vectors packed by tt-metal's
// host packer, kept beside package tile's golden tests.
func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "mapping", "tile", "testdata", "ttbfp", name))
	require.NoError(t, err)
	return b
}

func bytesToF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

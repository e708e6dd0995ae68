package tensorbin

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// DataAlignment is the alignment, in bytes, of the data region and of every
// shard offset written by the current tt-metal writer (kTensorDataAlignment).
const DataAlignment = 64

// TileShape is the tile shape of a TILE tensor.
type TileShape struct {
	H, W      uint32
	Transpose bool
}

// TensorSpec is the TensorSpec of a .tensorbin header.
type TensorSpec struct {
	// Shape is the logical shape of ONE shard.
	Shape  []uint32
	DType  tile.DType
	Layout tile.Layout
	// Tile is the tile shape (TILE layout only).
	Tile      TileShape
	Memory    MemoryConfig
	Alignment []uint32
}

// NewTensorSpec returns the spec of a shard of logical shape `shape`, with
// the standard 32x32 tile and alignment [32, 32] for TILE. For ROW_MAJOR the
// alignment is [1]; that value is not verified against tt-metal.
func NewTensorSpec(shape []int, dt tile.DType, layout tile.Layout, mem MemoryConfig) TensorSpec {
	s := TensorSpec{DType: dt, Layout: layout, Memory: mem}
	for _, d := range shape {
		s.Shape = append(s.Shape, uint32(d))
	}
	if layout == tile.TILE {
		s.Tile = TileShape{H: tile.TileDim, W: tile.TileDim}
		s.Alignment = []uint32{tile.TileDim, tile.TileDim}
	} else {
		s.Alignment = []uint32{1}
	}
	return s
}

// Placement is how one distribution dimension maps the tensor: Replicate
// (Shard false) or Shard along tensor dimension Dim. tt-metal stores Dim = -1
// for Replicate.
type Placement struct {
	Shard bool
	Dim   int32
}

// Topology is the TensorTopology of a header.
type Topology struct {
	DistributionShape []uint32
	Placements        []Placement
	MeshCoords        [][]uint32
}

// Shard locates one device's buffer: Offset is relative to the start of the
// data region. Several shards may share one buffer (same Offset and Size).
type Shard struct {
	Offset, Size uint64
	Coord        []uint32
}

// Header is the decoded (or to-be-written) metadata of a .tensorbin file.
type Header struct {
	Spec      TensorSpec
	MeshShape []uint32
	Shards    []Shard
	// Topology may be nil in files of older writers; the loader then assumes
	// a fully replicated topology.
	Topology *Topology
	// HeaderSize is the u64 at the start of the file (FlatBuffer plus zero
	// padding) and DataOffset = 8 + HeaderSize. Both are filled by the
	// reader and by EncodeHeader.
	HeaderSize uint64
	DataOffset uint64
}

// alignUp rounds n up to a multiple of DataAlignment.
func alignUp(n uint64) uint64 {
	return (n + DataAlignment - 1) / DataAlignment * DataAlignment
}

// NewReplicatedHeader returns the header of a replicated tensor as
// ttnn.as_tensor caches it: unsharded, one shard of `size` bytes at mesh
// coordinate [0,0] of a 1x1 mesh, with topology distribution [1],
// [Replicate] and coords [[0,0]].
func NewReplicatedHeader(spec TensorSpec, size uint64) Header {
	return Header{
		Spec:      spec,
		MeshShape: []uint32{1, 1},
		Shards:    []Shard{{Offset: 0, Size: size, Coord: []uint32{0, 0}}},
		Topology: &Topology{
			DistributionShape: []uint32{1},
			Placements:        []Placement{{Shard: false, Dim: -1}},
			MeshCoords:        [][]uint32{{0, 0}},
		},
	}
}

// NewMeshShardedHeader returns the header of ShardTensorToMesh(mesh 1xN, dim)
// with one shard of sizes[i] bytes per device: mesh shape [1,N], shards at
// coordinates [0,i] placed at successive 64-aligned offsets, topology
// distribution [N], [Shard(dim)] and the same coordinates. spec.Shape must
// be the per-shard logical shape. dim is stored as given (tt-metal's
// qwen36 code passes -1 for column-parallel weights).
func NewMeshShardedHeader(spec TensorSpec, dim int, sizes []uint64) Header {
	n := len(sizes)
	h := Header{
		Spec:      spec,
		MeshShape: []uint32{1, uint32(n)},
		Topology: &Topology{
			DistributionShape: []uint32{uint32(n)},
			Placements:        []Placement{{Shard: true, Dim: int32(dim)}},
		},
	}
	var off uint64
	for i, sz := range sizes {
		c := []uint32{0, uint32(i)}
		h.Shards = append(h.Shards, Shard{Offset: off, Size: sz, Coord: c})
		h.Topology.MeshCoords = append(h.Topology.MeshCoords, []uint32{0, uint32(i)})
		off = alignUp(off + sz)
	}
	return h
}

// NewMeshMappedHeader returns the header of a 2-D mesh mapper (ttnn
// create_mesh_mapper, e.g. ShardTensor2dMesh(dims=(None, d))) on a
// rows×cols mesh: placements holds one Placement per mesh axis (Replicate
// with Dim -1, or Shard along a tensor dim). Following distributed_tensor.cpp
// (TensorToMesh) and tensor_flatbuffer.cpp: the distribution shape is the
// mesh shape, the mesh coordinates are every coordinate in row-major order,
// and coordinates that differ only along replicated axes share one buffer
// (stored once). sizes holds the size of each distinct buffer, in the
// row-major order of the sharded axes; buffers sit at successive 64-aligned
// offsets. On a 1×N mesh with [Replicate, Shard(d)] that is N shards at
// [0,i], distribution [1, N].
func NewMeshMappedHeader(spec TensorSpec, rows, cols int, placements [2]Placement, sizes []uint64) (Header, error) {
	dims := [2]int{rows, cols}
	want := 1
	for a, p := range placements {
		if dims[a] < 1 {
			return Header{}, fmt.Errorf("mesh %dx%d has an empty axis", rows, cols)
		}
		if p.Shard {
			want *= dims[a]
		}
	}
	if len(sizes) != want {
		return Header{}, fmt.Errorf("mesh %dx%d with placements %v has %d distinct buffers, got %d sizes", rows, cols, placements, want, len(sizes))
	}
	h := Header{
		Spec:      spec,
		MeshShape: []uint32{uint32(rows), uint32(cols)},
		Topology: &Topology{
			DistributionShape: []uint32{uint32(rows), uint32(cols)},
			Placements:        placements[:],
		},
	}
	offs := make([]uint64, len(sizes))
	var off uint64
	for i, sz := range sizes {
		offs[i] = off
		off = alignUp(off + sz)
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			coord := [2]int{r, c}
			buf := 0 // row-major index over the sharded axes
			for a, p := range placements {
				if p.Shard {
					buf = buf*dims[a] + coord[a]
				}
			}
			h.Shards = append(h.Shards, Shard{Offset: offs[buf], Size: sizes[buf], Coord: []uint32{uint32(r), uint32(c)}})
			h.Topology.MeshCoords = append(h.Topology.MeshCoords, []uint32{uint32(r), uint32(c)})
		}
	}
	return h, nil
}

// PlacementReplicate is the placement of a replicated distribution axis
// (ttnn.PlacementReplicate; tt-metal stores Dim -1).
var PlacementReplicate = Placement{Shard: false, Dim: -1}

// PlacementShard is the placement of a distribution axis that splits
// tensor dimension dim (ttnn.PlacementShard).
func PlacementShard(dim int) Placement { return Placement{Shard: true, Dim: int32(dim)} }

// String is "Replicate" or "Shard(d)".
func (p Placement) String() string {
	if p.Shard {
		return fmt.Sprintf("Shard(%d)", p.Dim)
	}
	return "Replicate"
}

// DataSize returns the size of the data region: the end of the furthest
// shard buffer.
func (h *Header) DataSize() uint64 {
	var end uint64
	for _, s := range h.Shards {
		end = max(end, s.Offset+s.Size)
	}
	return end
}

// validate checks that a header can be written.
func (h *Header) validate() error {
	if len(h.MeshShape) == 0 {
		return fmt.Errorf("mesh shape is empty")
	}
	if len(h.Shards) == 0 {
		return fmt.Errorf("no shards")
	}
	switch h.Spec.Layout {
	case tile.TILE, tile.ROW_MAJOR:
	default:
		return fmt.Errorf("unknown layout %v", h.Spec.Layout)
	}
	for i, s := range h.Shards {
		if s.Offset%DataAlignment != 0 {
			return fmt.Errorf("shard %d offset %d is not %d-aligned", i, s.Offset, DataAlignment)
		}
		if s.Offset+s.Size < s.Offset {
			return fmt.Errorf("shard %d overflows", i)
		}
	}
	if _, err := h.regions(); err != nil {
		return err
	}
	return nil
}

// region is a distinct shard buffer of the data region.
type region struct{ off, size uint64 }

// regions returns the distinct shard buffers sorted by offset, and an error
// if two distinct buffers overlap.
func (h *Header) regions() ([]region, error) {
	var rs []region
	for _, s := range h.Shards {
		r := region{s.Offset, s.Size}
		dup := false
		for _, q := range rs {
			if q == r {
				dup = true
				break
			}
		}
		if !dup {
			rs = append(rs, r)
		}
	}
	for i := 1; i < len(rs); i++ { // insertion sort: shard counts are small
		for j := i; j > 0 && rs[j].off < rs[j-1].off; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	for i := 1; i < len(rs); i++ {
		if rs[i].off < rs[i-1].off+rs[i-1].size {
			return nil, fmt.Errorf("shard buffers at offsets %d and %d overlap", rs[i-1].off, rs[i].off)
		}
	}
	return rs, nil
}

// FileSize is the size of the .tensorbin file of h: its data offset plus
// the end of the furthest shard buffer.
func (h *Header) FileSize() int64 { return int64(h.DataOffset + h.DataSize()) }

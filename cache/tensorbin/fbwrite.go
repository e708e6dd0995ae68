package tensorbin

import (
	"github.com/ckpt-dev/ckpt/mapping/tile"
	flatbuffers "github.com/google/flatbuffers/go"
)

// Union type tags of the schema.
const (
	pageConfigRowMajor  = 1 // union PageConfig: RowMajorPageConfig
	pageConfigTile      = 2 // union PageConfig: TilePageConfig
	tensorBufferInline  = 1 // union TensorBuffer: InlineFileStorage
	inlineStorageBytes  = 16
	inlineStorageAlign  = 8
	placementTypeShard  = 1
	maxHeaderFlatbuffer = 16 << 20
)

// encodeFlatbuffer builds the Tensor FlatBuffer of h. The builder calls
// follow tt-metal's to_flatbuffer order (the byte layout tt-metal emits),
// each table's fields are added the way flatc's generated C++ Create*
// functions add them (by decreasing field size, and in reverse declaration
// order within a size), default scalars and null offsets are not stored, and
// tables end with C++ vtable de-duplication (see tables). The result is byte
// for byte what flatbuffers' C++ builder produces for the same calls.
func encodeFlatbuffer(h *Header) []byte {
	b := flatbuffers.NewBuilder(512)
	t := &tables{b: b}

	spec := buildTensorSpec(t, &h.Spec)

	shardOffs := make([]flatbuffers.UOffsetT, len(h.Shards))
	for i, s := range h.Shards {
		coord := buildMeshCoordinate(t, s.Coord)
		b.Prep(inlineStorageAlign, inlineStorageBytes)
		b.PrependUint64(s.Size)
		b.PrependUint64(s.Offset)
		storage := b.Offset()
		t.startTable()          // TensorShard
		t.addOffset(2, coord)   // mesh_coordinate
		t.addOffset(1, storage) // buffer
		t.addU8(0, tensorBufferInline, 0)
		shardOffs[i] = t.endTable()
	}
	shards := offsetVector(t, shardOffs)

	mesh := buildMeshShape(t, h.MeshShape)

	var topo flatbuffers.UOffsetT
	if tp := h.Topology; tp != nil {
		dist := buildMeshShape(t, tp.DistributionShape)
		pl := make([]flatbuffers.UOffsetT, len(tp.Placements))
		for i, p := range tp.Placements {
			t.startTable() // MeshMapperPlacement
			t.addI32(1, p.Dim, 0)
			typ := byte(0)
			if p.Shard {
				typ = placementTypeShard
			}
			t.addU8(0, typ, 0)
			pl[i] = t.endTable()
		}
		plVec := offsetVector(t, pl)
		cs := make([]flatbuffers.UOffsetT, len(tp.MeshCoords))
		for i, c := range tp.MeshCoords {
			cs[i] = buildMeshCoordinate(t, c)
		}
		csVec := offsetVector(t, cs)
		t.startTable() // TensorTopology
		t.addOffset(2, csVec)
		t.addOffset(1, plVec)
		t.addOffset(0, dist)
		topo = t.endTable()
	}

	t.startTable() // Tensor
	t.addOffset(3, topo)
	t.addOffset(2, shards)
	t.addOffset(1, mesh)
	t.addOffset(0, spec)
	b.Finish(t.endTable())
	return b.FinishedBytes()
}

func buildTensorSpec(t *tables, s *TensorSpec) flatbuffers.UOffsetT {
	shape := uint32Vector(t, s.Shape)
	align := uint32Vector(t, s.Alignment)

	var pc flatbuffers.UOffsetT
	pcType := byte(pageConfigRowMajor)
	if s.Layout == tile.TILE {
		pcType = pageConfigTile
		t.startTable() // Tile
		t.addU32(1, s.Tile.W, 0)
		t.addU32(0, s.Tile.H, 0)
		t.addBool(2, s.Tile.Transpose)
		tile := t.endTable()
		t.startTable() // TilePageConfig
		t.addOffset(0, tile)
		pc = t.endTable()
	} else {
		t.startTable() // RowMajorPageConfig
		pc = t.endTable()
	}

	mem := buildMemoryConfig(t, &s.Memory)

	t.startTable() // TensorLayout
	t.addOffset(4, align)
	t.addOffset(3, mem)
	t.addOffset(2, pc)
	t.addU8(1, pcType, 0)
	t.addU8(0, byte(s.DType), 0)
	layout := t.endTable()

	t.startTable() // TensorSpec
	t.addOffset(1, layout)
	t.addOffset(0, shape)
	return t.endTable()
}

func buildMemoryConfig(t *tables, m *MemoryConfig) flatbuffers.UOffsetT {
	var shardSpec, ndSpec flatbuffers.UOffsetT
	if ss := m.ShardSpec; ss != nil {
		grid := buildCoreRangeSet(t, ss.Grid)
		t.startTable() // ShardSpec
		t.addU32(2, ss.ShapeW, 0)
		t.addU32(1, ss.ShapeH, 0)
		t.addOffset(0, grid)
		t.addU8(3, byte(ss.Orientation), 0)
		shardSpec = t.endTable()
	}
	if nd := m.NdShardSpec; nd != nil {
		shape := uint32Vector(t, nd.ShardShape)
		grid := buildCoreRangeSet(t, nd.Grid)
		t.startTable() // NdShardSpec
		t.addOffset(1, grid)
		t.addOffset(0, shape)
		t.addU8(3, nd.DistributionStrategy, 0)
		t.addU8(2, byte(nd.Orientation), 0)
		ndSpec = t.endTable()
	}
	t.startTable() // MemoryConfig
	t.addOffset(3, ndSpec)
	t.addOffset(2, shardSpec)
	t.addU16(1, uint16(m.Buffer), 0)
	t.addU16(0, uint16(m.Layout), 0)
	t.addBool(4, m.CreatedWithNdShardSpec)
	return t.endTable()
}

func buildCoreRangeSet(t *tables, ranges []CoreRange) flatbuffers.UOffsetT {
	offs := make([]flatbuffers.UOffsetT, len(ranges))
	for i, r := range ranges {
		start := buildCoreCoord(t, r.Start)
		end := buildCoreCoord(t, r.End)
		t.startTable() // CoreRange
		t.addOffset(1, end)
		t.addOffset(0, start)
		offs[i] = t.endTable()
	}
	vec := offsetVector(t, offs)
	t.startTable() // CoreRangeSet
	t.addOffset(0, vec)
	return t.endTable()
}

func buildCoreCoord(t *tables, c CoreCoord) flatbuffers.UOffsetT {
	t.startTable() // CoreCoord
	t.addI32(1, c.Y, 0)
	t.addI32(0, c.X, 0)
	return t.endTable()
}

// buildMeshShape builds a MeshShape table (also used for the distribution
// shape of the topology).
func buildMeshShape(t *tables, dims []uint32) flatbuffers.UOffsetT {
	v := uint32Vector(t, dims)
	t.startTable()
	t.addOffset(0, v)
	return t.endTable()
}

func buildMeshCoordinate(t *tables, values []uint32) flatbuffers.UOffsetT {
	v := uint32Vector(t, values)
	t.startTable()
	t.addOffset(0, v)
	return t.endTable()
}

func uint32Vector(t *tables, v []uint32) flatbuffers.UOffsetT {
	b := t.b
	b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		b.PrependUint32(v[i])
	}
	return b.EndVector(len(v))
}

func offsetVector(t *tables, v []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b := t.b
	b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		b.PrependUOffsetT(v[i])
	}
	return b.EndVector(len(v))
}

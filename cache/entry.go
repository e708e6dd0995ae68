package cache

import (
	"fmt"
	"slices"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/cache/tile"
	"github.com/ckpt-dev/ckpt/mapping"
)

// HeaderFor returns the .tensorbin header of the file a plan entry
// produces: the per-device logical shape, dtype, layout and memory config
// of the entry, one shard per device at 64-aligned offsets for a sharded
// target (ShardTensorToMesh along the entry's placement dim), or one
// unsharded shard for a replicated one. The returned header has its
// HeaderSize and DataOffset filled in, so that the file size is
// DataOffset + DataSize().
func HeaderFor(e *mapping.Entry) (*tensorbin.Header, error) {
	dt, err := tile.ParseDType(e.DType)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", e.Target, err)
	}
	layout, err := tile.ParseLayout(e.Layout)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", e.Target, err)
	}
	shape := make([]int, len(e.DeviceShape))
	for i, d := range e.DeviceShape {
		if d < 0 || d > 1<<31 {
			return nil, fmt.Errorf("target %s: bad device shape %v", e.Target, e.DeviceShape)
		}
		shape[i] = int(d)
	}
	var mem tensorbin.MemoryConfig
	switch e.Memory.Kind {
	case "", mapping.DRAMInterleaved:
		mem = tensorbin.DRAMInterleaved()
	case mapping.DRAMWidthSharded:
		if len(shape) != 2 {
			return nil, fmt.Errorf("target %s: DRAM width sharding needs a 2-D shape, got %v", e.Target, e.DeviceShape)
		}
		mem = tensorbin.DRAMWidthSharded(shape[0], shape[1])
	default:
		return nil, fmt.Errorf("target %s: unknown memory config %q", e.Target, e.Memory.Kind)
	}
	size, err := tile.ShardBytes(shape, dt, layout)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", e.Target, err)
	}
	spec := tensorbin.NewTensorSpec(shape, dt, layout, mem)
	var h tensorbin.Header
	switch {
	case e.Placement.Kind == "replicate" || len(e.Shards) == 1 && e.Placement.Kind != "shard":
		h = tensorbin.NewReplicatedHeader(spec, uint64(size))
	case e.Placement.Kind == "shard":
		sizes := make([]uint64, len(e.Shards))
		for i := range sizes {
			sizes[i] = uint64(size)
		}
		h = tensorbin.NewMeshShardedHeader(spec, e.Placement.Dim, sizes)
	default:
		return nil, fmt.Errorf("target %s: unknown placement %q", e.Target, e.Placement.Kind)
	}
	if len(h.Shards) != len(e.Shards) {
		return nil, fmt.Errorf("target %s: %d stored shards in the plan, %d in the header", e.Target, len(e.Shards), len(h.Shards))
	}
	if _, err := tensorbin.EncodeHeader(&h); err != nil {
		return nil, fmt.Errorf("target %s: %w", e.Target, err)
	}
	return &h, nil
}

// DiffHeaders describes the first semantic difference between two headers
// (spec, mesh shape, shards, topology; header sizes and byte layout are
// ignored), or returns "" when they describe the same tensor file.
func DiffHeaders(want, got *tensorbin.Header) string {
	a, b := &want.Spec, &got.Spec
	switch {
	case a.DType != b.DType:
		return fmt.Sprintf("dtype %v, want %v", b.DType, a.DType)
	case a.Layout != b.Layout:
		return fmt.Sprintf("layout %v, want %v", b.Layout, a.Layout)
	case !slices.Equal(a.Shape, b.Shape):
		return fmt.Sprintf("shard shape %v, want %v", b.Shape, a.Shape)
	case a.Tile != b.Tile:
		return fmt.Sprintf("tile %+v, want %+v", b.Tile, a.Tile)
	case !slices.Equal(a.Alignment, b.Alignment):
		return fmt.Sprintf("alignment %v, want %v", b.Alignment, a.Alignment)
	case !equalMemory(a.Memory, b.Memory):
		return fmt.Sprintf("memory config %s, want %s", describeMemory(b.Memory), describeMemory(a.Memory))
	case !slices.Equal(want.MeshShape, got.MeshShape):
		return fmt.Sprintf("mesh shape %v, want %v", got.MeshShape, want.MeshShape)
	case len(want.Shards) != len(got.Shards):
		return fmt.Sprintf("%d shards, want %d", len(got.Shards), len(want.Shards))
	}
	for i := range want.Shards {
		w, g := want.Shards[i], got.Shards[i]
		if w.Offset != g.Offset || w.Size != g.Size || !slices.Equal(w.Coord, g.Coord) {
			return fmt.Sprintf("shard %d at offset %d size %d coord %v, want offset %d size %d coord %v", i, g.Offset, g.Size, g.Coord, w.Offset, w.Size, w.Coord)
		}
	}
	if (want.Topology == nil) != (got.Topology == nil) {
		return "tensor topology presence differs"
	}
	if want.Topology != nil {
		wt, gt := want.Topology, got.Topology
		if !slices.Equal(wt.DistributionShape, gt.DistributionShape) || len(wt.Placements) != len(gt.Placements) || len(wt.MeshCoords) != len(gt.MeshCoords) {
			return fmt.Sprintf("topology %+v, want %+v", *gt, *wt)
		}
		for i := range wt.Placements {
			if wt.Placements[i] != gt.Placements[i] {
				return fmt.Sprintf("placement %d %+v, want %+v", i, gt.Placements[i], wt.Placements[i])
			}
		}
		for i := range wt.MeshCoords {
			if !slices.Equal(wt.MeshCoords[i], gt.MeshCoords[i]) {
				return fmt.Sprintf("topology mesh coord %d %v, want %v", i, gt.MeshCoords[i], wt.MeshCoords[i])
			}
		}
	}
	return ""
}

func equalMemory(a, b tensorbin.MemoryConfig) bool {
	if a.Layout != b.Layout || a.Buffer != b.Buffer || a.CreatedWithNdShardSpec != b.CreatedWithNdShardSpec {
		return false
	}
	if (a.ShardSpec == nil) != (b.ShardSpec == nil) || (a.NdShardSpec == nil) != (b.NdShardSpec == nil) {
		return false
	}
	if a.ShardSpec != nil {
		x, y := a.ShardSpec, b.ShardSpec
		if x.ShapeH != y.ShapeH || x.ShapeW != y.ShapeW || x.Orientation != y.Orientation || !slices.Equal(x.Grid, y.Grid) {
			return false
		}
	}
	if a.NdShardSpec != nil {
		x, y := a.NdShardSpec, b.NdShardSpec
		if !slices.Equal(x.ShardShape, y.ShardShape) || x.Orientation != y.Orientation || x.DistributionStrategy != y.DistributionStrategy || !slices.Equal(x.Grid, y.Grid) {
			return false
		}
	}
	return true
}

func describeMemory(m tensorbin.MemoryConfig) string {
	s := m.Buffer.String() + " " + m.Layout.String()
	if m.ShardSpec != nil {
		s += fmt.Sprintf(" shard [%d, %d]", m.ShardSpec.ShapeH, m.ShardSpec.ShapeW)
	}
	return s
}

package cache

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// HeaderFor returns the .tensorbin header of the file a plan entry
// produces: the per-device logical shape, dtype, layout and memory config
// of the entry, one shard per device at 64-aligned offsets for a sharded
// target (ShardTensorToMesh along the entry's placement dim, or a 2-D mesh
// mapper such as ShardTensor2dMesh when the placement has mesh axes), or
// one unsharded shard for a replicated one. The returned header has its
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
		mem = tensorbin.InterleavedConfig()
	case mapping.DRAMWidthSharded:
		if len(shape) != 2 {
			return nil, fmt.Errorf("target %s: DRAM width sharding needs a 2-D shape, got %v", e.Target, e.DeviceShape)
		}
		mem = tensorbin.WidthShardedConfig(shape[0], shape[1])
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
	case e.Placement.Kind == "shard" && e.Placement.Is2D():
		var pl [2]tensorbin.Placement
		if len(e.Placement.MeshAxes) != 2 {
			return nil, fmt.Errorf("target %s: mesh axes %v: want 2", e.Target, e.Placement.MeshAxes)
		}
		for a, ax := range e.Placement.MeshAxes {
			pl[a] = tensorbin.PlacementReplicate
			if ax == mapping.AxisShard {
				pl[a] = tensorbin.PlacementShard(e.Placement.Dim)
			}
		}
		sizes := make([]uint64, len(e.Shards))
		for i := range sizes {
			sizes[i] = uint64(size)
		}
		if h, err = tensorbin.NewMeshMappedHeader(spec, 1, e.Devices, pl, sizes); err != nil {
			return nil, fmt.Errorf("target %s: %w", e.Target, err)
		}
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
// (spec, mesh shape, shards with their offsets, topology; header sizes and
// byte layout are ignored) as "<field> <got>, want <want>", or returns ""
// when they describe the same tensor file.
func DiffHeaders(want, got *tensorbin.Header) string {
	if d := HeaderDiffs(want, got, true); len(d) > 0 {
		return fmt.Sprintf("%s %s, want %s", d[0].Field, d[0].B, d[0].A)
	}
	return ""
}

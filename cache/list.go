package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// ListEntry describes one .tensorbin file of a cache directory.
//
// Placement and MemoryConfig are in the form of the map JSON (mapping.Document):
// the vocabulary of ckpt's JSON documents. PlacementText and MemoryText
// say the same in words for the table: the file's topology placements
// ("replicate,shard(2)") and its complete memory config, in words.
type ListEntry struct {
	Path          string                    `json:"path"` // relative to the listed directory
	Name          string                    `json:"name"` // the cache name (path without the _dtype_..._layout_....tensorbin suffix)
	DType         string                    `json:"dtype"`
	Layout        string                    `json:"layout"`
	DeviceShape   []uint32                  `json:"device_shape"` // the shape of each stored shard
	Placement     mapping.DocumentPlacement `json:"placement"`
	PlacementText string                    `json:"-"`
	Mesh          []uint32                  `json:"mesh_shape"`
	Shards        int                       `json:"shards"`
	MemoryConfig  mapping.MemoryConfig      `json:"memory_config"`
	MemoryText    string                    `json:"-"`
	Bytes         int64                     `json:"bytes"`
	Error         string                    `json:"error,omitempty"`
}

// List reads the header of every .tensorbin file under dir, in natural
// order of path. A file whose header cannot be read is listed with Error.
func List(dir string) ([]ListEntry, error) {
	files, err := TensorbinFiles(dir)
	if err != nil {
		return nil, err
	}
	var out []ListEntry
	for _, r := range files {
		p := filepath.Join(dir, filepath.FromSlash(r))
		e := ListEntry{Path: r, Name: mapping.CacheName(r)}
		if st, err := os.Stat(p); err == nil {
			e.Bytes = st.Size()
		}
		h, err := tensorbin.ReadTensorbinFile(p)
		if err != nil {
			e.Error = err.Error()
			out = append(out, e)
			continue
		}
		e.DType, e.Layout = h.Spec.DType.String(), h.Spec.Layout.String()
		e.DeviceShape, e.Mesh, e.Shards = h.Spec.Shape, h.MeshShape, len(h.Shards)
		e.Placement, e.PlacementText = placementOf(h), describePlacement(h)
		e.MemoryConfig, e.MemoryText = memoryConfigOf(h.Spec.Memory), describeMemory(h.Spec.Memory)
		out = append(out, e)
	}
	sortEntries(out)
	return out, nil
}

func sortEntries(es []ListEntry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && entryLess(es[j], es[j-1]); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

func entryLess(a, b ListEntry) bool {
	if a.Name != b.Name {
		return ckpt.NaturalLess(a.Name, b.Name)
	}
	return ckpt.NaturalLess(a.Path, b.Path)
}

func describePlacement(h *tensorbin.Header) string {
	if h.Topology == nil {
		return "replicate (no topology)"
	}
	var parts []string
	for _, p := range h.Topology.Placements {
		if p.Shard {
			parts = append(parts, fmt.Sprintf("shard(%d)", p.Dim))
		} else {
			parts = append(parts, "replicate")
		}
	}
	return strings.Join(parts, ",")
}

// placementOf is the placement of a file as the map JSON writes it: kind
// "shard" with the sharded tensor dimension when a topology placement
// shards, "replicate" otherwise; mesh_axes (one per placement) when the
// topology has more than one placement. Devices is the number of devices
// of the file's mesh shape.
func placementOf(h *tensorbin.Header) mapping.DocumentPlacement {
	p := mapping.DocumentPlacement{Kind: mapping.AxisReplicate, Devices: 1}
	for _, d := range h.MeshShape {
		p.Devices *= int(d)
	}
	if h.Topology == nil {
		return p
	}
	for _, tp := range h.Topology.Placements {
		ax := mapping.AxisReplicate
		if tp.Shard {
			ax = mapping.AxisShard
			if p.Dim == nil {
				d := int(tp.Dim)
				p.Kind, p.Dim = mapping.AxisShard, &d
			}
		}
		p.MeshAxes = append(p.MeshAxes, ax)
	}
	if len(p.MeshAxes) < 2 {
		p.MeshAxes = nil
	}
	return p
}

// memoryConfigOf is a file's memory config as the map JSON writes it:
// kind is buffer type and memory layout in snake case ("dram_interleaved",
// "dram_width_sharded", "l1_height_sharded"...), then the shard shape, the
// core grid (start and end of each range) and the orientation of its shard
// spec (the legacy spec, else the N-d one). describeMemory is complete.
func memoryConfigOf(m tensorbin.MemoryConfig) mapping.MemoryConfig {
	mc := mapping.MemoryConfig{Kind: snake(m.Buffer.String()) + "_" + snake(m.Layout.String())}
	var grid []tensorbin.CoreRange
	var o tensorbin.ShardOrientation
	switch {
	case m.ShardSpec != nil:
		mc.ShardShape = []int64{int64(m.ShardSpec.ShapeH), int64(m.ShardSpec.ShapeW)}
		grid, o = m.ShardSpec.Grid, m.ShardSpec.Orientation
	case m.NdShardSpec != nil:
		for _, d := range m.NdShardSpec.ShardShape {
			mc.ShardShape = append(mc.ShardShape, int64(d))
		}
		grid, o = m.NdShardSpec.Grid, m.NdShardSpec.Orientation
	default:
		return mc
	}
	for _, r := range grid {
		mc.Grid = append(mc.Grid, []int{int(r.Start.X), int(r.Start.Y)}, []int{int(r.End.X), int(r.End.Y)})
	}
	mc.Orientation = "ROW_MAJOR"
	if o == tensorbin.ColMajorOrientation {
		mc.Orientation = "COL_MAJOR"
	}
	return mc
}

// snake is a FlatBuffer enum name in snake case: "WidthSharded" is
// "width_sharded", "DRAM" "dram", "L1Small" "l1_small".
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

package cache

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
)

// FieldDiff is one header field that differs between two .tensorbin
// headers: A is the value on the first (reference) side, B on the second.
//
// Field names are stable: dtype, layout, shape (the logical shape of one
// shard), tile, alignment, memory_config, mesh_shape, topology (present or
// absent), topology.distribution_shape, topology.placements,
// topology.mesh_coords, shards (the count), shard[i].size,
// shard[i].coord and, when offsets are compared, shard[i].offset.
type FieldDiff struct {
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}

// HeaderDiffs lists every field in which header b differs from header a.
// Header sizes and the padding between shard buffers are not compared;
// shard offsets only with offsets set (a reader derives every position from
// the file, so writers that pack buffers differently write equivalent
// files).
func HeaderDiffs(a, b *tensorbin.Header, offsets bool) []FieldDiff {
	var out []FieldDiff
	add := func(field, x, y string) {
		if x != y {
			out = append(out, FieldDiff{Field: field, A: x, B: y})
		}
	}
	sa, sb := &a.Spec, &b.Spec
	add("dtype", sa.DType.String(), sb.DType.String())
	add("layout", sa.Layout.String(), sb.Layout.String())
	add("shape", FormatDims(sa.Shape), FormatDims(sb.Shape))
	add("tile", fmtTile(sa), fmtTile(sb))
	add("alignment", FormatDims(sa.Alignment), FormatDims(sb.Alignment))
	add("memory_config", describeMemory(sa.Memory), describeMemory(sb.Memory))
	add("mesh_shape", FormatDims(a.MeshShape), FormatDims(b.MeshShape))
	add("shards", fmt.Sprint(len(a.Shards)), fmt.Sprint(len(b.Shards)))
	for i := range min(len(a.Shards), len(b.Shards)) {
		x, y := a.Shards[i], b.Shards[i]
		add(fmt.Sprintf("shard[%d].size", i), fmt.Sprint(x.Size), fmt.Sprint(y.Size))
		add(fmt.Sprintf("shard[%d].coord", i), FormatDims(x.Coord), FormatDims(y.Coord))
		if offsets {
			add(fmt.Sprintf("shard[%d].offset", i), fmt.Sprint(x.Offset), fmt.Sprint(y.Offset))
		}
	}
	ta, tb := a.Topology, b.Topology
	if (ta == nil) != (tb == nil) {
		add("topology", presence(ta != nil), presence(tb != nil))
		return out
	}
	if ta != nil {
		add("topology.distribution_shape", FormatDims(ta.DistributionShape), FormatDims(tb.DistributionShape))
		add("topology.placements", FormatPlacements(ta.Placements), FormatPlacements(tb.Placements))
		add("topology.mesh_coords", fmtCoords(ta.MeshCoords), fmtCoords(tb.MeshCoords))
	}
	return out
}

func presence(p bool) string {
	if p {
		return "present"
	}
	return "absent"
}

// FormatDims is a shape or mesh coordinate, e.g. "[1, 2]".
func FormatDims(d []uint32) string {
	s := make([]int64, len(d))
	for i, v := range d {
		s[i] = int64(v)
	}
	return ckpt.FormatShape(s)
}

func fmtCoords(cs [][]uint32) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = FormatDims(c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func fmtTile(s *tensorbin.TensorSpec) string {
	if s.Layout.String() != "TILE" {
		return "none"
	}
	t := fmt.Sprintf("%dx%d", s.Tile.H, s.Tile.W)
	if s.Tile.Transpose {
		t += " transposed"
	}
	return t
}

// FormatPlacements is e.g. "[Replicate, Shard(2)]".
func FormatPlacements(ps []tensorbin.Placement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// describeMemory is a memory config in words, complete enough that two
// configs with the same description are equal: buffer type and memory
// layout, then the legacy and N-d shard specs when present.
func describeMemory(m tensorbin.MemoryConfig) string {
	s := m.Buffer.String() + " " + m.Layout.String()
	if ss := m.ShardSpec; ss != nil {
		s += fmt.Sprintf(" shard [%d, %d] grid %s %s", ss.ShapeH, ss.ShapeW, fmtGrid(ss.Grid), orientation(ss.Orientation))
	}
	if nd := m.NdShardSpec; nd != nil {
		s += fmt.Sprintf(" nd_shard %s grid %s %s strategy %d", FormatDims(nd.ShardShape), fmtGrid(nd.Grid), orientation(nd.Orientation), nd.DistributionStrategy)
	}
	if m.CreatedWithNdShardSpec {
		s += " created_with_nd_shard_spec"
	}
	return s
}

func orientation(o tensorbin.ShardOrientation) string {
	if o == tensorbin.ColMajorOrientation {
		return "col-major"
	}
	return "row-major"
}

func fmtGrid(rs []tensorbin.CoreRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("(%d,%d)-(%d,%d)", r.Start.X, r.Start.Y, r.End.X, r.End.Y)
	}
	return strings.Join(parts, "+")
}

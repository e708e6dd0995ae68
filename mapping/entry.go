package mapping

import (
	"fmt"
	"path"
	"slices"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// resolvedPart is a Part with its expressions evaluated.
type resolvedPart struct {
	Part
	offset, units, unitRows, stride int64
}

// entry resolves one binding of a rule; it records problems and returns
// nil when the target cannot be produced.
func (b *builder) entry(r *Rule, bind binding, srcs []*ckpt.Tensor) *Entry {
	target, _ := b.target(r, bind) // run checked it
	fail := func(kind ckpt.FindingID, format string, args ...any) *Entry {
		b.problem(kind, r.ID, target, fmt.Sprintf("target %s: ", target)+fmt.Sprintf(format, args...), b.sourceNames(srcs)...)
		return nil
	}
	vars := b.vars
	for _, a := range r.Assert {
		ok, err := evalAssert(a, vars)
		if err != nil {
			return fail(ProblemConfig, "rule %s: %v", r.ID, err)
		}
		if !ok {
			return fail(ProblemConfig, "rule %s assumes %s, which this config does not satisfy", r.ID, a)
		}
	}
	e := &Entry{Rule: r.ID, Target: target, Steps: r.Transform, Placement: r.Placement, Devices: int(b.n),
		DType: r.DType, Layout: r.Layout}
	e.File = path.Join(b.plan.CacheDir, FileName(target, r.DType, r.Layout))
	rows := make([]int64, len(srcs))
	cols := make([]int64, len(srcs))
	for i, t := range srcs {
		s := Source{Name: t.Name, Tensor: t}
		// A quantised weight is its codes plus its scale: one without a
		// scale ckpt can apply is not mapped (ProblemScale); the layouts
		// take block FP8 only (ckpt.BlockScale refuses other schemes).
		scale, _, _, err := b.c.BlockScale(t)
		if err != nil {
			names := b.sourceNames([]*ckpt.Tensor{t})
			for _, o := range b.sourceNames(srcs) {
				if !slices.Contains(names, o) {
					names = append(names, o)
				}
			}
			b.problem(ProblemScale, r.ID, target, fmt.Sprintf("target %s: %v", target, err), names...)
			return nil
		}
		s.Scale = scale
		e.Sources = append(e.Sources, s)
		rows[i], cols[i] = ckpt.Matrix(t.Shape)
	}
	ch, err := planSteps(r.Transform, vars, rows)
	if err != nil {
		return fail(ProblemConfig, "%v", err)
	}
	e.Values, e.Transpose = ch.values, ch.transpose
	parts, colStart, colCount, reshape, interleave := ch.parts, ch.colStart, ch.colCount, ch.reshape, ch.interleave
	if parts == nil {
		for i := range srcs {
			parts = append(parts, resolvedPart{Part: Part{Source: i, Label: "rows of " + srcs[i].Name}, units: rows[i], unitRows: 1, stride: 1})
		}
	}
	// Columns: every part must contribute the same number of columns.
	var C int64 = -1
	for i := range srcs {
		c := cols[i]
		if colCount >= 0 {
			if colStart < 0 || colStart+colCount > cols[i] {
				return fail(ProblemShape, "columns [%d, %d) are outside %s of shape %v", colStart, colStart+colCount, srcs[i].Name, srcs[i].Shape)
			}
			c = colCount
		}
		if C >= 0 && c != C {
			return fail(ProblemShape, "cannot stack %s (%d columns) with sources of %d columns", srcs[i].Name, c, C)
		}
		C = c
	}
	if colCount < 0 {
		colStart = 0
	}
	// Rows: bounds and coverage of each source.
	covered := make([]int64, len(srcs))
	for _, p := range parts {
		if p.units < 0 || p.unitRows < 0 || p.stride < 0 || p.offset < 0 {
			return fail(ProblemConfig, "part %s has negative extents", p.Label)
		}
		if p.units > 0 && p.offset+(p.units-1)*p.stride+p.unitRows > rows[p.Source] {
			return fail(ProblemShape, "part %s (%d units of %d rows from row %d, stride %d) overruns %s of shape %v",
				p.Label, p.units, p.unitRows, p.offset, p.stride, srcs[p.Source].Name, srcs[p.Source].Shape)
		}
		covered[p.Source] += p.units * p.unitRows
	}
	for i := range srcs {
		if covered[i] != rows[i] {
			return fail(ProblemShape, "the parts take %d rows of %s, which has %d (shape %v): the checkpoint and the config disagree",
				covered[i], srcs[i].Name, rows[i], srcs[i].Shape)
		}
	}
	var fullRows int64
	for _, p := range parts {
		fullRows += p.units * p.unitRows
	}
	shards := 1
	switch {
	case r.Placement.Kind == "replicate":
	case r.Placement.Split == "rows":
		shards = int(b.n)
		for _, p := range parts {
			if p.units%b.n != 0 {
				expr := p.Units
				if expr == "" {
					expr = "rows"
				}
				return fail(ProblemIndivisible, "%s has %d units (%s) along the sharded dimension, which do not divide by the %d devices of mesh %s",
					p.Label, p.units, expr, b.n, b.mesh)
			}
		}
	default:
		shards = int(b.n)
		if C%b.n != 0 {
			return fail(ProblemIndivisible, "%d columns of %s along the sharded dimension do not divide by the %d devices of mesh %s", C, srcs[0].Name, b.n, b.mesh)
		}
	}
	if interleave {
		for _, p := range parts[1:] {
			if p.units != parts[0].units || p.unitRows != parts[0].unitRows {
				return fail(ProblemConfig, "interleaved parts %s and %s differ in units", parts[0].Label, p.Label)
			}
		}
	}
	splitRows := r.Placement.Kind == "shard" && r.Placement.Split == "rows"
	for d := 0; d < shards; d++ {
		c0, cn := colStart, C
		if r.Placement.Kind == "shard" && r.Placement.Split == "cols" {
			cn = C / b.n
			c0 = colStart + int64(d)*cn
		}
		var ps []Piece
		add := func(p resolvedPart, u int64) {
			ps = appendPiece(ps, Piece{Source: p.Source, Row: p.offset + u*p.stride, Rows: p.unitRows, Col: c0, Cols: cn})
		}
		if interleave {
			per := parts[0].units
			u0 := int64(0)
			if splitRows {
				per /= b.n
				u0 = int64(d) * per
			}
			for u := u0; u < u0+per; u++ {
				for _, p := range parts {
					add(p, u)
				}
			}
		} else {
			for _, p := range parts {
				per, u0 := p.units, int64(0)
				if splitRows {
					per /= b.n
					u0 = int64(d) * per
				}
				for u := u0; u < u0+per; u++ {
					add(p, u)
				}
			}
		}
		e.Shards = append(e.Shards, ps)
		if d == 0 {
			e.MatrixCols = cn
			for _, p := range ps {
				e.MatrixRows += p.Rows
			}
		}
	}
	fr, fc := fullRows, C
	dr, dc := e.MatrixRows, e.MatrixCols
	if e.Transpose {
		fr, fc, dr, dc = fc, fr, dc, dr
	}
	switch {
	case reshape != nil:
		if e.Shape, err = evalShape(reshape, vars, fr, fc); err != nil {
			return fail(ProblemConfig, "reshape: %v", err)
		}
		if e.DeviceShape, err = evalShape(reshape, vars, dr, dc); err != nil {
			return fail(ProblemConfig, "reshape of the per-device block [%d, %d]: %v", dr, dc, err)
		}
	case !ch.layout && len(srcs) == 1 && r.Placement.Kind == "replicate":
		e.Shape = append([]int64(nil), srcs[0].Shape...)
		e.DeviceShape = append([]int64(nil), srcs[0].Shape...)
	default:
		e.Shape, e.DeviceShape = []int64{fr, fc}, []int64{dr, dc}
	}
	if r.Placement.Is2D() && r.Placement.MeshAxes[0] == AxisShard {
		return fail(ProblemConfig, "rule %s shards mesh axis 0 (rows), which has one device on mesh %s; shard the columns axis", r.ID, b.mesh)
	}
	if r.Placement.Kind == "shard" {
		dim := r.Placement.Dim
		if dim < 0 {
			dim += len(e.Shape)
		}
		ok := dim >= 0 && dim < len(e.Shape) && len(e.Shape) == len(e.DeviceShape)
		for i := 0; ok && i < len(e.Shape); i++ {
			want := e.Shape[i]
			if i == dim {
				want /= b.n
				ok = e.Shape[i]%b.n == 0
			}
			ok = ok && e.DeviceShape[i] == want
		}
		if !ok {
			return fail(ProblemConfig, "rule %s: splitting %s of the source does not shard dimension %d of %v into %v; fix the rule's placement or reshape",
				r.ID, r.Placement.Split, r.Placement.Dim, e.Shape, e.DeviceShape)
		}
	} else {
		e.DeviceShape = append([]int64(nil), e.Shape...)
	}
	e.Memory = MemoryConfig{Kind: r.Memory}
	if r.Memory == DRAMWidthSharded {
		if len(e.DeviceShape) != 2 {
			return fail(ProblemConfig, "DRAM width sharding needs a 2-D [k, n] tensor, got %v", e.DeviceShape)
		}
		k, n := e.DeviceShape[0], e.DeviceShape[1]
		const banks, tile = 8, 32
		if r.Layout == Tile && k%tile != 0 {
			// ttnn refuses it: the physical shard [k, w] must be whole
			// tiles (tensor_layout.cpp, "must be tile {32, 32} sized").
			return fail(ProblemConfig, "DRAM width sharding of a TILE tensor needs a per-device height that is a multiple of 32 (ttnn refuses shard shape "+
				"[%d, ...]), got %v", k, e.DeviceShape)
		}
		padded := (n + tile*banks - 1) / (tile * banks) * (tile * banks)
		e.Memory.ShardShape = []int64{k, padded / banks}
		e.Memory.Grid = [][]int{{0, 0}, {banks - 1, 0}}
		e.Memory.Orientation = "ROW_MAJOR"
	}
	if r.Layout == Tile {
		ds := e.DeviceShape
		if len(ds) >= 1 && ds[len(ds)-1]%32 != 0 {
			e.Warnings = append(e.Warnings, fmt.Sprintf("per-device width %d is not a multiple of 32 (TILE pads it)", ds[len(ds)-1]))
		}
		if len(ds) >= 2 && ds[len(ds)-2] > 1 && ds[len(ds)-2]%32 != 0 {
			e.Warnings = append(e.Warnings, fmt.Sprintf("per-device height %d is not a multiple of 32 (TILE pads it)", ds[len(ds)-2]))
		}
	}
	return e
}

func resolvePart(p Part, srcRows int64, vars Vars) (resolvedPart, error) {
	rp := resolvedPart{Part: p, unitRows: 1}
	var err error
	ev := func(expr string, dst *int64) {
		if err == nil && expr != "" {
			*dst, err = Eval(expr, vars)
		}
	}
	ev(p.Offset, &rp.offset)
	ev(p.UnitRows, &rp.unitRows)
	if err != nil {
		return rp, err
	}
	if rp.unitRows <= 0 {
		return rp, fmt.Errorf("unit_rows must be positive, got %d", rp.unitRows)
	}
	if p.Units == "" {
		if (srcRows-rp.offset)%rp.unitRows != 0 {
			return rp, fmt.Errorf("%d rows from %d are not whole units of %d", srcRows, rp.offset, rp.unitRows)
		}
		rp.units = (srcRows - rp.offset) / rp.unitRows
	}
	ev(p.Units, &rp.units)
	rp.stride = rp.unitRows
	ev(p.Stride, &rp.stride)
	return rp, err
}

// appendPiece appends p, merging it into the last piece when it continues it.
func appendPiece(ps []Piece, p Piece) []Piece {
	if n := len(ps); n > 0 {
		l := &ps[n-1]
		if l.Source == p.Source && l.Col == p.Col && l.Cols == p.Cols && l.Row+l.Rows == p.Row {
			l.Rows += p.Rows
			return ps
		}
	}
	return append(ps, p)
}

func evalShape(exprs []string, base Vars, rows, cols int64) ([]int64, error) {
	vars := Vars{}
	for k, v := range base {
		vars[k] = v
	}
	vars["rows"], vars["cols"] = rows, cols
	out := make([]int64, len(exprs))
	var prod int64 = 1
	for i, e := range exprs {
		v, err := Eval(e, vars)
		if err != nil {
			return nil, err
		}
		out[i] = v
		prod *= v
	}
	if prod != rows*cols {
		return nil, fmt.Errorf("shape %v holds %d values, the block [%d, %d] has %d", out, prod, rows, cols, rows*cols)
	}
	return out, nil
}

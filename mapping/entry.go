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
	offset, units, unitRows, stride, pad int64
}

// entry resolves one binding of a rule; it records problems and returns
// nil when the target cannot be produced.
//
// With a Stack, srcs holds stackN tensors per source template (source j of
// index x at x*len(Sources)+j) and the transform reads template j as one
// source: the rows of its stackN tensors one after the other.
//
// The steps (entryBuild's methods) run in order: sources, the transform
// (planSteps), checkRows, blockColumns, countShards, cutShards, shape and
// memory; the first that fails records the problem and ends the entry.
func (b *builder) entry(r *Rule, bind binding, srcs []*ckpt.Tensor, stackN int64) *Entry {
	target, _ := b.target(r, bind) // run checked it
	x := &entryBuild{b: b, r: r, srcs: srcs, stackN: stackN, target: target}
	vars := b.vars
	for _, a := range r.Assert {
		ok, err := evalAssert(a, vars)
		if err != nil {
			return x.fail(ProblemConfig, "rule %s: %v", r.ID, err)
		}
		if !ok {
			return x.fail(ProblemConfig, "rule %s assumes %s, which this config does not satisfy", r.ID, a)
		}
	}
	x.e = &Entry{Rule: r.ID, Target: target, Steps: r.Transform, Placement: r.Placement, Devices: int(b.n),
		DType: r.DType, Layout: r.Layout, Flat: r.Flat}
	x.e.File = path.Join(b.plan.CacheDir, FileName(target, r.DType, r.Layout))
	if !x.sources() {
		return nil
	}
	if stackN > 0 {
		for j := range x.rows {
			x.rows[j] *= stackN
		}
	}
	ch, err := planSteps(r.Transform, vars, x.rows)
	if err != nil {
		return x.fail(ProblemConfig, "%v", err)
	}
	x.ch = ch
	x.e.Values, x.e.Transpose = ch.values, ch.transpose
	x.parts, x.colStart, x.colCount = ch.parts, ch.colStart, ch.colCount
	if x.parts == nil {
		for i := range x.rows {
			x.parts = append(x.parts, resolvedPart{Part: Part{Source: i, Label: "rows of " + x.view(i).Name}, units: x.rows[i], unitRows: 1, stride: 1})
		}
	}
	x.splitRows = r.Placement.Kind == "shard" && r.Placement.Split == "rows"
	for _, step := range []func() bool{x.checkRows, x.blockColumns, x.countShards, x.cutShards, x.shape, x.memory} {
		if !step() {
			return nil
		}
	}
	return x.e
}

// entryBuild is one entry in the making: what the steps of entry share.
type entryBuild struct {
	b      *builder
	r      *Rule
	srcs   []*ckpt.Tensor
	stackN int64
	target string
	e      *Entry
	// J is the number of sources the transform reads (the templates of a
	// stacked rule); rows and cols are each one's matrix.
	J          int
	rows, cols []int64
	ch         *chain
	parts      []resolvedPart
	// colStart and colCount are the source columns taken (colCount < 0
	// from the transform: every column, colStart then 0); C is the
	// number of columns every part contributes.
	colStart, colCount, C int64
	splitRows             bool
	// padRows: the transform pads the block's rows, to fullRows; fullCols
	// are the block's columns, csegs where they come from.
	padRows            bool
	fullRows, fullCols int64
	csegs              []seg
	shards             int
}

// fail records the problem of the entry's target (naming its sources)
// and returns nil.
func (x *entryBuild) fail(kind ckpt.FindingID, format string, args ...any) *Entry {
	x.b.problem(kind, x.r.ID, x.target, fmt.Sprintf("target %s: ", x.target)+fmt.Sprintf(format, args...), x.b.sourceNames(x.srcs)...)
	return nil
}

// failed is fail for the steps, which report false.
func (x *entryBuild) failed(kind ckpt.FindingID, format string, args ...any) bool {
	x.fail(kind, format, args...)
	return false
}

// view names source j as the transform sees it (a stacked template by its
// first tensor).
func (x *entryBuild) view(j int) *ckpt.Tensor { return x.srcs[j] }

// replicated reports whether part p gives each device one whole unit
// (Part.Replicate with fewer units than devices).
func (x *entryBuild) replicated(p resolvedPart) bool {
	return p.Replicate && x.splitRows && p.units < x.b.n
}

// sources adds the entry's sources with their block scales and sets the
// matrix of each (rows, cols); a stacked rule's tensors of one template
// must agree in shape.
func (x *entryBuild) sources() bool {
	b, r, srcs, target, e := x.b, x.r, x.srcs, x.target, x.e
	J := len(srcs)
	if x.stackN > 0 {
		J = len(r.Sources)
	}
	rows := make([]int64, J)
	cols := make([]int64, J)
	x.J, x.rows, x.cols = J, rows, cols
	for i, t := range srcs {
		s := Source{Name: t.Name, Tensor: t}
		// A quantised weight is its codes plus its scale: one without a
		// scale ckpt can apply is not mapped (ProblemScale); the layouts
		// take block FP8 only (ckpt.BlockScale refuses other schemes).
		scale, _, _, err := b.c.BlockScale(t, b.words)
		if err != nil {
			names := b.sourceNames([]*ckpt.Tensor{t})
			for _, o := range b.sourceNames(srcs) {
				if !slices.Contains(names, o) {
					names = append(names, o)
				}
			}
			b.problem(ProblemScale, r.ID, target, fmt.Sprintf("target %s: %v", target, err), names...)
			return false
		}
		s.Scale = scale
		e.Sources = append(e.Sources, s)
		tr, tc := ckpt.StackedMatrix(t.Shape)
		if r.Flat {
			tr, tc = ckpt.Matrix(t.Shape)
		}
		j := i % J
		if i < J {
			rows[j], cols[j] = tr, tc
		} else if first := srcs[j]; !slices.Equal(first.Shape, t.Shape) {
			return x.failed(ProblemShape, "cannot stack %s of shape %v with %s of shape %v", t.Name, t.Shape, first.Name, first.Shape)
		}
	}
	return true
}

// checkRows checks the columns every part contributes (C), the bounds
// and coverage of each source's rows and the padding and reordering
// inside units, and sets the rows of the block (fullRows, padRows).
func (x *entryBuild) checkRows() bool {
	b, ch, parts, rows, cols, colStart, colCount, stackN, view := x.b, x.ch, x.parts, x.rows, x.cols, x.colStart, x.colCount, x.stackN, x.view
	fail := x.failed
	// Columns: every part must contribute the same number of columns.
	var C int64 = -1
	for i := range rows {
		c := cols[i]
		if colCount >= 0 {
			if colStart < 0 || colStart+colCount > cols[i] {
				return fail(ProblemShape, "columns [%d, %d) are outside %s of shape %v", colStart, colStart+colCount, view(i).Name, view(i).Shape)
			}
			c = colCount
		}
		if C >= 0 && c != C {
			return fail(ProblemShape, "cannot stack %s (%d columns) with sources of %d columns", view(i).Name, c, C)
		}
		C = c
	}
	if colCount < 0 {
		x.colStart = 0
	}
	x.C = C
	// Rows: bounds and coverage of each source.
	covered := make([]int64, len(x.srcs))
	for _, p := range parts {
		if p.units < 0 || p.unitRows < 0 || p.stride < 0 || p.offset < 0 {
			return fail(ProblemConfig, "part %s has negative extents", p.Label)
		}
		if p.units > 0 && p.offset+(p.units-1)*p.stride+p.unitRows > rows[p.Source] {
			return fail(ProblemShape, "part %s (%d units of %d rows from row %d, stride %d) overruns %s of %d rows (shape %v%s)",
				p.Label, p.units, p.unitRows, p.offset, p.stride, view(p.Source).Name, rows[p.Source], view(p.Source).Shape, stackedOf(stackN))
		}
		covered[p.Source] += p.units * p.unitRows
	}
	for i := range rows {
		if covered[i] != rows[i] && !strided(parts, i, rows[i]) {
			return fail(ProblemShape, "the parts take %d rows of %s, which has %d (shape %v%s): the checkpoint and the config disagree",
				covered[i], view(i).Name, rows[i], view(i).Shape, stackedOf(stackN))
		}
	}
	// Padding and reordering inside units.
	for _, p := range parts {
		if p.pad < 0 {
			return fail(ProblemConfig, "part %s pads its units with %d rows", p.Label, p.pad)
		}
		if p.Order == OrderInterleaveHalves && p.unitRows%2 != 0 {
			return fail(ProblemConfig, "part %s interleaves the halves of units of %d rows, an odd number", p.Label, p.unitRows)
		}
	}
	var fullRows int64
	anyReplicated := false
	for _, p := range parts {
		if x.replicated(p) {
			fullRows += b.n * (p.unitRows + p.pad)
			anyReplicated = true
			continue
		}
		fullRows += p.units * (p.unitRows + p.pad)
	}
	padRows := ch.padRows > 0
	if padRows && anyReplicated {
		return fail(ProblemConfig, "pad cannot follow parts that replicate units")
	}
	if padRows {
		if ch.padRows < fullRows {
			return fail(ProblemConfig, "pad to %d rows: the block has %d already", ch.padRows, fullRows)
		}
		fullRows = ch.padRows
	}
	x.padRows, x.fullRows = padRows, fullRows
	return true
}

// blockColumns sets the columns of the block (csegs, fullCols): the
// source window in units, each followed by its zero columns, the whole
// repeated, then padded.
func (x *entryBuild) blockColumns() bool {
	ch, C, colStart, colCount := x.ch, x.C, x.colStart, x.colCount
	var csegs []seg
	unit, cpad := C, int64(0)
	if colCount >= 0 {
		unit, cpad = ch.colUnit, ch.colPad
		if unit <= 0 {
			unit = C
		}
	}
	for rep := int64(0); rep < max(ch.colRepeat, 1); rep++ {
		for c := int64(0); unit > 0 && c < C; c += unit {
			csegs = append(csegs, seg{at: colStart + c, n: unit})
			if cpad > 0 {
				csegs = append(csegs, seg{zero: true, n: cpad})
			}
		}
	}
	if len(csegs) == 0 {
		csegs = []seg{{at: colStart}} // no columns: pieces of none
	}
	fullCols := segsLen(csegs)
	if ch.padCols > fullCols || ch.padCols > 0 && ch.padCols < fullCols {
		if ch.padCols < fullCols {
			return x.failed(ProblemConfig, "pad to %d columns: the block has %d already", ch.padCols, fullCols)
		}
		csegs = appendSeg(csegs, seg{zero: true, n: ch.padCols - fullCols})
		fullCols = ch.padCols
	}
	x.csegs, x.fullCols = csegs, fullCols
	return true
}

// countShards sets the number of shards (one per device unless
// replicated) once the sharded dimension divides by the devices, and
// checks that interleaved parts agree.
func (x *entryBuild) countShards() bool {
	b, r, parts, fullRows, fullCols, padRows := x.b, x.r, x.parts, x.fullRows, x.fullCols, x.padRows
	fail := x.failed
	shards := 1
	switch {
	case r.Placement.Kind == "replicate":
	case r.Placement.Split == "rows" && padRows:
		shards = int(b.n)
		if fullRows%b.n != 0 {
			return fail(ProblemIndivisible, "%d rows of the padded block along the sharded dimension do not divide by the %d devices of mesh %s", fullRows, b.n, b.mesh)
		}
	case r.Placement.Split == "rows":
		shards = int(b.n)
		for _, p := range parts {
			if p.units%b.n != 0 && !x.replicated(p) {
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
		if fullCols%b.n != 0 {
			return fail(ProblemIndivisible, "%d columns of %s along the sharded dimension do not divide by the %d devices of mesh %s",
				fullCols, x.srcs[0].Name, b.n, b.mesh)
		}
	}
	x.shards = shards
	if x.ch.interleave {
		for _, p := range parts {
			if x.replicated(p) {
				return fail(ProblemConfig, "part %s replicates units and cannot be interleaved", p.Label)
			}
		}
		for _, p := range parts[1:] {
			if p.units != parts[0].units || p.unitRows != parts[0].unitRows || p.pad != parts[0].pad {
				return fail(ProblemConfig, "interleaved parts %s and %s differ in units", parts[0].Label, p.Label)
			}
		}
	}
	return true
}

// rowSegs lists the block rows of units [u0, u0+per) of every part (of
// every part's own range when each part is split), for device d.
func (x *entryBuild) rowSegs(split bool, d int64) []seg {
	b, parts := x.b, x.parts
	var out []seg
	add := func(p resolvedPart, u int64) {
		r0 := p.offset + u*p.stride
		if p.Order == OrderInterleaveHalves {
			h := p.unitRows / 2
			for i := int64(0); i < h; i++ {
				out = appendSeg(out, seg{src: p.Source, at: r0 + i, n: 1})
				out = appendSeg(out, seg{src: p.Source, at: r0 + h + i, n: 1})
			}
		} else {
			out = appendSeg(out, seg{src: p.Source, at: r0, n: p.unitRows})
		}
		if p.pad > 0 {
			out = appendSeg(out, seg{zero: true, n: p.pad})
		}
	}
	if x.ch.interleave {
		per, u0 := parts[0].units, int64(0)
		if split {
			per /= b.n
			u0 = d * per
		}
		for u := u0; u < u0+per; u++ {
			for _, p := range parts {
				add(p, u)
			}
		}
		return out
	}
	for _, p := range parts {
		per, u0 := p.units, int64(0)
		switch {
		case split && x.replicated(p):
			per, u0 = 1, d*p.units/b.n
		case split:
			per /= b.n
			u0 = d * per
		}
		for u := u0; u < u0+per; u++ {
			add(p, u)
		}
	}
	return out
}

// cutShards cuts the block into the pieces of each shard (Entry.Shards)
// and sets the per-device matrix (MatrixRows, MatrixCols).
func (x *entryBuild) cutShards() bool {
	b, r, e, fullRows, fullCols, csegs, splitRows, padRows := x.b, x.r, x.e, x.fullRows, x.fullCols, x.csegs, x.splitRows, x.padRows
	splitCols := r.Placement.Kind == "shard" && r.Placement.Split == "cols"
	var whole []seg
	if padRows {
		whole = x.rowSegs(false, 0)
		if pad := fullRows - segsLen(whole); pad > 0 {
			whole = appendSeg(whole, seg{zero: true, n: pad})
		}
	}
	for d := 0; d < x.shards; d++ {
		var rs []seg
		switch {
		case padRows && splitRows:
			per := fullRows / b.n
			rs = cutSegs(whole, int64(d)*per, per)
		case padRows:
			rs = whole
		default:
			rs = x.rowSegs(splitRows, int64(d))
		}
		cs := csegs
		if splitCols {
			per := fullCols / b.n
			cs = cutSegs(csegs, int64(d)*per, per)
		}
		ps := crossSegs(rs, cs)
		e.Shards = append(e.Shards, ps)
		if d == 0 {
			e.MatrixCols = segsLen(cs)
			e.MatrixRows = segsLen(rs)
		}
	}
	return true
}

// shape sets the entry's shape and per-device shape (transposed,
// batched, reshaped) and checks that the placement shards the dimension
// it names.
func (x *entryBuild) shape() bool {
	b, r, e, srcs, ch, vars, fullRows, fullCols, C := x.b, x.r, x.e, x.srcs, x.ch, x.b.vars, x.fullRows, x.fullCols, x.C
	fail := x.failed
	reshape := ch.reshape
	var err error
	fr, fc := fullRows, fullCols
	dr, dc := e.MatrixRows, e.MatrixCols
	if e.Transpose {
		fr, fc, dr, dc = fc, fr, dc, dr
	}
	if r.Batch != "" {
		br, err := evalExpr(r.Batch, vars)
		if err != nil {
			return fail(ProblemConfig, "batch %s: %v", r.Batch, err)
		}
		if br <= 0 || e.MatrixRows%br != 0 || fullRows%br != 0 {
			return fail(ProblemShape, "batch %s = %d does not divide the %d rows of the per-device block (%d in all)", r.Batch, br, e.MatrixRows, fullRows)
		}
		e.BatchRows = br
		// The transposed runs stacked: (rows / batch · cols) × batch.
		fr, fc = fullRows/br*C, br
		dr, dc = e.MatrixRows/br*e.MatrixCols, br
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
	return true
}

// memory sets the entry's memory config (DRAM width sharding: its shard
// shape and grid), un-stacks the shards of a stacked rule and warns of
// TILE padding.
func (x *entryBuild) memory() bool {
	r, e := x.r, x.e
	e.Memory = MemoryConfig{Kind: r.Memory}
	if r.Memory == DRAMWidthSharded {
		if len(e.DeviceShape) != 2 {
			return x.failed(ProblemConfig, "DRAM width sharding needs a 2-D [k, n] tensor, got %v", e.DeviceShape)
		}
		k, n := e.DeviceShape[0], e.DeviceShape[1]
		const banks, tile = 8, 32
		if r.Layout == Tile && k%tile != 0 {
			// ttnn refuses it: the physical shard [k, w] must be whole
			// tiles (tensor_layout.cpp, "must be tile {32, 32} sized").
			return x.failed(ProblemConfig, "DRAM width sharding of a TILE tensor needs a per-device height that is a multiple of 32 (ttnn refuses shard shape "+
				"[%d, ...]), got %v", k, e.DeviceShape)
		}
		padded := (n + tile*banks - 1) / (tile * banks) * (tile * banks)
		e.Memory.ShardShape = []int64{k, padded / banks}
		e.Memory.Grid = [][]int{{0, 0}, {banks - 1, 0}}
		e.Memory.Orientation = "ROW_MAJOR"
	}
	if x.stackN > 0 {
		e.Shards = unstack(e.Shards, x.rows, x.stackN, x.J)
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
	return true
}

// strided reports whether the parts of source i are strided runs that
// each span the whole source (units·stride rows, stride > unit rows): a
// part of each stride, the rest of which another rule reads (the gate
// and the up rows of fused experts [E, 2I, H]).
func strided(parts []resolvedPart, i int, rows int64) bool {
	n := 0
	for _, p := range parts {
		if p.Source != i {
			continue
		}
		if p.stride <= p.unitRows || p.units*p.stride != rows {
			return false
		}
		n++
	}
	return n > 0
}

// stackedOf says, in a shape message, that a source is a stack.
func stackedOf(n int64) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(", %d stacked", n)
}

// unstack turns pieces of stacked templates (source j, rows of the stack)
// into pieces of the tensors: template j's tensor x holds stack rows [x·R,
// (x+1)·R), R = rows[j]/n, and is source x*J+j.
func unstack(shards [][]Piece, rows []int64, n int64, J int) [][]Piece {
	out := make([][]Piece, len(shards))
	for d, ps := range shards {
		for _, p := range ps {
			per := rows[p.Source] / n
			for a := p.Row; a < p.Row+p.Rows; {
				x := a / per
				m := min(p.Row+p.Rows, (x+1)*per) - a
				out[d] = append(out[d], Piece{Source: int(x)*J + p.Source, Row: a - x*per, Rows: m, Col: p.Col, Cols: p.Cols})
				a += m
			}
		}
	}
	return out
}

func resolvePart(p Part, srcRows int64, vars exprVars) (resolvedPart, error) {
	rp := resolvedPart{Part: p, unitRows: 1}
	var err error
	ev := func(expr string, dst *int64) {
		if err == nil && expr != "" {
			*dst, err = evalExpr(expr, vars)
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
	ev(p.Pad, &rp.pad)
	return rp, err
}

// seg is a run of n rows (or columns) of the block: from source src
// starting at row (column) at, or zeros.
type seg struct {
	src   int
	at, n int64
	zero  bool
}

// appendSeg appends s, merging it into the last segment when it continues
// it (the next rows of the same source, or more zeros).
func appendSeg(ss []seg, s seg) []seg {
	if s.n == 0 {
		return ss
	}
	if n := len(ss); n > 0 {
		l := &ss[n-1]
		if l.zero && s.zero || !l.zero && !s.zero && l.src == s.src && l.at+l.n == s.at {
			l.n += s.n
			return ss
		}
	}
	return append(ss, s)
}

func segsLen(ss []seg) int64 {
	var n int64
	for _, s := range ss {
		n += s.n
	}
	return n
}

// cutSegs is the run [from, from+n) of the rows (columns) ss list.
func cutSegs(ss []seg, from, n int64) []seg {
	var out []seg
	var pos int64
	for _, s := range ss {
		a, e := max(from, pos), min(from+n, pos+s.n)
		if a < e {
			c := s
			if !c.zero {
				c.at += a - pos
			}
			c.n = e - a
			out = appendSeg(out, c)
		}
		pos += s.n
	}
	return out
}

// crossSegs makes the pieces of a shard whose block rows are rs and
// columns cs: one band per row segment, one piece per column segment
// (zero where either is zero; neighbouring zeros joined).
func crossSegs(rs, cs []seg) []Piece {
	var ps []Piece
	for _, r := range rs {
		var at int64
		first := len(ps)
		for _, c := range cs {
			p := Piece{Source: r.src, Row: r.at, Rows: r.n, Col: c.at, Cols: c.n, At: at}
			if r.zero || c.zero {
				p = Piece{Rows: r.n, Cols: c.n, At: at, Zero: true}
			}
			at += c.n
			if n := len(ps); n > first {
				l := &ps[n-1]
				if l.Zero && p.Zero || !l.Zero && !p.Zero && l.Source == p.Source && l.Col+l.Cols == p.Col {
					l.Cols += p.Cols
					continue
				}
			}
			ps = append(ps, p)
		}
	}
	return ps
}

func evalShape(exprs []string, base exprVars, rows, cols int64) ([]int64, error) {
	vars := exprVars{}
	for k, v := range base {
		vars[k] = v
	}
	vars["rows"], vars["cols"] = rows, cols
	out := make([]int64, len(exprs))
	var prod int64 = 1
	for i, e := range exprs {
		v, err := evalExpr(e, vars)
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

package compare

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"golang.org/x/sync/errgroup"
)

// Kind is the kind of a Difference (JSON "kind").
type Kind string

// Kinds of differences between two caches (Dirs) or between a plan and
// a cache (Plan).
const (
	DiffMissing    Kind = "missing"    // in the first (reference) cache or the plan, not in the second
	DiffExtra      Kind = "extra"      // in the second cache, not in the first or the plan
	DiffHeader     Kind = "header"     // a header field differs (Field names it)
	DiffData       Kind = "data"       // a shard's bytes differ
	DiffUnreadable Kind = "unreadable" // a file's header cannot be read
)

// Difference is one difference found by Dirs or Plan. File is the
// .tensorbin path relative to the compared cache directories. For header
// differences Field, A and B name the field and its two values (A: the
// first cache or the plan). For data differences Shard is the index of the
// stored shard, Device its mesh coordinate, FirstByte the offset of the
// first differing byte in the shard, Tile the index of the first differing
// tile (TILE layout; row-major over the padded tile grid, TileRow/TileCol
// its position in that grid) or Element the first differing element
// (ROW_MAJOR), DiffUnits the number of differing tiles (or elements), and
// MaxAbsDiff the largest absolute difference of the decoded values over
// every differing unit (NonFinite counts value pairs where one side is NaN
// or infinite and the other is not the same value; those are not in
// MaxAbsDiff).
type Difference struct {
	Kind       Kind     `json:"kind"`
	File       string   `json:"file"`
	Target     string   `json:"target,omitempty"`
	Field      string   `json:"field,omitempty"`
	A          string   `json:"a,omitempty"`
	B          string   `json:"b,omitempty"`
	Shard      *int     `json:"shard,omitempty"`
	Device     []uint32 `json:"device,omitempty"`
	FirstByte  *int64   `json:"first_byte,omitempty"`
	Tile       *int64   `json:"tile,omitempty"`
	TileRow    *int64   `json:"tile_row,omitempty"`
	TileCol    *int64   `json:"tile_col,omitempty"`
	Element    *int64   `json:"element,omitempty"`
	DiffUnits  int64    `json:"differing_units,omitempty"`
	MaxAbsDiff *float64 `json:"max_abs_diff,omitempty"`
	NonFinite  int64    `json:"non_finite,omitempty"`
	// PaddingUnits counts the differing tiles whose elements inside the
	// matrix decode to the same values: they differ only in the padding
	// TILE adds beyond the shape (MaxAbsDiff covers the other tiles, and
	// is absent when every differing tile is one of these).
	PaddingUnits int64 `json:"padding_only_units,omitempty"`
	// Tolerance is set on a data difference of a file whose entry applies
	// a value op that is not exactly reproducible: the file was compared
	// within it, and the difference is beyond it (FirstByte is the first
	// element beyond it; units within it are not in DiffUnits).
	Tolerance *mapping.Tolerance `json:"tolerance,omitempty"`
	Message   string             `json:"message"`
}

// Report is the outcome of Dirs or Plan.
type Report struct {
	// A and B are the compared cache directories (A is the plan's cache
	// directory name for Plan).
	A string `json:"a"`
	B string `json:"b"`
	// FilesA and FilesB count the .tensorbin files (or planned files) on
	// each side, Common those on both, Identical the common files without
	// a difference (and not within a tolerance), Bytes the shard bytes
	// compared.
	FilesA    int   `json:"files_a"`
	FilesB    int   `json:"files_b"`
	Common    int   `json:"common"`
	Identical int   `json:"identical"`
	Bytes     int64 `json:"bytes_compared"`
	// HeadersOnly: no data was read (Plan).
	HeadersOnly bool         `json:"headers_only"`
	Diffs       []Difference `json:"differences"`
	// Tolerated are the files whose data differs only within the
	// tolerance of a value op their entry applies (Tolerated); they are
	// not differences, and not counted in Identical.
	Tolerated []Tolerated `json:"within_tolerance,omitempty"`
}

// Same reports whether no difference was found.
func (r *Report) Same() bool { return len(r.Diffs) == 0 }

// Unreadable reports whether a file on either side could not be read.
func (r *Report) Unreadable() bool {
	for _, d := range r.Diffs {
		if d.Kind == DiffUnreadable {
			return true
		}
	}
	return false
}

// DirsOptions tune Dirs.
type DirsOptions struct {
	// Workers is the number of files compared at once (default: GOMAXPROCS).
	Workers int
	// ChunkBytes is the size of the read buffers, two per worker (default
	// 1 MiB, rounded to whole tiles).
	ChunkBytes int
	// Progress counts shard bytes compared (nil-safe).
	Progress *ckpt.Progress
	// Words are the caller's words for the option a difference's message
	// mentions: "NaN", the NaN style of the builds (build.WriteOptions.NaN).
	Words ckpt.Words
}

// Dirs compares the .tensorbin files of two cache directories: files
// only in a (missing) or only in b (extra), every header field of each
// common file (cache.HeaderDiffs, shard offsets excepted), and the bytes of each
// shard, streamed in chunks (memory is bounded by Workers × 2 × ChunkBytes,
// whatever the file sizes), naming the first differing tile and the decoded
// maximum absolute difference. A file that a rule with a value op that is
// not exactly reproducible names (neg_exp: mapping.Tolerance; the rules of
// the built-in profile a ckpt manifest of either side names, else of every
// built-in profile) is compared within that op's tolerance, element by
// element, and is Tolerated when it differs only within it; every other
// file byte for byte. A file whose header cannot be read is a
// DiffUnreadable difference; an error is returned only when a directory
// cannot be listed or a file cannot be read after its header. Differences
// are sorted by file. Symbolic links to folders and files are followed; a
// side without any .tensorbin file is an error (ErrNothingToCompare).
func Dirs(ctx context.Context, a, b string, opt DirsOptions) (*Report, error) {
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	fa, err := cache.TensorbinFiles(a)
	if err != nil {
		return nil, err
	}
	fb, err := cache.TensorbinFiles(b)
	if err != nil {
		return nil, err
	}
	if len(fa) == 0 || len(fb) == 0 {
		return nil, emptyCompare(a, b, len(fa), len(fb))
	}
	rep := &Report{A: a, B: b, FilesA: len(fa), FilesB: len(fb), Diffs: []Difference{}}
	var common []string
	for _, p := range fa {
		if !contains(fb, p) {
			rep.Diffs = append(rep.Diffs, Difference{Kind: DiffMissing, File: p, Message: "in " + a + " only"})
			continue
		}
		common = append(common, p)
	}
	for _, p := range fb {
		if !contains(fa, p) {
			rep.Diffs = append(rep.Diffs, Difference{Kind: DiffExtra, File: p, Message: "in " + b + " only"})
		}
	}
	rep.Common = len(common)
	tols := compareTolerances(a, b, common)
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.Workers)
	for _, p := range common {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			diffs, tol, n, err := compareFile(ctx, filepath.Join(a, filepath.FromSlash(p)), filepath.Join(b, filepath.FromSlash(p)), p, tols[p], opt)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Bytes += n
			if len(diffs) == 0 && tol == nil {
				rep.Identical++
			}
			rep.Diffs = append(rep.Diffs, diffs...)
			if tol != nil {
				rep.Tolerated = append(rep.Tolerated, *tol)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sortDiffs(rep.Diffs)
	sortTolerated(rep.Tolerated)
	return rep, nil
}

// ErrNothingToCompare is returned (wrapped) by Dirs when a side holds
// no .tensorbin file: a comparison of nothing is not "identical".
var ErrNothingToCompare = errors.New("nothing to compare")

func emptyCompare(a, b string, na, nb int) error {
	var which string
	switch {
	case na == 0 && nb == 0:
		which = fmt.Sprintf("neither %s nor %s holds a %s file", a, b, mapping.FileExt)
	case na == 0:
		which = fmt.Sprintf("%s holds no %s file", a, mapping.FileExt)
	default:
		which = fmt.Sprintf("%s holds no %s file", b, mapping.FileExt)
	}
	return fmt.Errorf("%w: %s (pass cache folders, <root>/<device>/tensor_cache_<tag>_mesh<R>x<C>, or cache roots)", ErrNothingToCompare, which)
}

func contains(sorted []string, p string) bool {
	i := sort.SearchStrings(sorted, p)
	return i < len(sorted) && sorted[i] == p
}

// sortTolerated orders the files within a tolerance by file (natural
// order).
func sortTolerated(ts []Tolerated) {
	sort.SliceStable(ts, func(i, j int) bool { return ckpt.NaturalLess(ts[i].File, ts[j].File) })
}

// sortDiffs orders differences by file (natural order), keeping the order
// of the differences of one file.
func sortDiffs(ds []Difference) {
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].File != ds[j].File {
			return ckpt.NaturalLess(ds[i].File, ds[j].File)
		}
		return false
	})
}

// openHeader opens a .tensorbin file and reads its header.
func openHeader(path string) (*os.File, *tensorbin.Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading header of %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("reading header of %s: %w", path, err)
	}
	h, err := tensorbin.ReadTensorbinHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, h, nil
}

func headerDiffs(file string, a, b *tensorbin.Header) []Difference {
	var out []Difference
	for _, fd := range cache.HeaderDiffs(a, b, false) {
		out = append(out, Difference{Kind: DiffHeader, File: file, Field: fd.Field, A: fd.A, B: fd.B,
			Message: fmt.Sprintf("%s %s vs %s", fd.Field, fd.A, fd.B)})
	}
	return out
}

// compareFile compares one common file: header fields, then the data of
// each shard when both sides have shards of the same sizes, within ft's
// tolerance when it has one. It returns the differences and, for a file
// whose data differs only within the tolerance, its Tolerated record.
func compareFile(ctx context.Context, pa, pb, file string, ft fileTol, opt DirsOptions) ([]Difference, *Tolerated, int64, error) {
	fa, ha, err := openHeader(pa)
	if err != nil {
		return []Difference{{Kind: DiffUnreadable, File: file, A: "unreadable", Message: err.Error()}}, nil, 0, nil
	}
	defer fa.Close()
	fb, hb, err := openHeader(pb)
	if err != nil {
		return []Difference{{Kind: DiffUnreadable, File: file, B: "unreadable", Message: err.Error()}}, nil, 0, nil
	}
	defer fb.Close()
	diffs := headerDiffs(file, ha, hb)
	if !sameShardSizes(ha, hb) {
		return diffs, nil, 0, nil // the header differences say why the data is not compared
	}
	var n int64
	ulp := newULPCheck(&ha.Spec, ft.tol)
	beyond := false
	for i := range ha.Shards {
		d, err := compareShard(ctx, fa, fb, ha, hb, i, ulp, opt)
		if err != nil {
			return nil, nil, n, fmt.Errorf("comparing %s shard %d: %w", file, i, err)
		}
		n += int64(ha.Shards[i].Size)
		if d != nil {
			d.File, d.Target = file, ft.target
			diffs = append(diffs, *d)
			beyond = true
		}
	}
	if beyond {
		return diffs, nil, n, nil
	}
	return diffs, ulp.tolerated(file, ft), n, nil
}

// FileDataOptions say what File knows of the file beyond its two paths.
type FileDataOptions struct {
	// Tolerance is the tolerance of the file's entry (nil: only the same
	// bytes are the same data); Target is the entry's target.
	Tolerance *mapping.Tolerance
	Target    string
	DirsOptions
}

// FileData compares one file at pa with the one at pb (file names it in the
// differences): header fields, then the data of each shard when both
// sides have shards of the same sizes, within opt.Tolerance when it is
// set. It returns the differences, the Tolerated record of a file whose
// data differs only within the tolerance, and the shard bytes compared.
func FileData(ctx context.Context, pa, pb, file string, opt FileDataOptions) ([]Difference, *Tolerated, int64, error) {
	return compareFile(ctx, pa, pb, file, fileTol{tol: opt.Tolerance, target: opt.Target}, opt.DirsOptions)
}

// Sort orders the report's differences and files within a tolerance by
// file (natural order), keeping the order of the differences of one file.
func (r *Report) Sort() {
	sortDiffs(r.Diffs)
	sortTolerated(r.Tolerated)
}

// unitBytes is the comparison unit of a shard: one tile for TILE layouts,
// one element for ROW_MAJOR, one byte otherwise.
func unitBytes(s *tensorbin.TensorSpec) int {
	if s.Layout == tile.TILE && s.DType.TileBytes() > 0 {
		return s.DType.TileBytes()
	}
	if s.Layout == tile.ROW_MAJOR && s.DType.ElementSize() > 0 {
		return s.DType.ElementSize()
	}
	return 1
}

// compareShard streams shard i of both files in chunks of whole units and
// returns a data difference, or nil when the bytes are equal. The decoded
// difference uses A's spec (dtype and layout are equal when the headers
// agree; when they do not, the header differences already say so and the
// decoded values are A's reading of both sides).
//
// With ulp (a file compared within a tolerance), a differing unit whose
// every element is within it is not a difference (ulp counts it); the
// difference names the first element beyond it.
func compareShard(ctx context.Context, fa, fb io.ReaderAt, ha, hb *tensorbin.Header, i int, ulp *ulpCheck, opt DirsOptions) (*Difference, error) {
	spec := &ha.Spec
	unit := unitBytes(spec)
	chunk := opt.ChunkBytes
	if chunk <= 0 {
		chunk = 1 << 20
	}
	chunk = max(chunk/unit, 1) * unit
	size := int64(ha.Shards[i].Size)
	ra := tensorbin.ShardSection(fa, ha, i)
	rb := tensorbin.ShardSection(fb, hb, i)
	ba, bb := make([]byte, chunk), make([]byte, chunk)
	var d *Difference
	acc := newDiffAcc(spec)
	for off := int64(0); off < size; off += int64(chunk) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := int(min(int64(chunk), size-off))
		if _, err := ra.ReadAt(ba[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if _, err := rb.ReadAt(bb[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		opt.Progress.Add(int64(n))
		if bytes.Equal(ba[:n], bb[:n]) {
			continue
		}
		for u := 0; u < n; u += unit {
			e := min(u+unit, n)
			if bytes.Equal(ba[u:e], bb[u:e]) {
				continue
			}
			at, why := firstByte(ba[u:e], bb[u:e]), ""
			if ulp != nil {
				if at, why = ulp.unit(ba[u:e], bb[u:e]); at < 0 {
					continue
				}
			}
			if d == nil {
				d = firstDifference(spec, ha.Shards[i], i, off+int64(u)+int64(at), (off+int64(u))/int64(unit), ulp)
				if why != "" {
					d.Message += fmt.Sprintf("; the element at byte %d is %s", *d.FirstByte, why)
				}
			}
			d.DiffUnits++
			acc.add(ba[u:e], bb[u:e], (off+int64(u))/int64(unit))
		}
	}
	if d != nil {
		acc.finish(d, opt.Words)
	}
	return d, nil
}

func firstByte(a, b []byte) int {
	for k := range a {
		if a[k] != b[k] {
			return k
		}
	}
	return len(a)
}

func firstDifference(spec *tensorbin.TensorSpec, sh tensorbin.Shard, i int, byteOff, unit int64, ulp *ulpCheck) *Difference {
	shard := i
	d := &Difference{Kind: DiffData, Shard: &shard, Device: sh.Coord, FirstByte: &byteOff}
	differs := "differs"
	if ulp != nil {
		t := *ulp.tol
		d.Tolerance, differs = &t, ulp.phrase()
	}
	switch {
	case spec.Layout == tile.TILE && spec.DType.TileBytes() > 0:
		shape := make([]int, len(spec.Shape))
		for k, v := range spec.Shape {
			shape[k] = int(v)
		}
		_, _, w := tile.TileView(shape)
		perRow := int64(tile.RoundUp(w, tile.TileDim) / tile.TileDim)
		r, c := unit/perRow, unit%perRow
		d.Tile, d.TileRow, d.TileCol = &unit, &r, &c
		d.Message = fmt.Sprintf("shard %d (device %s) %s from byte %d: first differing tile %d (tile row %d, column %d)",
			i, cache.FormatDims(sh.Coord), differs, byteOff, unit, r, c)
	case spec.Layout == tile.ROW_MAJOR && spec.DType.ElementSize() > 0:
		d.Element = &unit
		d.Message = fmt.Sprintf("shard %d (device %s) %s from byte %d: first differing element %d", i, cache.FormatDims(sh.Coord), differs, byteOff, unit)
	default:
		d.Message = fmt.Sprintf("shard %d (device %s) %s from byte %d", i, cache.FormatDims(sh.Coord), differs, byteOff)
	}
	return d
}

// diffAcc accumulates the decoded maximum absolute difference of the
// differing units of a shard.
type diffAcc struct {
	dt        tile.DType
	layout    tile.Layout
	va, vb    []float32
	max       float64
	nonFinite int64
	// nanBits counts element pairs that are NaN on both sides with
	// different bits (a build with NaN vector against one with NaN scalar):
	// they differ, but not by any value.
	nanBits int64
	decoded bool
	// TILE geometry: each outer matrix is h×w, tiled perRow tiles wide and
	// perMatrix tiles in all; padUnits counts tiles differing only in
	// their padding.
	h, w, perRow, perMatrix int64
	padUnits                int64
}

func newDiffAcc(s *tensorbin.TensorSpec) *diffAcc {
	a := &diffAcc{dt: s.DType, layout: s.Layout}
	shape := make([]int, len(s.Shape))
	for k, v := range s.Shape {
		shape[k] = int(v)
	}
	_, h, w := tile.TileView(shape)
	a.h, a.w = int64(h), int64(w)
	a.perRow = int64(tile.RoundUp(w, tile.TileDim) / tile.TileDim)
	a.perMatrix = a.perRow * int64(tile.RoundUp(h, tile.TileDim)/tile.TileDim)
	return a
}

// add decodes one differing unit of both sides (a TILE tile or a ROW_MAJOR
// element; unit is its index in the shard) when the dtype is a float
// format. The padding of a TILE tile (elements beyond the h×w matrix) is
// not a value: it is left out of the difference, and a tile whose values
// are the same is counted in padUnits.
func (a *diffAcc) add(x, y []byte, unit int64) {
	switch {
	case a.layout == tile.TILE && len(x) == a.dt.TileBytes():
		switch a.dt {
		case tile.BFLOAT16, tile.FLOAT32, tile.BFLOAT8_B, tile.BFLOAT4_B:
		default:
			return
		}
		if a.va == nil {
			a.va, a.vb = make([]float32, tile.TileElems), make([]float32, tile.TileElems)
		}
		if tile.UnpackTiles(a.dt, a.va, x, tile.TileDim, tile.TileDim) != nil || tile.UnpackTiles(a.dt, a.vb, y, tile.TileDim, tile.TileDim) != nil {
			return
		}
		// Rows and columns of the tile inside the matrix.
		t, per := unit%max(a.perMatrix, 1), max(a.perRow, 1)
		rows := min(a.h-t/per*tile.TileDim, tile.TileDim)
		cols := min(a.w-t%per*tile.TileDim, tile.TileDim)
		same, padDiff := true, false
		for k := range a.va {
			if int64(k/tile.TileDim) >= rows || int64(k%tile.TileDim) >= cols {
				padDiff = padDiff || math.Float32bits(a.va[k]) != math.Float32bits(a.vb[k])
				continue
			}
			same = same && (math.Float32bits(a.va[k]) == math.Float32bits(a.vb[k]) || (a.va[k] != a.va[k] && a.vb[k] != a.vb[k]))
			a.pair(a.va[k], a.vb[k])
		}
		if same && padDiff {
			a.padUnits++
		}
	case a.layout == tile.ROW_MAJOR && a.dt == tile.BFLOAT16 && len(x) == 2:
		a.pair(numfmt.BF16ToF32(binary.LittleEndian.Uint16(x)), numfmt.BF16ToF32(binary.LittleEndian.Uint16(y)))
	case a.layout == tile.ROW_MAJOR && a.dt == tile.FLOAT32 && len(x) == 4:
		a.pair(math.Float32frombits(binary.LittleEndian.Uint32(x)), math.Float32frombits(binary.LittleEndian.Uint32(y)))
	}
}

func (a *diffAcc) pair(x, y float32) {
	a.decoded = true
	fx, fy := float64(x), float64(y)
	finite := !math.IsNaN(fx) && !math.IsInf(fx, 0) && !math.IsNaN(fy) && !math.IsInf(fy, 0)
	if !finite {
		switch {
		case math.Float32bits(x) == math.Float32bits(y):
		case math.IsNaN(fx) && math.IsNaN(fy):
			a.nanBits++
		default:
			a.nonFinite++
		}
		return
	}
	a.max = max(a.max, math.Abs(fx-fy))
}

func (a *diffAcc) finish(d *Difference, w ckpt.Words) {
	if !a.decoded {
		return
	}
	unit := "tiles"
	if a.layout == tile.ROW_MAJOR {
		unit = "elements"
	}
	d.PaddingUnits = a.padUnits
	if a.padUnits == d.DiffUnits {
		d.Message += fmt.Sprintf("; %d differing %s, only in their padding (beyond the %dx%d matrix): every value decodes the same", d.DiffUnits, unit, a.h, a.w)
		return
	}
	m := a.max
	d.MaxAbsDiff = &m
	d.NonFinite = a.nonFinite
	d.Message += fmt.Sprintf("; %d differing %s, decoded max abs difference %g", d.DiffUnits, unit, m)
	if a.padUnits > 0 {
		d.Message += fmt.Sprintf(" (%d of them only in their padding)", a.padUnits)
	}
	if a.nonFinite > 0 {
		d.Message += fmt.Sprintf(" (and %d NaN/Inf mismatches)", a.nonFinite)
	}
	if a.nanBits > 0 {
		d.Message += fmt.Sprintf("; %d element(s) NaN on both sides with different bits (not in the max: e.g. a %s vector build against a %s scalar one)",
			a.nanBits, w.Of("NaN"), w.Of("NaN"))
	}
}

// Document is the JSON document of cache compare and of map
// --against-cache: the report with its verdicts.
type Document struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema ckpt.Schema `json:"schema_version"`
	*Report
	Same       bool `json:"same"`
	Unreadable bool `json:"unreadable"`
	// Vision is the report of the model's vision folder (map
	// --against-cache of a plan with a vision part); Same and Unreadable
	// then cover both folders.
	Vision *Document `json:"vision,omitempty"`
}

// Document returns the report as its JSON document.
func (r *Report) Document() Document {
	return Document{Report: r, Same: r.Same(), Unreadable: r.Unreadable()}
}

// sameShardSizes reports whether two headers have buffers of the same sizes
// in the same shard order, so that their data can be compared shard by
// shard.
func sameShardSizes(a, b *tensorbin.Header) bool {
	return slices.EqualFunc(a.Shards, b.Shards, func(x, y tensorbin.Shard) bool { return x.Size == y.Size })
}

package compare

import (
	"encoding/binary"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// Tolerated is a file whose data differs from the other side's only
// within the tolerance of a value op its entry applies that is not
// exactly reproducible (mapping.Tolerance: neg_exp, whose float32 exp the
// serving host's torch does not round correctly): every differing element
// is at most Tolerance.ULP units in the last place of the file's element
// type from the other side's. It is not a difference, and not identical
// either: the same computation within that tolerance, not the same bits.
type Tolerated struct {
	File      string            `json:"file"`
	Target    string            `json:"target,omitempty"`
	Tolerance mapping.Tolerance `json:"tolerance"`
	// Elements counts the differing elements, MaxULP the largest distance
	// among them (at most Tolerance.ULP).
	Elements int64  `json:"differing_elements"`
	MaxULP   uint64 `json:"max_ulp"`
	Message  string `json:"message"`
}

// fileTol is what a comparison knows of one file: the tolerance of its
// entry (nil: only the same bytes are the same data) and its target.
type fileTol struct {
	tol    *mapping.Tolerance
	target string
}

// ulpCheck holds the differing units of a FLOAT32 or BFLOAT16 shard
// within a tolerance, element by element (numfmt.ULPDistanceF32 and
// ULPDistanceBF16), and counts what it tolerated.
type ulpCheck struct {
	tol    *mapping.Tolerance
	dt     tile.DType
	size   int
	elems  int64
	maxULP uint64
}

// newULPCheck is the check of a shard of spec within tol; nil when tol is
// nil or the dtype is not a float format of whole elements (a BFLOAT8_B
// or BFLOAT4_B tile shares exponents: its bytes are compared exactly).
func newULPCheck(spec *tensorbin.TensorSpec, tol *mapping.Tolerance) *ulpCheck {
	if tol == nil {
		return nil
	}
	switch spec.DType {
	case tile.FLOAT32, tile.BFLOAT16:
		return &ulpCheck{tol: tol, dt: spec.DType, size: spec.DType.ElementSize()}
	}
	return nil
}

// distance is the distance in ulps of the element pair at x[k:], y[k:]
// and their bits (ok false: a NaN or an infinity against other bits).
func (c *ulpCheck) distance(x, y []byte, k int) (ulp uint64, ok bool, a, b uint32) {
	if c.dt == tile.FLOAT32 {
		a, b = binary.LittleEndian.Uint32(x[k:]), binary.LittleEndian.Uint32(y[k:])
		ulp, ok = numfmt.ULPDistanceF32(a, b)
		return ulp, ok, a, b
	}
	a, b = uint32(binary.LittleEndian.Uint16(x[k:])), uint32(binary.LittleEndian.Uint16(y[k:]))
	ulp, ok = numfmt.ULPDistanceBF16(uint16(a), uint16(b))
	return ulp, ok, a, b
}

// unit holds one differing unit pair (whole elements) within the
// tolerance. When every element is within it, the unit's differing
// elements are counted and at is -1; otherwise at is the offset in the
// unit of the first element beyond it, and why gives both elements'
// bits and how far apart they are.
func (c *ulpCheck) unit(x, y []byte) (at int, why string) {
	var elems int64
	var most uint64
	for k := 0; k+c.size <= len(x); k += c.size {
		ulp, ok, a, b := c.distance(x, y, k)
		switch {
		case !ok:
			return k, fmt.Sprintf("%s vs %s: a NaN or infinity is within no ulp of other bits", c.bits(a), c.bits(b))
		case ulp > c.tol.ULP:
			return k, fmt.Sprintf("%s vs %s, %d ulp apart", c.bits(a), c.bits(b), ulp)
		case ulp > 0 || a != b: // +0 against -0 differ by bits, by no ulp
			elems++
			most = max(most, ulp)
		}
	}
	c.elems += elems
	c.maxULP = max(c.maxULP, most)
	return -1, ""
}

func (c *ulpCheck) bits(v uint32) string {
	if c.dt == tile.FLOAT32 {
		return fmt.Sprintf("%#08x", v)
	}
	return fmt.Sprintf("%#04x", v)
}

// phrase is what a difference of a file compared within the tolerance
// says it is: beyond it.
func (c *ulpCheck) phrase() string {
	return fmt.Sprintf("differs by more than %d ulp (the tolerance of %s)", c.tol.ULP, c.tol.Op)
}

// tolerated is the record of a file whose every shard was equal or
// within the tolerance, with some element differing; nil otherwise.
func (c *ulpCheck) tolerated(file string, ft fileTol) *Tolerated {
	if c == nil || c.elems == 0 {
		return nil
	}
	return &Tolerated{File: file, Target: ft.target, Tolerance: *c.tol, Elements: c.elems, MaxULP: c.maxULP,
		Message: fmt.Sprintf("data equal within %d ulp, not bit for bit: %d element(s) differ, by at most %d ulp (%s: %s)",
			c.tol.ULP, c.elems, c.maxULP, c.tol.Op, c.tol.Why)}
}

// compareTolerances gives the tolerance of each common file of a
// comparison of the directories a and b (Dirs), which has file names
// but no plan: the rules of the built-in profile a ckpt manifest of the
// file's cache folder names on either side (the side ckpt built), else of
// every built-in profile, name the file (mapping.Profile.FileTolerance).
func compareTolerances(a, b string, files []string) map[string]fileTol {
	profiles := map[string][]*mapping.Profile{} // by cache folder, relative to a and b
	out := map[string]fileTol{}
	for _, p := range files {
		folder, rel := splitFolder(p)
		ps, ok := profiles[folder]
		if !ok {
			ps = folderProfiles(filepath.Join(a, filepath.FromSlash(folder)), filepath.Join(b, filepath.FromSlash(folder)))
			profiles[folder] = ps
		}
		for _, prof := range ps {
			if tol, target := prof.FileTolerance(rel); tol != nil {
				out[p] = fileTol{tol: tol, target: target}
				break
			}
		}
	}
	return out
}

// splitFolder splits a compared file's path into its cache folder's path
// (up to the last tensor_cache_<tag>_mesh<R>x<C> segment; "" when the
// compared directory is the folder) and the path inside it.
func splitFolder(p string) (folder, rel string) {
	segs := strings.Split(p, "/")
	for i := len(segs) - 2; i >= 0; i-- {
		if cache.IsFolderName(segs[i]) {
			return path.Join(segs[:i+1]...), path.Join(segs[i+1:]...)
		}
	}
	return "", p
}

// folderProfiles is the built-in profile the ckpt manifest of either
// folder names, else every built-in profile.
func folderProfiles(dirs ...string) []*mapping.Profile {
	for _, d := range dirs {
		if m, err := cache.ReadManifest(d); err == nil {
			if p, err := mapping.Builtin(m.Profile); err == nil {
				return []*mapping.Profile{p}
			}
		}
	}
	var out []*mapping.Profile
	for _, n := range mapping.BuiltinNames() {
		if p, err := mapping.Builtin(n); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ToleratedNote is the note a verdict adds for the files compared equal
// within a tolerance: "; the data of 3 file(s) equal within 1 ulp, not bit
// for bit (neg_exp: transcendental: ...)", one clause per op; "" for none.
func ToleratedNote(ts []Tolerated) string {
	type key struct {
		op  mapping.Op
		ulp uint64
	}
	var order []key
	files := map[key]int{}
	why := map[key]string{}
	for _, t := range ts {
		k := key{t.Tolerance.Op, t.Tolerance.ULP}
		if files[k] == 0 {
			order = append(order, k)
		}
		files[k]++
		why[k] = t.Tolerance.Why
	}
	s := ""
	for _, k := range order {
		s += fmt.Sprintf("; the data of %d file(s) equal within %d ulp, not bit for bit (%s: %s)", files[k], k.ulp, k.op, why[k])
	}
	return s
}

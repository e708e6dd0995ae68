package build

import (
	"fmt"
	"sort"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// NaN and Inf in source tensors. Every band's raw source bytes go through
// b.guard (ckpt.FiniteGuard: one cheap pass, eight bytes at a time) in
// runJob, except FP8 and BF16 bands whose decode (decode.go) saw every byte
// and found none: their NaN/Inf test rides on the decode loop, and a band
// where it fires is counted exactly by the guard; block scales, which are not streamed, are checked whole in
// prepare. Without WriteOptions.AllowNonFinite the first tensor found fails
// the build (*ckpt.NonFiniteError, counted over the whole tensor); with it,
// the counts are recorded in the manifest.

// checkScales checks the block scales of the files to build.
func (b *builder) checkScales(scales map[string]*ckpt.Tensor) error {
	names := make([]string, 0, len(scales))
	for n := range scales {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if t := scales[n]; t != nil {
			if err := b.guard.CheckTensor(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// recheckFinite: a file the earlier build made (with AllowNonFinite) from
// a source that holds NaN or Inf is rebuilt when this build does not allow
// them, so that the source is read and refused, and when this build gives
// NaNs other bits (WriteOptions.NaN).
func (b *builder) recheckFinite(rec cache.FileRecord) bool {
	if b.opt.AllowNonFinite && b.oldNaN == b.opt.NaN {
		return false
	}
	for _, s := range rec.Sources {
		if _, ok := b.oldNF[s.Name]; ok {
			return true
		}
	}
	return false
}

// nonFinite merges the counts of this build with those the earlier build
// recorded for sources of files that were kept.
func (b *builder) nonFinite(files []cache.FileRecord) []ckpt.NonFinite {
	out := b.guard.Counts()
	seen := map[string]bool{}
	for _, nf := range out {
		seen[nf.Tensor] = true
	}
	for _, f := range files {
		for _, s := range f.Sources {
			if nf, ok := b.oldNF[s.Name]; ok && !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, nf)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return ckpt.NaturalLess(out[i].Tensor, out[j].Tensor) })
	return out
}

// Finite sources whose values the build makes non-finite count as
// non-finite too (ckpt.FiniteGuard.Overflow): an FP8 code times a huge
// block scale (the float32 product, rounded to bf16 first by the profile
// rules that start with a rounding; a block-float tile of an Inf is Inf),
// or an F32/F64 value beyond the bf16 range. The scales are tested here,
// once per source (they are small); a weight with a scale that can
// overflow is read once more to count the values that do. F32 and F64
// sources, whose values only a scan can tell, are scanned band by band
// (scanOverflow); no other source can overflow bf16.

// overflowTarget is the dtype a source's values are rounded to before
// they are tiled: bf16 when every target rounds first, else float32.
func (st *srcState) overflowTarget() numfmt.DType {
	if st.roundFirst {
		return numfmt.BF16
	}
	return numfmt.F32
}

// checkOverflow tests the block scales of st (once its roundFirst is
// known) and marks F32/F64 sources for scanOverflow.
func (b *builder) checkOverflow(st *srcState) error {
	dt := st.overflowTarget()
	v := st.v
	if !v.Dequantized() {
		st.scan = numfmt.MayOverflow(v.T.DType, dt)
		return nil
	}
	n, first := v.OverflowingScales(dt)
	if n == 0 {
		return nil
	}
	over, err := v.CountOverflow(dt)
	if err != nil {
		return err
	}
	return b.guard.Overflow(v.T, dt, over, ckpt.ScaleOverflowWhy(v.Scale.Name, n, first, dt))
}

// scanOverflow counts the values of a float32 band (rows values each)
// that overflow st's target; without AllowNonFinite the first band with
// any fails the build, counted over the whole tensor.
func (b *builder) scanOverflow(st *srcState, w *worker, rows int64) error {
	dt := st.overflowTarget()
	bad := numfmt.CountNotFinite(dt, w.f32[:rows*st.v.Cols])
	if bad == 0 {
		return nil
	}
	nan, inf := ckpt.CountNonFinite(st.t.DType, w.raw)
	if bad -= nan + inf; bad == 0 {
		return nil
	}
	why := fmt.Sprintf("%s holds at most %.5g", dt, numfmt.MaxFinite(dt))
	if !b.guard.Allow {
		all, err := st.v.CountOverflow(dt)
		if err != nil {
			return err
		}
		bad = all
	}
	return b.guard.Overflow(st.t, dt, bad, why)
}

// NaN is a NaN style (WriteOptions.NaN, cache build --nan): the bits a NaN
// gets where the serving host's torch produces one. The manifest records
// it by name (cache.Manifest.NaN).
type NaN string

// NaN styles. Tenstorrent cards are served from x86 hosts with AVX2 or
// AVX-512, whose vectorised kernels write 0xFFFF (numfmt.NaNBF16Vector);
// NaNScalar is torch's scalar code (and tt-metal's own host conversion),
// 0x7FC0. The zero NaN is NaNVector.
const (
	NaNVector NaN = "vector"
	NaNScalar NaN = "scalar"
)

// Bits returns the bfloat16 pattern of the NaN style ("" is NaNVector),
// or an error for a style that is neither.
func (n NaN) Bits() (uint16, error) {
	switch n {
	case "", NaNVector:
		return numfmt.NaNBF16Vector, nil
	case NaNScalar:
		return numfmt.TTNaNBF16, nil
	}
	return 0, fmt.Errorf("NaN style %q: want %s or %s", string(n), NaNVector, NaNScalar)
}

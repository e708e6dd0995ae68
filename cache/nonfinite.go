package cache

import (
	"sort"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// NaN and Inf in source tensors. Every band's raw source bytes go through
// b.guard (ckpt.FiniteGuard: one cheap pass, eight bytes at a time) in
// runJob, except FP8 and BF16 bands whose decode (decode.go) saw every byte
// and found none: their NaN/Inf test rides on the decode loop, and a band
// where it fires is counted exactly by the guard; block scales, which are not streamed, are checked whole in
// prepare. Without BuildOptions.AllowNonFinite the first tensor found fails
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
// them, so that the source is read and refused.
func (b *builder) recheckFinite(rec FileRecord) bool {
	if b.opt.AllowNonFinite {
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
func (b *builder) nonFinite(files []FileRecord) []ckpt.NonFinite {
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

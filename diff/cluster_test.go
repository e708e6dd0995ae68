package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changePattern says which elements of a rows×cols tensor a fine-tune
// changed.
type changePattern struct {
	name string
	mask func(r *rngT, rows, cols int64) []bool
}

func patterns() []changePattern {
	each := func(f func(i, j int64) bool) func(*rngT, int64, int64) []bool {
		return func(_ *rngT, rows, cols int64) []bool {
			m := make([]bool, rows*cols)
			for i := int64(0); i < rows; i++ {
				for j := int64(0); j < cols; j++ {
					m[i*cols+j] = f(i, j)
				}
			}
			return m
		}
	}
	return []changePattern{
		{"dense", each(func(i, j int64) bool { return true })},
		{"dense-30pct", func(r *rngT, rows, cols int64) []bool {
			m := make([]bool, rows*cols)
			for i := range m {
				m[i] = r.next()%10 < 3
			}
			return m
		}},
		{"sparse-0.1pct", func(r *rngT, rows, cols int64) []bool {
			m := make([]bool, rows*cols)
			for i := range m {
				m[i] = r.next()%1000 == 0
			}
			return m
		}},
		{"row-block", each(func(i, j int64) bool { return i >= 200 && i < 220 })},
		{"first-rows", each(func(i, j int64) bool { return i < 20 })},
		{"scattered-rows", func(r *rngT, rows, cols int64) []bool {
			m := make([]bool, rows*cols)
			for k := 0; k < 20; k++ {
				i := int64(r.next() % uint64(rows))
				for j := int64(0); j < cols; j++ {
					m[i*cols+j] = true
				}
			}
			return m
		}},
		{"every-16th-column", each(func(i, j int64) bool { return j%16 == 0 })},
		{"column-block", each(func(i, j int64) bool { return j < 40 })},
		{"one-element", each(func(i, j int64) bool { return i == 300 && j == 777 })},
	}
}

// changeBF16 flips the lowest bit of the masked bf16 elements.
func changeBF16(raw []byte, mask []bool) []byte {
	out := append([]byte(nil), raw...)
	for i, c := range mask {
		if c {
			out[2*i] ^= 1
		}
	}
	return out
}

// changeFP8 moves the masked E4M3 codes to a neighbouring code (never a
// NaN code).
func changeFP8(codes []byte, mask []bool) []byte {
	out := append([]byte(nil), codes...)
	for i, c := range mask {
		if c {
			if out[i]&0x7f < 0x70 {
				out[i]++
			} else {
				out[i]--
			}
		}
	}
	return out
}

// TestSampledIntervalHoldsClusteredChanges is the coverage test of the
// changed fraction's interval: on bf16 and block-FP8 pairs whose changes
// are dense, confined to a block of rows, to scattered rows, to a column
// pattern or to one element, over 5 seeds the reported 95 % interval of a
// 64 KiB sample holds the true changed fraction in at least 90 % of the
// (tensor, seed) cases (the interval of independent draws held it in
// about two thirds of the clustered ones), and every tensor changed in at
// least 1 % of its elements everywhere is flagged.
func TestSampledIntervalHoldsClusteredChanges(t *testing.T) {
	t.Parallel()
	const rows, cols = 512, 1024
	dir := t.TempDir()
	var bm, fm []ckpt.MemTensor
	truth := map[string]float64{}
	dense := map[string]bool{}
	for k, pat := range patterns() {
		r := &rngT{s: uint64(k)*7919 + 3}
		mask := pat.mask(r, rows, cols)
		var n int64
		for _, c := range mask {
			if c {
				n++
			}
		}
		frac := float64(n) / float64(rows*cols)
		w := randValues(uint64(k)+11, rows*cols)
		name := fmt.Sprintf("bf16.%s.weight", pat.name)
		b := bf16T(t, name, []int64{rows, cols}, w)
		f := b
		f.Data = changeBF16(b.Data, mask)
		bm, fm = append(bm, b), append(fm, f)
		truth[name] = frac
		name8 := fmt.Sprintf("fp8.%s.weight", pat.name)
		codes, _, mts := fp8(t, name8, w, rows, cols, 128, 128, numfmt.F32)
		f8 := append([]ckpt.MemTensor(nil), mts...)
		f8[0].Data = changeFP8(codes, mask)
		bm, fm = append(bm, mts...), append(fm, f8...)
		truth[name8] = frac
		if pat.name == "dense" || pat.name == "dense-30pct" {
			dense[name], dense[name8] = true, true
		}
	}
	bc := writeCkpt(t, filepath.Join(dir, "b"), bm, 128, nil)
	fc := writeCkpt(t, filepath.Join(dir, "f"), fm, 128, nil)
	var cases, held, clustered, clusteredHeld int
	for seed := uint64(1); seed <= 5; seed++ {
		res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{SampleBytes: 64 << 10, SampleSeed: seed})
		require.NoError(t, err)
		for _, row := range res.Tensors {
			frac, ok := truth[row.Name]
			if !ok {
				continue
			}
			require.True(t, row.Sampled, row.Name)
			require.NotNil(t, row.ChangedFractionCI95, row.Name)
			ci := row.ChangedFractionCI95
			in := float64(ci[0]) <= frac && frac <= float64(ci[1])
			cases++
			if seed == 1 {
				t.Logf("%-32s true %.5f  sample %.5f  [%.5f, %.5f]  %d ranges", row.Name, frac, *row.ChangedFraction, ci[0], ci[1], len(row.SampledRanges))
			}
			if in {
				held++
			} else {
				t.Logf("seed %d %s: true %.5f outside [%.5f, %.5f] (%d of %d sampled elements changed, %d ranges)",
					seed, row.Name, frac, ci[0], ci[1], *row.ChangedElems, *row.SampledElems, len(row.SampledRanges))
			}
			if !dense[row.Name] && frac > 0.01 {
				clustered++
				k, n := *row.ChangedElems, *row.SampledElems
				if lo, hi := diff.Wilson(k, n); lo <= frac && frac <= hi {
					clusteredHeld++
				}
			}
			if dense[row.Name] {
				assert.Equal(t, diff.Changed, row.Relation, "seed %d: %s changed in %.0f %% of its elements", seed, row.Name, 100*frac)
			}
		}
	}
	t.Logf("interval held the truth in %d of %d cases; the independent-draw (Wilson) interval in %d of %d clustered ones", held, cases, clusteredHeld, clustered)
	assert.GreaterOrEqual(t, float64(held), 0.9*float64(cases))
}

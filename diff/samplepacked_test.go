package diff_test

import (
	"context"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schemeDirs writes a scheme's base, a second copy of it (to edit) and its
// bf16 fine-tune (synth.WriteScheme).
func schemeDirs(t *testing.T, s quant.Scheme) (base, copyDir, ft string) {
	t.Helper()
	dir := t.TempDir()
	base, copyDir, ft = filepath.Join(dir, "base"), filepath.Join(dir, "copy"), filepath.Join(dir, "ft")
	require.NoError(t, synth.WriteScheme(base, s, synth.SchemeOptions{}))
	require.NoError(t, synth.WriteScheme(copyDir, s, synth.SchemeOptions{}))
	require.NoError(t, synth.WriteScheme(ft, s, synth.SchemeOptions{FineTune: true}))
	return base, copyDir, ft
}

// valuesOf reads the values of the tensor diff lists as name (an MXFP4
// X_blocks as X) with ckpt.Values, the full diff's reader.
func valuesOf(t *testing.T, c *ckpt.Checkpoint, name string) []float32 {
	t.Helper()
	x, ok := c.Lookup(name)
	if !ok {
		x, ok = c.Lookup(name + "_blocks")
	}
	require.True(t, ok, name)
	v, err := c.Values(x)
	require.NoError(t, err)
	out := make([]float32, v.Rows*v.Cols)
	_, err = v.ReadRows(0, v.Rows, nil, out)
	require.NoError(t, err)
	return out
}

// changedIn counts the elements of the ranges whose values differ (by
// bits, as diff counts them).
func changedIn(b, f []float32, rs [][2]int64) int64 {
	var n int64
	for _, r := range rs {
		for i := r[0]; i < r[1]; i++ {
			if math.Float32bits(b[i]) != math.Float32bits(f[i]) {
				n++
			}
		}
	}
	return n
}

func sampledElems(rs [][2]int64) int64 {
	var n int64
	for _, r := range rs {
		n += r[1] - r[0]
	}
	return n
}

// packedCost is what one side of a scheme reads for n sampled values of a
// weight: codes and scale codes (and NVFP4's 4-byte global scale), or
// their bf16 values.
func packedCost(s quant.Scheme, dt numfmt.DType, n int64) int64 {
	switch {
	case dt == numfmt.BF16:
		return 2 * n
	case s == quant.MXFP4:
		return n/2 + n/32
	case s == quant.NVFP4:
		return n/2 + n/16 + 4
	}
	return n // FP8 codes (the scale is read whole)
}

// TestSampledDiffSchemes: a sampled diff of a quantised base (MXFP4,
// NVFP4, compressed-tensors FP8 per tensor / channel / block) against its
// bf16 fine-tune, and the other way round, compares the dequantised
// values at the sampled positions: every weight is sampled in runs of
// whole groups of its scheme, its changed_elems are exactly the sampled
// elements whose values (ckpt.Values, the full diff's reader) differ, a
// weight's side reads exactly the codes and scale codes of its runs,
// within --sample-bytes, and the result does not depend on the chunking.
// Before, a sampled diff refused packed FP4 weights (and a per-channel
// or per-tensor FP8 weight was sampled in whole rows, beyond the budget
// when a row is larger).
func TestSampledDiffSchemes(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4, quant.FP8Channel, quant.FP8Tensor, quant.FP8PerBlock} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, _, ftDir := schemeDirs(t, s)
			qc, bc := openLocal(t, base, ftDir)
			changed := synth.SchemeChangedWeight(s)
			group := map[quant.Scheme]int64{quant.MXFP4: 32, quant.NVFP4: 16, quant.FP8PerBlock: 32}[s]
			for _, dir := range []string{"quantised→bf16", "bf16→quantised"} {
				b, f := qc, bc
				if dir == "bf16→quantised" {
					b, f = bc, qc
				}
				// a row of 128 bf16 values is 256 bytes: less than a row
				const size = 160
				ctx := context.Background()
				res, err := diff.Compare(ctx, b, f, diff.CompareOptions{SampleBytes: size, SampleSeed: 3})
				require.NoError(t, err, dir)
				again, err := diff.Compare(ctx, b, f, diff.CompareOptions{SampleBytes: size, SampleSeed: 3, Workers: 1, ChunkBytes: 100})
				require.NoError(t, err, dir)
				assert.Equal(t, res.Tensors, again.Tensors, "%s: deterministic, whatever the chunking", dir)
				weights := 0
				for _, r := range res.Tensors {
					if r.Relation == diff.OnlyInBase || r.Relation == diff.OnlyInFT {
						continue
					}
					if !r.Sampled {
						continue
					}
					quantised := r.BaseDType != r.FTDType
					if !quantised {
						assert.Equal(t, diff.NoChangeSeen, r.Relation, "%s %s", dir, r.Name)
						continue
					}
					weights++
					assert.Contains(t, []diff.Relation{diff.DTypeChanged, diff.RequantIdenticalSeen}, r.Relation, "%s %s", dir, r.Name)
					n := sampledElems(r.SampledRanges)
					require.NotNil(t, r.SampledElems, r.Name)
					assert.Equal(t, n, *r.SampledElems, r.Name)
					assert.GreaterOrEqual(t, len(r.SampledRanges), 2, "%s: spread over several ranges", r.Name)
					for _, rg := range r.SampledRanges {
						if group > 0 {
							assert.Zero(t, rg[0]%group, "%s: %v starts on a group", r.Name, rg)
							assert.Zero(t, rg[1]%group, "%s: %v ends on one", r.Name, rg)
						}
					}
					want := changedIn(valuesOf(t, b, r.Name), valuesOf(t, f, r.Name), r.SampledRanges)
					assert.Equal(t, want, *r.ChangedElems, "%s %s: the sampled elements whose values differ", dir, r.Name)
					if r.Name == changed && dir == "quantised→bf16" {
						assert.Positive(t, *r.ChangedElems, "%s: every 7th element changed", r.Name)
					}
					if r.Name != changed {
						assert.Zero(t, *r.ChangedElems, r.Name)
					}
				}
				assert.Equal(t, map[quant.Scheme]int{quant.MXFP4: 4}[s]+map[bool]int{true: 14}[s != quant.MXFP4], weights, "%s: every quantised weight is sampled", dir)

				// One weight alone: its sides read exactly their runs'
				// codes and scale codes (FP8: the codes, the scale
				// tensor whole), within the budget.
				m, err := ckpt.NewMatcher([]string{changed, changed + "_blocks"}, nil)
				require.NoError(t, err)
				one, err := diff.Compare(ctx, b, f, diff.CompareOptions{SampleBytes: size, SampleSeed: 3, Match: m})
				require.NoError(t, err)
				require.Len(t, one.Tensors, 1)
				r := one.Tensors[0]
				require.True(t, r.Sampled)
				n := sampledElems(r.SampledRanges)
				for _, side := range []struct {
					dt   numfmt.DType
					read int64
					c    *ckpt.Checkpoint
				}{{r.BaseDType, one.Sample.Base.BytesRead, b}, {r.FTDType, one.Sample.FT.BytesRead, f}} {
					want := packedCost(s, side.dt, n)
					if side.dt == numfmt.F8E4M3 {
						sc, ok := side.c.Lookup(strings.TrimSuffix(changed, ".weight") + ".weight_scale")
						require.True(t, ok)
						want += int64(sc.NBytes())
					}
					assert.Equal(t, want, side.read, "%s %s: bytes read", dir, side.dt)
					if side.dt != numfmt.F8E4M3 {
						assert.LessOrEqual(t, side.read, int64(size), "%s %s: within --sample-bytes", dir, side.dt)
					}
				}
			}
		})
	}
}

// TestSampledDiffPackedPair: two packed FP4 checkpoints of one scheme
// (MXFP4, NVFP4) compare by dequantised values at the sampled positions:
// a pair of copies is no_change_seen throughout; a code changed inside a
// sampled run is found and counted (one element), one outside every run
// is not; a scale code changed inside a sampled run changes its group's
// non-zero values, counted, and its scale companion, compared at the
// groups the weight's sample reads (the same bytes, read once), is
// changed too. Before, a sampled diff refused packed FP4 weights.
func TestSampledDiffPackedPair(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, cp, _ := schemeDirs(t, s)
			ctx := context.Background()
			opt := diff.CompareOptions{SampleBytes: 1 << 10, SampleSeed: 9}
			name := synth.SchemeChangedWeight(s)
			stored, scaleName, group := name+"_blocks", name+"_scales", int64(32)
			if s == quant.NVFP4 {
				stored, scaleName, group = name, strings.TrimSuffix(name, ".weight")+".weight_scale", 16
			}
			bc, fc := openLocal(t, base, cp)
			clean, err := diff.Compare(ctx, bc, fc, opt)
			require.NoError(t, err)
			assert.Zero(t, clean.Summary.Changed)
			by := rows(clean)
			w, sc := by[name], by[scaleName]
			require.True(t, w.Sampled, "%s is sampled", name)
			assert.Equal(t, diff.NoChangeSeen, w.Relation)
			require.True(t, sc.Sampled, "%s follows its weight", scaleName)
			var follow [][2]int64
			for _, r := range w.SampledRanges {
				follow = append(follow, [2]int64{r[0] / group, r[1] / group})
			}
			assert.Equal(t, follow, sc.SampledRanges, "the scale codes of the weight's runs")
			// the weight's bytes and its scale companion's are read once
			n := sampledElems(w.SampledRanges)
			for _, r := range clean.Tensors {
				assert.Contains(t, []diff.Relation{diff.NoChangeSeen, diff.Identical}, r.Relation, r.Name)
			}

			// a code inside the second run, one outside every run, a
			// scale code inside the last run
			in := w.SampledRanges[1][0] + 2*group + 1 // odd: the high nibble
			out := int64(-1)
			for e := int64(0); e < w.Numel; e += group {
				if !inRanges(w.SampledRanges, e) {
					out = e
					break
				}
			}
			require.GreaterOrEqual(t, out, int64(0))
			last := w.SampledRanges[len(w.SampledRanges)-1]
			sg := last[1]/group - 1
			code := make([]byte, 1)
			x, _ := bc.Lookup(stored)
			_, err = x.ReadAt(code, in/2)
			require.NoError(t, err)
			require.NoError(t, synth.PokeTensor(cp, stored, in/2, []byte{code[0] ^ 0x10}))
			_, err = x.ReadAt(code, out/2)
			require.NoError(t, err)
			require.NoError(t, synth.PokeTensor(cp, stored, out/2, []byte{code[0] ^ 0x01}))
			st, _ := bc.Lookup(scaleName)
			_, err = st.ReadAt(code, sg)
			require.NoError(t, err)
			require.NoError(t, synth.PokeTensor(cp, scaleName, sg, []byte{code[0] + 1}))

			bc, fc = openLocal(t, base, cp)
			res, err := diff.Compare(ctx, bc, fc, opt)
			require.NoError(t, err)
			by = rows(res)
			got := by[name]
			assert.Equal(t, w.SampledRanges, got.SampledRanges, "the positions depend on the seed, name and shape only")
			assert.Equal(t, diff.Changed, got.Relation)
			bv, fv := valuesOf(t, bc, name), valuesOf(t, fc, name)
			var nonzero int64
			for i := sg * group; i < (sg+1)*group; i++ {
				if bv[i] != 0 {
					nonzero++
				}
			}
			require.Positive(t, nonzero)
			assert.Equal(t, 1+nonzero, *got.ChangedElems, "the changed code and the non-zero values of the changed scale's group")
			assert.Equal(t, changedIn(bv, fv, got.SampledRanges), *got.ChangedElems)
			assert.Equal(t, changedIn(bv, fv, [][2]int64{{0, got.Numel}})-1, *got.ChangedElems, "all but the change outside the sample")
			assert.Equal(t, n, *got.SampledElems)
			gs := by[scaleName]
			assert.Equal(t, diff.Changed, gs.Relation)
			assert.Equal(t, int64(1), *gs.ChangedElems)
			assert.Equal(t, follow, gs.SampledRanges)

			// bytes: the weight's codes and scale codes, once (the scale
			// companion's bytes are those), plus what is read whole
			m, err := ckpt.NewMatcher([]string{name, stored, scaleName}, nil)
			require.NoError(t, err)
			o := opt
			o.Match = m
			two, err := diff.Compare(ctx, bc, fc, o)
			require.NoError(t, err)
			want := n/2 + n/group
			assert.LessOrEqual(t, want, opt.SampleBytes, "the budget counts the scale codes")
			if s == quant.NVFP4 {
				want += 4 // weight_scale_2, read whole
			}
			assert.Equal(t, want, two.Sample.Base.BytesRead, "codes and scale codes of the sampled groups, each byte once")
			assert.Equal(t, want, two.Sample.FT.BytesRead)
		})
	}
}

// TestSampledDiffPackedOverHub: over HTTP (the test hub), a sampled diff
// with --sample-budget of an MXFP4 and an NVFP4 base against its bf16
// fine-tune reads at most the budget per side, every byte the hub serves
// is a byte the summary counts, each range request is one read, and the
// result equals the local one; the changed weight is found.
func TestSampledDiffPackedOverHub(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, _, ft := schemeDirs(t, s)
			hub := sourcetest.NewHub(base, "org/base")
			hub.AddRepo("org/ft", ft)
			var mu sync.Mutex
			var ranges []string
			hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
				if rg := r.Header.Get("Range"); rg != "" {
					mu.Lock()
					ranges = append(ranges, file+" "+rg)
					mu.Unlock()
				}
				return sourcetest.Fault{}
			}
			t.Cleanup(hub.Close)
			env := map[string]string{"HF_ENDPOINT": hub.URL}
			// no prefix cached beyond the header: every read of data is a request
			openers := source.Openers(source.Options{Getenv: func(k string) string { return env[k] }, PrefixSize: 16})
			ctx := context.Background()
			hb, err := ckpt.Open(ctx, "hf://org/base", ckpt.Options{}, openers...)
			require.NoError(t, err)
			defer hb.Close()
			hf, err := ckpt.Open(ctx, "hf://org/ft", ckpt.Options{}, openers...)
			require.NoError(t, err)
			defer hf.Close()
			hub.Quiesce()
			hub.ResetCounters()
			mu.Lock()
			ranges = nil
			mu.Unlock()
			const budget = 24 << 10
			opt := diff.CompareOptions{SampleBudget: budget, SampleSeed: 4}
			res, err := diff.Compare(ctx, hb, hf, opt)
			require.NoError(t, err)
			hub.Quiesce()
			t.Logf("%s: base read %d, ft %d bytes of a budget of %d per side; %d requests, %d bytes served", s,
				res.Sample.Base.BytesRead, res.Sample.FT.BytesRead, budget, hub.Requests.Load(), hub.BytesServed.Load())
			assert.LessOrEqual(t, res.Sample.Base.BytesRead, int64(budget))
			assert.LessOrEqual(t, res.Sample.FT.BytesRead, int64(budget))
			assert.Equal(t, res.BytesRead, hub.BytesServed.Load(), "every byte served is counted")
			reads := res.Sample.Base.Reads + res.Sample.FT.Reads
			mu.Lock()
			assert.Len(t, ranges, int(reads), "one range request per read")
			mu.Unlock()
			assert.Equal(t, reads, hub.Requests.Load())
			assert.Positive(t, res.Sample.SampledTensors)
			by := rows(res)
			ch := by[synth.SchemeChangedWeight(s)]
			require.True(t, ch.Sampled)
			assert.Positive(t, *ch.ChangedElems, "the changed weight is found")

			bc, fc := openLocal(t, base, ft)
			local, err := diff.Compare(ctx, bc, fc, opt)
			require.NoError(t, err)
			assert.Equal(t, local.Tensors, res.Tensors, "the same from a local path as over HTTP")
			assert.Equal(t, local.Sample.Base.BytesRead, res.Sample.Base.BytesRead)
		})
	}
}

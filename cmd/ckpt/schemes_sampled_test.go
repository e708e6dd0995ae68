package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampledDiffDoc is the part of a sampled diff's JSON the scheme tests
// read.
type sampledDiffDoc struct {
	Summary map[string]int64
	Tensors []struct {
		Name                 string
		Relation             string
		BaseDType            string     `json:"base_dtype"`
		FTDType              string     `json:"ft_dtype"`
		Numel                int64      `json:"numel"`
		ChangedElems         *int64     `json:"changed_elems"`
		Sampled              bool       `json:"sampled"`
		SampledElems         *int64     `json:"sampled_elems"`
		SampledRanges        [][2]int64 `json:"sampled_ranges"`
		RequantMismatchElems *int64     `json:"requant_mismatch_elems"`
	}
	Sample struct {
		Base, FT struct {
			BytesRead int64 `json:"bytes_read"`
		}
	}
}

func sampledDiff(t *testing.T, wantCode int, args ...string) (sampledDiffDoc, map[string]int) {
	t.Helper()
	code, out, stderr := runApp(t, append(append([]string{"diff"}, args...), "--format", "json", "--progress", "none")...)
	require.Equal(t, wantCode, code, "%s%s", out, stderr)
	var doc sampledDiffDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	by := map[string]int{}
	for i, r := range doc.Tensors {
		by[r.Name] = i
	}
	return doc, by
}

// bitsDiffer counts the elements of the ranges whose float32 values
// differ (by bits, as diff counts them).
func bitsDiffer(b, f []float64, rs [][2]int64) int64 {
	var n int64
	for _, r := range rs {
		for i := r[0]; i < r[1]; i++ {
			if math.Float32bits(float32(b[i])) != math.Float32bits(float32(f[i])) {
				n++
			}
		}
	}
	return n
}

// TestDiffSampledPackedSchemes (#28 Deliver 3): diff --sample-bytes of MXFP4
// and NVFP4 checkpoints compares dequantised values at the sampled
// positions. Two copies of a base: exit 0, nothing changed. A copy with
// one code changed inside a sampled run, one outside every run and one
// scale code changed inside a sampled run: exit 1, the weight named
// changed with changed_elems the sampled elements whose float64
// reference values differ (the code and the group's non-zero values; not
// the change outside), its scale companion changed in one code. Against
// the bf16 fine-tune, either way round: the changed weight counts exactly
// the sampled elements whose reference value differs from the
// fine-tune's, every other weight none. Before, a sampled diff refused
// packed FP4 weights (exit 2).
func TestDiffSampledPackedSchemes(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, _, ft := schemeFixtures(t, s)
			cp := filepath.Join(t.TempDir(), "copy")
			require.NoError(t, synth.WriteScheme(cp, s, synth.SchemeOptions{}))
			sample := []string{"--sample-bytes", "1KiB", "--sample-seed", "2"}
			name := synth.SchemeChangedWeight(s)
			stored, scaleName, group := name+"_blocks", name+"_scales", int64(32)
			if s == quant.NVFP4 {
				stored, scaleName, group = name, strings.TrimSuffix(name, ".weight")+".weight_scale", 16
			}

			doc, by := sampledDiff(t, 0, append([]string{base, cp}, sample...)...)
			assert.Zero(t, doc.Summary["changed"])
			w := doc.Tensors[by[name]]
			require.True(t, w.Sampled, name)
			assert.Equal(t, "no_change_seen", w.Relation)
			assert.Equal(t, "U8", w.BaseDType)
			require.GreaterOrEqual(t, len(w.SampledRanges), 3)
			for _, r := range w.SampledRanges {
				assert.Zero(t, r[0]%group, "%v starts on a group", r)
				assert.Zero(t, r[1]%group, "%v ends on one", r)
			}

			in := w.SampledRanges[1][0] + group + 2 // even: the low nibble
			require.Less(t, in, w.SampledRanges[1][1])
			out := int64(-1)
			for e := int64(0); e < w.Numel && out < 0; e += group {
				if !inRangesCLI(w.SampledRanges, e) {
					out = e
				}
			}
			require.GreaterOrEqual(t, out, int64(0))
			last := w.SampledRanges[len(w.SampledRanges)-1]
			sg := last[1]/group - 1 // the last group of the last run
			editSingle(t, cp, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
				for i := range ts {
					switch ts[i].Name {
					case stored:
						ts[i].Data[in/2] ^= 0x01
						ts[i].Data[out/2] ^= 0x01
					case scaleName:
						ts[i].Data[sg]++
					}
				}
				return ts
			})
			doc, by = sampledDiff(t, 1, append([]string{base, cp}, sample...)...)
			got := doc.Tensors[by[name]]
			assert.Equal(t, "changed", got.Relation)
			assert.Equal(t, w.SampledRanges, got.SampledRanges, "the positions depend on the seed, the name and the shape")
			bv, fv := refDequant(t, base, s)[name], refDequant(t, cp, s)[name]
			var nonzero int64
			for i := sg * group; i < (sg+1)*group; i++ {
				if bv[i] != 0 {
					nonzero++
				}
			}
			require.NotNil(t, got.ChangedElems)
			assert.Equal(t, 1+nonzero, *got.ChangedElems, "the changed code and the changed scale's non-zero values")
			assert.Equal(t, bitsDiffer(bv, fv, got.SampledRanges), *got.ChangedElems)
			assert.Equal(t, bitsDiffer(bv, fv, [][2]int64{{0, got.Numel}})-1, *got.ChangedElems, "not the change outside the sample")
			sc := doc.Tensors[by[scaleName]]
			assert.Equal(t, "changed", sc.Relation, scaleName)
			assert.Equal(t, int64(1), *sc.ChangedElems, scaleName)
			assert.Equal(t, int64(2), doc.Summary["changed"], "the weight and its scale only")
			code, text, stderr := runApp(t, "diff", base, cp, "--sample-bytes", "1KiB", "--sample-seed", "2", "--progress", "none")
			require.Equal(t, 1, code, stderr)
			assert.Regexp(t, `(?m)^`+strings.ReplaceAll(name, ".", `\.`)+` +changed +U8 +U8 `, text, "the text names the changed weight")

			// against the bf16 fine-tune, either way round
			ftc, err := ckpt.Open(context.Background(), ft, ckpt.Options{})
			require.NoError(t, err)
			defer ftc.Close()
			ref := refDequant(t, base, s)
			for _, pair := range [][2]string{{base, ft}, {ft, base}} {
				doc, by := sampledDiff(t, 1, append([]string{pair[0], pair[1]}, sample...)...)
				weights := 0
				for wname, vals := range ref {
					r := doc.Tensors[by[wname]]
					require.True(t, r.Sampled, wname)
					weights++
					assert.Equal(t, "dtype_changed", r.Relation, wname)
					x, ok := ftc.Lookup(wname)
					require.True(t, ok, wname)
					raw := make([]byte, x.NBytes())
					_, err := x.ReadAt(raw, 0)
					require.NoError(t, err)
					var want int64
					for _, rg := range r.SampledRanges {
						for i := rg[0]; i < rg[1]; i++ {
							if float32(vals[i]) != numfmt.BF16ToF32(binary.LittleEndian.Uint16(raw[2*i:])) {
								want++
							}
						}
					}
					assert.Equal(t, want, *r.ChangedElems, "%v %s", pair, wname)
					if wname == name {
						assert.Positive(t, want, "%s: every 7th element changed", wname)
					}
				}
				assert.Equal(t, len(ref), weights)
			}
			// --sample-budget: each side reads at most the budget, scale
			// codes included
			for _, pair := range []struct {
				b, f string
				code int
			}{{base, ft, 1}, {base, base, 0}} {
				doc, _ := sampledDiff(t, pair.code, pair.b, pair.f, "--sample-budget", "12KiB")
				assert.Positive(t, doc.Sample.Base.BytesRead)
				assert.LessOrEqual(t, doc.Sample.Base.BytesRead, int64(12<<10), "%v", pair)
				assert.LessOrEqual(t, doc.Sample.FT.BytesRead, int64(12<<10), "%v", pair)
			}
		})
	}
}

func inRangesCLI(rs [][2]int64, e int64) bool {
	for _, r := range rs {
		if e >= r[0] && e < r[1] {
			return true
		}
	}
	return false
}

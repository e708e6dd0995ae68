package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/nlpodyssey/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reference dequantisation of the scheme tests, written from the
// formats' definitions in float64 (not through ckpt or numfmt): E2M1
// codes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (bit 3 the sign), E8M0 2^(c-127),
// E4M3FN bias 7 with subnormals m·2^-9.
func refE2M1(c byte) float64 {
	v := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}[c&7]
	if c&8 != 0 {
		return -v
	}
	return v
}

func refE4M3(c byte) float64 {
	e, m := int(c>>3)&15, float64(c&7)
	v := math.Ldexp(8+m, e-10)
	if e == 0 {
		v = math.Ldexp(m, -9)
	}
	if e == 15 && c&7 == 7 {
		v = math.NaN()
	}
	if c&0x80 != 0 {
		return -v
	}
	return v
}

// refBF16 rounds x (finite, within float32's range, with at most 24
// significant bits: the products here are) to bf16 bits, nearest even.
func refBF16(x float64) uint16 {
	b := math.Float32bits(float32(x))
	return uint16((b + 0x7FFF + (b>>16)&1) >> 16)
}

func refF32(raw []byte, i int) float64 {
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
}

// refDequant returns the reference values of every quantised weight of a
// scheme fixture, by the name of its values, read from the fixture's raw
// bytes.
func refDequant(t *testing.T, dir string, s quant.Scheme) map[string][]float64 {
	t.Helper()
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	raw := func(name string) []byte {
		x, ok := c.Lookup(name)
		require.True(t, ok, name)
		b := make([]byte, x.NBytes())
		_, err := x.ReadAt(b, 0)
		require.NoError(t, err)
		return b
	}
	out := map[string][]float64{}
	for _, x := range c.Tensors {
		switch {
		case s == quant.MXFP4 && strings.HasSuffix(x.Name, "_blocks"):
			base := strings.TrimSuffix(x.Name, "_blocks")
			blocks, scales := raw(x.Name), raw(base+"_scales")
			v := make([]float64, 2*len(blocks))
			for i, b := range blocks {
				sc := math.Ldexp(1, int(scales[i/16])-127)
				v[2*i], v[2*i+1] = refE2M1(b&15)*sc, refE2M1(b>>4)*sc
			}
			out[base] = v
		case s == quant.NVFP4 && x.DType == numfmt.U8:
			mod := strings.TrimSuffix(x.Name, ".weight")
			packed, scales, global := raw(x.Name), raw(mod+".weight_scale"), refF32(raw(mod+".weight_scale_2"), 0)
			v := make([]float64, 2*len(packed))
			for i, b := range packed {
				sc := refE4M3(scales[2*i/16]) * global
				v[2*i], v[2*i+1] = refE2M1(b&15)*sc, refE2M1(b>>4)*sc
			}
			out[x.Name] = v
		case s == quant.FP8Channel && x.DType == numfmt.F8E4M3:
			codes, scales := raw(x.Name), raw(strings.TrimSuffix(x.Name, ".weight")+".weight_scale")
			cols := int(x.Shape[1])
			v := make([]float64, len(codes))
			for i, b := range codes {
				v[i] = refE4M3(b) * refF32(scales, i/cols)
			}
			out[x.Name] = v
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestExtractSchemesDequantise: extract --dtype bf16 (and f32) of an
// MXFP4, an NVFP4 and a per-channel FP8 checkpoint equals the reference
// dequantisation bit for bit; an MXFP4 pair X_blocks/X_scales is one tensor X [..., G*32];
// no companion (scales, weight_scale_2, input_scale) is written; the
// output opens with ckpt and with nlpodyssey/safetensors and holds every
// other tensor of the source; a weight whose scale has the wrong shape is
// refused (exit 1, naming it), nothing written. Before, extract refused these schemes (exit
// 1, "refusing to read it").
func TestExtractSchemesDequantise(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4, quant.FP8Channel, quant.FP8Tensor, quant.FP8PerBlock} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, bad, ft := schemeFixtures(t, s)
			out := filepath.Join(t.TempDir(), "x.safetensors")
			code, stdout, stderr := runApp(t, "extract", bad, "--match", "**", "--dtype", "bf16", "-o", out, "--progress", "none")
			require.Equal(t, 1, code, "%s%s", stdout, stderr)
			_, weight := synth.SchemeBadScale(s)
			assert.Contains(t, stderr, "tensor "+ckpt.Quote(weight))
			assert.Contains(t, stderr, "refusing to read it")
			assert.NoFileExists(t, out)

			code, stdout, stderr = runApp(t, "extract", base, "--match", "**", "--dtype", "bf16", "-o", out, "--progress", "none")
			require.Equal(t, 0, code, "%s%s", stdout, stderr)

			data, err := os.ReadFile(out)
			require.NoError(t, err)
			st, err := safetensors.Deserialize(data)
			require.NoError(t, err)
			got, err := ckpt.Open(context.Background(), out, ckpt.Options{})
			require.NoError(t, err)
			defer got.Close()
			want, err := ckpt.Open(context.Background(), ft, ckpt.Options{})
			require.NoError(t, err)
			defer want.Close()
			// the bf16 fine-tune has the tensors (names, shapes) of the base's values
			assert.Equal(t, want.Names(), got.Names(), "one tensor per value tensor, no companion")
			for _, name := range st.Names() {
				assert.NotRegexp(t, `(_scales|weight_scale|weight_scale_2|input_scale)$`, name)
				tv, _ := st.Tensor(name)
				assert.Equal(t, "BF16", tv.DType().String(), name)
				w, ok := want.Lookup(name)
				require.True(t, ok, name)
				assert.Equal(t, toU64(w.Shape), tv.Shape(), name)
			}
			if s == quant.FP8Tensor || s == quant.FP8PerBlock {
				return // their values are checked by diff against the fine-tune (TestDiffSchemes)
			}
			ref := refDequant(t, base, s)
			for name, vals := range ref {
				tv, ok := st.Tensor(name)
				require.True(t, ok, name)
				b := tv.Data()
				require.Len(t, b, 2*len(vals), name)
				bad := 0
				for i, v := range vals {
					if binary.LittleEndian.Uint16(b[2*i:]) != refBF16(v) {
						bad++
					}
				}
				assert.Zero(t, bad, "%s: elements that differ from the reference", name)
			}
			// --dtype f32: every product is exact in float32.
			out32 := filepath.Join(t.TempDir(), "x32.safetensors")
			code, stdout, stderr = runApp(t, "extract", base, "--match", "**", "--dtype", "f32", "-o", out32, "--progress", "none")
			require.Equal(t, 0, code, "%s%s", stdout, stderr)
			data, err = os.ReadFile(out32)
			require.NoError(t, err)
			st32, err := safetensors.Deserialize(data)
			require.NoError(t, err)
			for name, vals := range ref {
				tv, ok := st32.Tensor(name)
				require.True(t, ok, name)
				b := tv.Data()
				require.Len(t, b, 4*len(vals), name)
				bad := 0
				for i, v := range vals {
					if binary.LittleEndian.Uint32(b[4*i:]) != math.Float32bits(float32(v)) {
						bad++
					}
				}
				assert.Zero(t, bad, "%s (f32): elements that differ from the reference", name)
			}
		})
	}
}

func toU64(s []int64) []uint64 {
	out := make([]uint64, len(s))
	for i, d := range s {
		out[i] = uint64(d)
	}
	return out
}

// TestExtractSchemesKeep: --dtype keep --with-scales keeps every companion
// of MXFP4, NVFP4 and FP8-channel weights byte-identical; --dtype keep
// without them warns, naming the weight and the missing companion, as it
// does for block FP8.
func TestExtractSchemesKeep(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4, quant.FP8Channel} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, _, _ := schemeFixtures(t, s)
			src, err := ckpt.Open(context.Background(), base, ckpt.Options{})
			require.NoError(t, err)
			defer src.Close()
			var weights []string
			for _, x := range src.Tensors {
				if src.IsQuantized(x) {
					weights = append(weights, x.Name)
				}
			}
			require.NotEmpty(t, weights)
			out := filepath.Join(t.TempDir(), "keep.safetensors")
			code, stdout, stderr := runApp(t, "extract", base, "--match", weights[0], "--dtype", "keep", "--with-scales", "-o", out, "--progress", "none")
			require.Equal(t, 0, code, "%s%s", stdout, stderr)
			got, err := ckpt.Open(context.Background(), out, ckpt.Options{})
			require.NoError(t, err)
			defer got.Close()
			x, _ := src.Lookup(weights[0])
			comps := src.ScaleCompanions(x)
			require.NotEmpty(t, comps)
			for _, want := range append(comps, x) {
				g, ok := got.Lookup(want.Name)
				require.True(t, ok, want.Name)
				a, b := make([]byte, want.NBytes()), make([]byte, g.NBytes())
				_, err := want.ReadAt(a, 0)
				require.NoError(t, err)
				_, err = g.ReadAt(b, 0)
				require.NoError(t, err)
				assert.Equal(t, a, b, want.Name)
				assert.Equal(t, want.DType, g.DType, want.Name)
			}
			assert.Len(t, got.Tensors, len(comps)+1)

			out2 := filepath.Join(t.TempDir(), "codes.safetensors")
			code, stdout, stderr = runApp(t, "extract", base, "--match", weights[0], "--dtype", "keep", "-o", out2, "--progress", "none")
			require.Equal(t, 0, code, "%s%s", stdout, stderr)
			assert.Contains(t, stderr, "tensor "+ckpt.Quote(weights[0])+" is ")
			assert.Contains(t, stderr, "which is not extracted: the output cannot be dequantised (add --with-scales, or use --dtype bf16)")
		})
	}
}

// schemeDiffDoc is the part of diff's JSON the scheme tests read.
type schemeDiffDoc struct {
	Summary map[string]int64
	Tensors []struct {
		Name                  string
		Relation              string
		BaseDType             string  `json:"base_dtype"`
		Shape                 []int64 `json:"shape"`
		ChangedElems          *int64  `json:"changed_elems"`
		RequantMismatchElems  *int64  `json:"requant_mismatch_elems"`
		RequantMismatchBlocks *int64  `json:"requant_mismatch_blocks"`
	}
}

// TestDiffSchemes: diff of each scheme's base against its bf16 fine-tune
// (a scheme change: MXFP4, NVFP4, FP8 base; bf16 fine-tune) compares
// dequantised values: every quantised weight is a row under its values'
// name and shape (an MXFP4 X_blocks as X) with changed_elems exactly the
// elements whose reference dequantised value differs from the
// fine-tune's (those of every 7th element of one weight that bf16
// rounding did not undo; 0 for every other weight); diff of a base
// against itself is identical throughout. Before, diff compared the
// packed bytes (shape_changed / only_in_base for MXFP4 and NVFP4) and
// refused the compressed-tensors FP8 weights.
func TestDiffSchemes(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4, quant.FP8Channel, quant.FP8Tensor, quant.FP8PerBlock} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, _, ft := schemeFixtures(t, s)
			code, out, stderr := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
			require.Equal(t, 1, code, "%s%s", out, stderr)
			var doc schemeDiffDoc
			require.NoError(t, json.Unmarshal([]byte(out), &doc))

			ftc, err := ckpt.Open(context.Background(), ft, ckpt.Options{})
			require.NoError(t, err)
			defer ftc.Close()
			var ref map[string][]float64
			if s == quant.MXFP4 || s == quant.NVFP4 || s == quant.FP8Channel {
				ref = refDequant(t, base, s)
			}
			changed := synth.SchemeChangedWeight(s)
			rows := map[string]bool{}
			for _, r := range doc.Tensors {
				rows[r.Name] = true
				x, inFT := ftc.Lookup(r.Name)
				if !inFT {
					assert.Equal(t, "only_in_base", r.Relation, r.Name)
					assert.Regexp(t, `(_scales|weight_scale|weight_scale_2|input_scale)$`, r.Name)
					continue
				}
				assert.Equal(t, x.Shape, r.Shape, "%s: the shape of the values", r.Name)
				require.NotNil(t, r.ChangedElems, r.Name)
				want := int64(0)
				if vals, ok := ref[r.Name]; ok {
					fv := make([]byte, x.NBytes())
					_, err := x.ReadAt(fv, 0)
					require.NoError(t, err)
					for i, v := range vals {
						if float32(v) != numfmt.BF16ToF32(binary.LittleEndian.Uint16(fv[2*i:])) {
							want++
						}
					}
				} else if r.Name == changed {
					want = *r.ChangedElems // FP8 tensor/block: checked > 0 below
				}
				assert.Equal(t, want, *r.ChangedElems, r.Name)
				if r.Name == changed {
					assert.Positive(t, *r.ChangedElems, r.Name)
					assert.LessOrEqual(t, *r.ChangedElems, (int64(x.Numel())+6)/7, r.Name)
				} else {
					assert.Zero(t, *r.ChangedElems, r.Name)
				}
			}
			for _, name := range ftc.Names() {
				assert.True(t, rows[name], "%s has a row", name)
			}

			code, out, stderr = runApp(t, "diff", base, base, "--format", "json", "--progress", "none")
			require.Equal(t, 0, code, "%s%s", out, stderr)
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			for _, r := range doc.Tensors {
				assert.Equal(t, "identical", r.Relation, r.Name)
			}
		})
	}
}

// TestDiffSchemesRequantIdentical: a compressed-tensors FP8 base made by
// quantising a bf16 checkpoint with the recipe (per tensor: one
// amax/448 scale; per channel: one per row; per block: one per
// block_structure block) and that bf16 checkpoint compare as
// requant_identical, weight by weight (both mismatch counts 0), as block
// FP8 does, and a sampled diff as requant_identical_seen (per channel and
// per tensor sampled within --sample-bytes, not in whole rows). Before,
// diff refused these weights.
func TestDiffSchemesRequantIdentical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s      quant.Scheme
		bm, bn int64 // 0: the weight's rows / columns
	}{{quant.FP8Tensor, 0, 0}, {quant.FP8Channel, 1, 0}, {quant.FP8PerBlock, 32, 32}} {
		t.Run(string(tc.s), func(t *testing.T) {
			t.Parallel()
			base, _, ft := schemeFixtures(t, tc.s)
			ftc, err := ckpt.Open(context.Background(), ft, ckpt.Options{})
			require.NoError(t, err)
			defer ftc.Close()
			weights := 0
			editSingle(t, base, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
				byName := map[string]int{}
				for i, x := range ts {
					byName[x.Name] = i
				}
				for i, x := range ts {
					if x.DType != numfmt.F8E4M3 {
						continue
					}
					w, ok := ftc.Lookup(x.Name)
					require.True(t, ok, x.Name)
					raw := make([]byte, w.NBytes())
					_, err := w.ReadAt(raw, 0)
					require.NoError(t, err)
					vals := make([]float32, w.Numel())
					require.NoError(t, numfmt.DecodeFloat32(numfmt.BF16, raw, vals))
					rows, cols := x.Shape[0], x.Shape[1]
					bm, bn := tc.bm, tc.bn
					if bm == 0 {
						bm = rows
					}
					if bn == 0 {
						bn = cols
					}
					scales := make([]float32, ((rows+bm-1)/bm)*((cols+bn-1)/bn))
					numfmt.QuantizeBlockFP8(vals, rows, cols, bm, bn, numfmt.F32, ts[i].Data, scales)
					si := byName[strings.TrimSuffix(x.Name, ".weight")+".weight_scale"]
					require.Equal(t, len(scales)*4, len(ts[si].Data), x.Name)
					require.NoError(t, numfmt.EncodeFloat32(numfmt.F32, scales, ts[si].Data))
					weights++
				}
				return ts
			})
			require.Equal(t, 14, weights)
			code, out, stderr := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
			require.Equal(t, 1, code, "%s%s", out, stderr)
			var doc schemeDiffDoc
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			assert.Equal(t, int64(weights), doc.Summary["requant_identical"])
			for _, r := range doc.Tensors {
				if r.BaseDType != "F8_E4M3" {
					continue
				}
				assert.Equal(t, "requant_identical", r.Relation, r.Name)
				require.NotNil(t, r.RequantMismatchElems, r.Name)
				assert.Zero(t, *r.RequantMismatchElems, r.Name)
				assert.Zero(t, *r.RequantMismatchBlocks, r.Name)
			}

			// Sampled (each weight in runs of values, less than a bf16
			// row per side): requant_identical_seen, every sampled code
			// re-quantised exactly.
			sdoc, _ := sampledDiff(t, 1, base, ft, "--sample-bytes", "160", "--sample-seed", "5")
			assert.Equal(t, int64(weights), sdoc.Summary["requant_identical_seen"])
			for _, r := range sdoc.Tensors {
				if r.BaseDType != "F8_E4M3" {
					continue
				}
				assert.True(t, r.Sampled, r.Name)
				assert.Equal(t, "requant_identical_seen", r.Relation, r.Name)
				require.NotNil(t, r.RequantMismatchElems, r.Name)
				assert.Zero(t, *r.RequantMismatchElems, r.Name)
				assert.Positive(t, *r.SampledElems, r.Name)
				assert.LessOrEqual(t, 2**r.SampledElems, int64(160), "%s: within the budget", r.Name)
			}
		})
	}
}

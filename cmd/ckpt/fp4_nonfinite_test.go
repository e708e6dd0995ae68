package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawOf reads tensor name of the checkpoint at dir whole.
func rawOf(t *testing.T, dir, name string) []byte {
	t.Helper()
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	x, ok := c.Lookup(name)
	require.True(t, ok, name)
	b := make([]byte, x.NBytes())
	_, err = x.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}

// refNotFinite reports whether the exact product p (float64), rounded once
// to float32 (as the dequantisers compute it) and then to dt (bf16, f16:
// nearest even; f32 as it is), is not finite. Written from the formats'
// definitions, not through ckpt.
func refNotFinite(p float64, dt string) bool {
	f := float32(p)
	if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
		return true
	}
	switch dt {
	case "bf16":
		b := math.Float32bits(f)
		return (b+0x7FFF+(b>>16)&1)>>16&0x7F80 == 0x7F80
	case "f16":
		// 65504 is the largest half; from 65520 (halfway to 65536) on it
		// rounds to Inf.
		return math.Abs(float64(f)) >= 65520
	}
	return false
}

// TestExtractFP4NonFinite: a dequantised MXFP4 or NVFP4 value that comes
// out NaN or Inf is refused as FP8's are (exit 1, nothing written; with
// --allow-nonfinite written and counted in JSON): a NaN scale (E8M0 0xff,
// a NaN weight_scale_2) names the scale and counts its NaN codes; a finite
// scale whose products overflow (E8M0 254, 142 for f16, a huge
// weight_scale_2) counts the values that do, out of the weight's values,
// as a reference computed from the codes counts them. (Before: exit 0 and
// NaN/Inf written, the f16 refusal counted more values than the tensor
// has.)
func TestExtractFP4NonFinite(t *testing.T) {
	t.Parallel()
	const (
		mxW   = "model.layers.0.mlp.experts.down_proj"
		mxG   = "model.layers.0.mlp.experts.gate_up_proj"
		nvW   = "model.layers.0.mlp.down_proj.weight"
		nvG   = "model.layers.0.mlp.down_proj.weight_scale_2"
		nvS   = "model.layers.0.mlp.down_proj.weight_scale"
		allow = "--allow-nonfinite"
	)
	f32 := func(v float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)) }
	for _, tc := range []struct {
		name   string
		scheme quant.Scheme
		poke   func(t *testing.T, dir string) // damages the fixture
		match  string                         // the weight's tensors
		dtype  string
		weight string // the written values' name
		// the refusal's words; count (for an overflow) is computed by ref
		refusal string
		ref     func(t *testing.T, dir, dtype string) int64
		// with --allow-nonfinite: the JSON record and the non-finite
		// values written
		record func(ref int64) ckpt.NonFinite
		nan    int64 // NaN values written (-1: the overflow count, as Inf)
	}{
		{
			name: "MXFP4 E8M0 0xff", scheme: quant.MXFP4, match: mxW + "_*", dtype: "bf16", weight: mxW,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, mxW+"_scales", 0, []byte{0xff}))
			},
			refusal: `tensor "` + mxW + `_scales" (U8 read as F8_E8M0) has 1 NaN codes (0xff) of 512 values: refusing to extract it (pass --allow-nonfinite`,
			record:  func(int64) ckpt.NonFinite { return ckpt.NonFinite{Tensor: mxW + "_scales", NaN: 1} },
			nan:     32,
		},
		{
			name: "MXFP4 E8M0 254", scheme: quant.MXFP4, match: mxW + "_*", dtype: "bf16", weight: mxW,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, mxW+"_scales", 0, []byte{254}))
			},
			refusal: ` of 16384 values are finite but overflow to Inf when converted to BF16 (codes times the scales of "` + mxW + `_scales"; BF16 holds at most 3.3895e+38): refusing to extract it`,
			ref:     refMXFP4,
			nan:     -1,
		},
		{
			name: "MXFP4 scales 142 to f16", scheme: quant.MXFP4, match: mxG + "_*", dtype: "f16", weight: mxG,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, mxG+"_scales", 0, bytes.Repeat([]byte{142}, 1024)))
			},
			refusal: ` of 32768 values are finite but overflow to Inf when converted to F16 (codes times the scales of "` + mxG + `_scales"; F16 holds at most 65504)`,
			ref:     refMXFP4,
			nan:     -1,
		},
		{
			name: "NVFP4 NaN weight_scale_2", scheme: quant.NVFP4, match: "model.layers.0.mlp.down_proj.*", dtype: "bf16", weight: nvW,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, nvG, 0, f32(float32(math.NaN()))))
			},
			refusal: `tensor "` + nvG + `" (F32) has 1 NaN and 0 Inf of 1 values: refusing to extract it`,
			record:  func(int64) ckpt.NonFinite { return ckpt.NonFinite{Tensor: nvG, NaN: 1} },
			nan:     8192,
		},
		{
			name: "NVFP4 Inf weight_scale_2", scheme: quant.NVFP4, match: "model.layers.0.mlp.down_proj.*", dtype: "bf16", weight: nvW,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, nvG, 0, f32(float32(math.Inf(1)))))
			},
			refusal: `tensor "` + nvG + `" (F32) has 0 NaN and 1 Inf of 1 values: refusing to extract it`,
			record:  func(int64) ckpt.NonFinite { return ckpt.NonFinite{Tensor: nvG, Inf: 1} },
			nan:     -2, // every value NaN or Inf
		},
		{
			name: "NVFP4 NaN block scale", scheme: quant.NVFP4, match: "model.layers.0.mlp.down_proj.*", dtype: "f32", weight: nvW,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, nvS, 3, []byte{0x7f}))
			},
			refusal: `tensor "` + nvS + `" (F8_E4M3) has 1 NaN codes (0x7f/0xff) of 512 values: refusing to extract it`,
			record:  func(int64) ckpt.NonFinite { return ckpt.NonFinite{Tensor: nvS, NaN: 1} },
			nan:     16,
		},
		{
			name: "NVFP4 huge weight_scale_2", scheme: quant.NVFP4, match: "model.layers.0.mlp.down_proj.*", dtype: "bf16", weight: nvW,
			poke: func(t *testing.T, dir string) {
				require.NoError(t, synth.PokeTensor(dir, nvG, 0, f32(3e37)))
			},
			refusal: ` of 8192 values are finite but overflow to Inf when converted to BF16 (codes times the scales of "` + nvS + `"; BF16 holds at most 3.3895e+38)`,
			ref:     refNVFP4,
			nan:     -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "src")
			require.NoError(t, synth.WriteScheme(dir, tc.scheme, synth.SchemeOptions{}))
			tc.poke(t, dir)
			var count int64
			refusal := tc.refusal
			if tc.ref != nil {
				count = tc.ref(t, dir, tc.dtype)
				require.Positive(t, count, "the fixture overflows")
				refusal = `tensor "` + tc.weight + map[bool]string{true: "_blocks", false: ""}[tc.scheme == quant.MXFP4] + `" (U8): ` + strconv.FormatInt(count, 10) + refusal
			}
			out := filepath.Join(t.TempDir(), "x.safetensors")
			code, stdout, stderr := runApp(t, "extract", dir, "--match", tc.match, "--dtype", tc.dtype, "--out", out, "--progress", "none")
			assert.Equal(t, 1, code, "%s%s", stdout, stderr)
			assert.Contains(t, stderr, refusal)
			assert.NoFileExists(t, out)

			code, stdout, stderr = runApp(t, "extract", dir, "--match", tc.match, "--dtype", tc.dtype, "--out", out, "--progress", "none", allow, "--format", "json")
			require.Equal(t, 0, code, stderr)
			var res extractJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &res))
			written := nonFiniteOut(t, out, tc.weight)
			switch {
			case tc.nan == -1:
				require.Equal(t, []ckpt.NonFinite{{Tensor: tc.weight + map[bool]string{true: "_blocks", false: ""}[tc.scheme == quant.MXFP4], Overflow: count}}, res.NonFinite)
				assert.Equal(t, count, written, "the count is the Inf values written")
			case tc.nan == -2:
				require.Equal(t, []ckpt.NonFinite{tc.record(0)}, res.NonFinite)
				assert.EqualValues(t, 8192, written)
			default:
				require.Equal(t, []ckpt.NonFinite{tc.record(0)}, res.NonFinite)
				assert.Equal(t, tc.nan, written, "NaN values written")
			}
		})
	}
}

// refMXFP4 counts the values of the MXFP4 weight in dir (the tensor of the
// _scales poked: down_proj or gate_up_proj of layer 0) whose product code
// × 2^(scale-127) is not finite in dtype; 0xff scales are NaN sources, not
// counted.
func refMXFP4(t *testing.T, dir, dtype string) int64 {
	var n int64
	for _, w := range []string{"model.layers.0.mlp.experts.down_proj", "model.layers.0.mlp.experts.gate_up_proj"} {
		blocks, scales := rawOf(t, dir, w+"_blocks"), rawOf(t, dir, w+"_scales")
		for g, sc := range scales {
			if sc == 0xff {
				continue
			}
			for _, b := range blocks[16*g : 16*g+16] {
				for _, c := range []byte{b & 15, b >> 4} {
					if refNotFinite(refE2M1(c)*math.Ldexp(1, int(sc)-127), dtype) {
						n++
					}
				}
			}
		}
	}
	return n
}

// refNVFP4 counts the values of layer 0's down_proj (NVFP4) whose product
// code × E4M3 block scale × weight_scale_2 is not finite in dtype.
func refNVFP4(t *testing.T, dir, dtype string) int64 {
	const w = "model.layers.0.mlp.down_proj.weight"
	packed, scales, g := rawOf(t, dir, w), rawOf(t, dir, w+"_scale"), rawOf(t, dir, w+"_scale_2")
	global := float64(math.Float32frombits(binary.LittleEndian.Uint32(g)))
	var n int64
	for i, sc := range scales {
		for _, b := range packed[8*i : 8*i+8] {
			for _, c := range []byte{b & 15, b >> 4} {
				if refNotFinite(refE2M1(c)*refE4M3(sc)*global, dtype) {
					n++
				}
			}
		}
	}
	return n
}

// TestDiffFP4NonFinite: diff, which writes no values, counts the NaN of
// dequantised FP4 values as it counts FP8's (a note naming the side and
// the count; exit 1), whatever the scheme.
func TestDiffFP4NonFinite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft := filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	require.NoError(t, synth.WriteScheme(base, quant.MXFP4, synth.SchemeOptions{}))
	require.NoError(t, synth.WriteScheme(ft, quant.MXFP4, synth.SchemeOptions{}))
	require.NoError(t, synth.PokeTensor(ft, "model.layers.0.mlp.experts.down_proj_scales", 0, []byte{0xff}))
	code, stdout, stderr := runApp(t, "diff", base, ft, "--format", "text", "--progress", "none")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "ft has 32 NaN (base is finite)")
}

package ckpt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuantScheme: the one rule for a quantised weight (its codes plus its
// scale) by dtype, companions and config.
func TestQuantScheme(t *testing.T) {
	t.Parallel()
	const blockFP8 = `{"quantization_config":{"quant_method":"fp8","weight_block_size":[32,16]}}`
	spec := func(name string, dt numfmt.DType, shape ...int64) ckpt.WriteSpec {
		return ckpt.WriteSpec{Name: name, DType: dt, Shape: shape}
	}
	w := spec("m.weight", numfmt.F8E4M3, 64, 64)
	inv := spec("m.weight_scale_inv", numfmt.BF16, 2, 4) // [64/32, 64/16]
	missing, unknown := "missing", "unknown"
	for _, tc := range []struct {
		name   string
		config string // "" for none
		specs  []ckpt.WriteSpec
		want   any    // quant.Scheme, missing or unknown
		bm, bn int64  // block size when BlockFP8
		found  string // the companion an UnknownScaleError names
	}{
		{"bf16 weight", blockFP8, []ckpt.WriteSpec{spec("m.weight", numfmt.BF16, 4, 4)}, quant.Plain, 0, 0, ""},
		{"bf16 weight with a stray scale", blockFP8, []ckpt.WriteSpec{spec("m.weight", numfmt.BF16, 64, 64), inv}, quant.Plain, 0, 0, ""},
		{"block fp8", blockFP8, []ckpt.WriteSpec{w, inv}, quant.BlockFP8, 32, 16, ""},
		{"block fp8 with input_scale", blockFP8, []ckpt.WriteSpec{w, inv, spec("m.input_scale", numfmt.F32, 1)}, quant.BlockFP8, 32, 16, ""},
		{"no config: 128x128", "", []ckpt.WriteSpec{w, spec("m.weight_scale_inv", numfmt.F32, 1, 1)}, quant.BlockFP8, 128, 128, ""},
		{"no weight_block_size: 128x128", `{"quantization_config":{"quant_method":"fp8"}}`, []ckpt.WriteSpec{w, spec("m.weight_scale_inv", numfmt.F32, 1, 1)}, quant.BlockFP8, 128, 128, ""},
		{"weight_scale_inv under compressed-tensors", `{"quantization_config":{"quant_method":"compressed-tensors"}}`, []ckpt.WriteSpec{w, spec("m.weight_scale_inv", numfmt.F32, 1, 1)}, unknown, 0, 0, "m.weight_scale_inv"},
		{"scale of another block grid", blockFP8, []ckpt.WriteSpec{w, spec("m.weight_scale_inv", numfmt.F32, 1, 1)}, unknown, 0, 0, "m.weight_scale_inv"},
		{"no scale", blockFP8, []ckpt.WriteSpec{w}, missing, 0, 0, ""},
		{"e5m2, no scale", "", []ckpt.WriteSpec{spec("x", numfmt.F8E5M2, 4)}, missing, 0, 0, ""},
		{"fnuz, no scale", "", []ckpt.WriteSpec{spec("x", numfmt.F8E4M3FNUZ, 4)}, missing, 0, 0, ""},
		{"e5m2 with weight_scale_inv", blockFP8, []ckpt.WriteSpec{spec("m.weight", numfmt.F8E5M2, 64, 64), inv}, unknown, 0, 0, "m.weight_scale_inv"},
		{"per-channel weight_scale", blockFP8, []ckpt.WriteSpec{w, spec("m.weight_scale", numfmt.F32, 64, 1)}, unknown, 0, 0, "m.weight_scale"},
		{"weight_scale_2", blockFP8, []ckpt.WriteSpec{w, spec("m.weight_scale_2", numfmt.F32, 1)}, unknown, 0, 0, "m.weight_scale_2"},
		{"input_scale only", blockFP8, []ckpt.WriteSpec{w, spec("m.input_scale", numfmt.F32, 1)}, unknown, 0, 0, "m.input_scale"},
		{"weight_scale_inv and weight_scale", blockFP8, []ckpt.WriteSpec{w, inv, spec("m.weight_scale", numfmt.F32, 64, 1)}, unknown, 0, 0, "m.weight_scale"},
		{"an F8 scale is bookkeeping", blockFP8, []ckpt.WriteSpec{spec("m.weight_scale", numfmt.F8E4M3, 64, 4)}, quant.Plain, 0, 0, ""},
		{"e8m0 is a scale format", "", []ckpt.WriteSpec{spec("x", numfmt.F8E8M0, 4)}, quant.Plain, 0, 0, ""},
		{"u8 without a quantization_config", "", []ckpt.WriteSpec{spec("m.weight_packed", numfmt.U8, 64, 32)}, quant.Plain, 0, 0, ""},
		{"u8 in a block-fp8 checkpoint is data", blockFP8, []ckpt.WriteSpec{spec("m.mask", numfmt.U8, 4, 4)}, quant.Plain, 0, 0, ""},
		{"u8 in a quantised checkpoint", `{"quantization_config":{"quant_method":"compressed-tensors"}}`,
			[]ckpt.WriteSpec{spec("m.weight_packed", numfmt.U8, 64, 32), spec("m.weight_scale", numfmt.F8E4M3, 64, 4)}, unknown, 0, 0, "m.weight_scale"},
		{"mxfp4 blocks", `{"quantization_config":{"quant_method":"mxfp4"}}`,
			[]ckpt.WriteSpec{spec("e.down_blocks", numfmt.U8, 4, 16), spec("e.down_scales", numfmt.U8, 4, 1)}, unknown, 0, 0, "e.down_scales"},
		{"mxfp4 scales are bookkeeping", `{"quantization_config":{"quant_method":"mxfp4"}}`,
			[]ckpt.WriteSpec{spec("e.down_scales", numfmt.U8, 4, 1), spec("e.down_blocks", numfmt.U8, 4, 16)}, quant.Plain, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var ts []ckpt.MemTensor
			for _, s := range tc.specs {
				n := int64(s.DType.Bits() / 8)
				for _, d := range s.Shape {
					n *= d
				}
				ts = append(ts, ckpt.MemTensor{WriteSpec: s, Data: make([]byte, n)})
			}
			require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil))
			if tc.config != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o644))
			}
			c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
			require.NoError(t, err)
			defer c.Close()
			x, ok := c.Lookup(tc.specs[0].Name)
			require.True(t, ok)
			q, err := c.QuantScheme(x)
			var me *ckpt.MissingScaleError
			var ue *ckpt.UnknownScaleError
			switch tc.want {
			case missing:
				require.ErrorAs(t, err, &me)
				assert.Equal(t, x.Name, me.Tensor)
				assert.Equal(t, ckpt.ScaleName(x.Name), me.Want)
				assert.Contains(t, err.Error(), "has no scale")
			case unknown:
				require.ErrorAs(t, err, &ue)
				assert.Equal(t, x.Name, ue.Tensor)
				var names []string
				for _, s := range ue.Companions {
					names = append(names, s.Name)
				}
				assert.Contains(t, names, tc.found)
				assert.Contains(t, err.Error(), tc.found)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.want, q.Scheme)
				assert.Equal(t, tc.bm, q.BM)
				assert.Equal(t, tc.bn, q.BN)
				if q.Scheme == quant.BlockFP8 {
					assert.Equal(t, ckpt.ScaleName(x.Name), q.Scale.Name)
				}
				// Values follows the same rule.
				if x.DType.IsFloat() {
					v, err := c.Values(x)
					require.NoError(t, err)
					assert.Equal(t, q.Scheme == quant.BlockFP8, v.Dequantized())
				}
				return
			}
			assert.True(t, errors.Is(err, ckpt.ErrScale))
			if x.DType.IsFloat() {
				_, verr := c.Values(x)
				assert.ErrorIs(t, verr, ckpt.ErrScale, "Values refuses what QuantScheme refuses")
			}
		})
	}
}

// TestBlockFP8ScaleSuffix: quant's description of block FP8 names its
// scale as the reader does (ScaleName).
func TestBlockFP8ScaleSuffix(t *testing.T) {
	t.Parallel()
	sp := quant.SpecOf(quant.BlockFP8)
	require.NotNil(t, sp)
	require.NotEmpty(t, sp.Companions)
	assert.Equal(t, ckpt.ScaleSuffix, sp.Companions[0].Suffix)
}

// TestScaleErrorMessages pins the bytes of the reader's scale errors.
func TestScaleErrorMessages(t *testing.T) {
	t.Parallel()
	comp := &ckpt.Tensor{TensorInfo: ckpt.TensorInfo{Name: "x.weight_scale", DType: numfmt.F32, Shape: []int64{1}}}
	tests := []struct {
		err  error
		want string
	}{
		{&ckpt.UnknownScaleError{Tensor: "x.weight", File: "m.safetensors", DType: numfmt.F8E4M3, Companions: []*ckpt.Tensor{comp}, Reason: "why"},
			`tensor "x.weight" (F8_E4M3) of m.safetensors has scale companion "x.weight_scale" (F32 [1]): why; refusing to read it (ckpt dequantises block FP8 with weight_scale_inv, and MXFP4, NVFP4 and compressed-tensors FP8 with the companions their config declares)`},
		{&ckpt.MissingScaleError{Tensor: "x.weight", File: "m.safetensors", DType: numfmt.F8E4M3, Want: "x.weight_scale_inv", Unlisted: "b.safetensors"},
			`tensor "x.weight" (F8_E4M3) of m.safetensors has no scale (no "x.weight_scale_inv"): its codes alone are not its values; refusing to read it ("x.weight_scale_inv" is stored in b.safetensors but not listed in the index's weight_map)`},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.err.Error())
		assert.ErrorIs(t, tc.err, ckpt.ErrScale)
	}
}

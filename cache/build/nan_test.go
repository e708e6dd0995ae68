package build_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// patchTensor overwrites the first bytes of a tensor's data in its file.
func patchTensor(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	tn, ok := c.Lookup(name)
	require.True(t, ok, name)
	path, off := filepath.Join(dir, tn.File.Name), tn.Offset()
	c.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestBuildNaNStyles: NaN bits follow the serving host (WriteOptions.NaN).
// A NaN that torch produces — the bf16 dequantisation of a block-FP8 NaN
// code, the norms' bf16 +1 — is 0xFFFF with the vectorised kernels of
// AVX2/AVX-512 hosts (the default) and 0x7FC0 with the scalar ones; a bf16
// NaN that only passes through .to(bfloat16) keeps its sign and payload
// either way (it was 0x7FC0 before, whatever the style).
func TestBuildNaNStyles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(dir, synth.Small()))
	// bf16 sources: a negative NaN with payload and a signalling NaN.
	patchTensor(t, dir, "model.language_model.layers.0.linear_attn.norm.weight", []byte{0xc1, 0xff, 0x81, 0x7f})
	patchTensor(t, dir, "model.language_model.layers.0.input_layernorm.weight", []byte{0xc1, 0xff, 0x81, 0x7f})
	// F8_E4M3 source: code 0xff is a negative NaN.
	patchTensor(t, dir, "model.language_model.layers.1.mlp.down_proj.weight", []byte{0xff})
	tests := []struct {
		style    build.NaN
		produced uint16 // a NaN torch's arithmetic produces
		fp8Code  byte   // BFLOAT8_B code of the dequantised NaN (shared exponent 255)
	}{
		{style: "", produced: 0xffff, fp8Code: 0xff},
		{style: build.NaNVector, produced: 0xffff, fp8Code: 0xff},
		{style: build.NaNScalar, produced: 0x7fc0, fp8Code: 0x60},
	}
	for _, tc := range tests {
		t.Run("style="+string(tc.style), func(t *testing.T) {
			t.Parallel()
			c, plan := openPlan(t, dir)
			out := filepath.Join(t.TempDir(), "cache")
			_, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, AllowNonFinite: true, NaN: tc.style})
			require.NoError(t, err)
			shard0 := func(target string) []byte {
				t.Helper()
				for _, e := range plan.Entries {
					if e.Target != target {
						continue
					}
					p := filepath.Join(out, filepath.FromSlash(e.File))
					h, err := tensorbin.ReadTensorbinFile(p)
					require.NoError(t, err)
					data, err := os.ReadFile(p)
					require.NoError(t, err)
					return data[h.DataOffset+h.Shards[0].Offset:][:h.Shards[0].Size]
				}
				t.Fatalf("no target %s", target)
				return nil
			}
			// norm_w [1,1,32] bf16 TILE, only .to(bfloat16): values 0 and 1
			// are lanes 0 and 1 of face row 0, bits kept.
			norm := shard0("layers.0/tp/norm_w")
			require.Equal(t, uint16(0xffc1), binary.LittleEndian.Uint16(norm[0:]))
			require.Equal(t, uint16(0x7f81), binary.LittleEndian.Uint16(norm[2:]))
			// input_layernorm, ROW_MAJOR bf16 (+1 in bf16 arithmetic).
			ln := shard0("layers.0.input_layernorm.weight")
			require.Equal(t, tc.produced, binary.LittleEndian.Uint16(ln[0:]))
			require.Equal(t, tc.produced, binary.LittleEndian.Uint16(ln[2:]))
			// down_proj [out, in] → device 0 holds [in/2, out]: source (0, 0)
			// is lane 0 of face row 0 of tile 0, whose shared exponent is
			// 255; 0xFFFF0000 encodes as 0xFF (sign, saturated magnitude),
			// 0x7FC00000 as 0x60.
			down := shard0("layers.1/mlp.down_proj.weight.tp")
			require.Equal(t, byte(0xff), down[0], "shared exponent of face row 0")
			require.Equal(t, tc.fp8Code, down[64], "code of the NaN")
			m, err := cache.ReadManifest(filepath.Join(out, plan.CacheDir))
			require.NoError(t, err)
			want := tc.style
			if want == "" {
				want = build.NaNVector
			}
			require.Equal(t, string(want), m.NaN)
		})
	}
	c, plan := openPlan(t, dir)
	_, err := build.Write(context.Background(), c, plan, t.TempDir(), build.WriteOptions{AllowNonFinite: true, NaN: "avx"})
	require.ErrorContains(t, err, `NaN style "avx": want vector or scalar`)
}

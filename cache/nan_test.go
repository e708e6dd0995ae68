package cache_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/internal/ckpttest"
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

// TestBuildNaNIs7FC0: the cache path converts NaN as tt-metal's host
// conversion does (every NaN becomes 0x7FC0, sign and payload dropped), in
// a BFLOAT16 target and in a BFLOAT8_B target fed by a block-FP8 NaN code.
func TestBuildNaNIs7FC0(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "src")
	require.NoError(t, ckpttest.Write(dir, ckpttest.Small()))
	// bf16 source: a negative NaN with payload and a signalling NaN.
	patchTensor(t, dir, "model.language_model.layers.0.linear_attn.norm.weight", []byte{0xc1, 0xff, 0x81, 0x7f})
	// F8_E4M3 source: code 0xff is a negative NaN.
	patchTensor(t, dir, "model.language_model.layers.1.mlp.down_proj.weight", []byte{0xff})
	c, plan := openPlan(t, dir)
	out := filepath.Join(t.TempDir(), "cache")
	_, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2, AllowNonFinite: true})
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
	// norm_w [1,1,32] bf16 TILE: values 0 and 1 are lanes 0 and 1 of face row 0.
	norm := shard0("layers.0/tp/norm_w")
	require.Equal(t, uint16(0x7fc0), binary.LittleEndian.Uint16(norm[0:]))
	require.Equal(t, uint16(0x7fc0), binary.LittleEndian.Uint16(norm[2:]))
	// down_proj [out, in] → device 0 holds [in/2, out]: source (0, 0) is
	// lane 0 of face row 0 of tile 0. The row's shared exponent is 255 and
	// the canonical NaN 0x7FC00000 encodes as 0x60 (a negative NaN kept as
	// such would encode as 0xE0).
	down := shard0("layers.1/mlp.down_proj.weight.tp")
	require.Equal(t, byte(0xff), down[0], "shared exponent of face row 0")
	require.Equal(t, byte(0x60), down[64], "code of the NaN")
}

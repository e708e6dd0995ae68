package identify_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildWith builds the cache of c with a profile and settings into a new
// root and returns the root and the plan.
func buildWith(t *testing.T, c *ckpt.Checkpoint, profile string, set mapping.Settings) (string, *mapping.Plan) {
	t.Helper()
	p, err := mapping.Builtin(profile)
	require.NoError(t, err)
	plan, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, set, nil)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "cache")
	_, err = build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, NoSync: true})
	require.NoError(t, err)
	return out, plan
}

// Identify names the profile and the switches a cache was built with:
// each built-in profile with its defaults, and proj_1d_decode=false.
func TestIdentify(t *testing.T) {
	t.Parallel()
	_, c, _ := fixture(t, synth.Small())
	for _, tc := range []struct {
		profile   string
		set       mapping.Settings
		overrides []string
	}{
		{mapping.ProfileMTP, nil, []string{}},
		{mapping.ProfileMain, nil, []string{}},
		{mapping.ProfileMTP, mapping.Settings{mapping.VarProj1DDecode: false}, []string{"proj_1d_decode=false"}},
		{mapping.ProfileMain, mapping.Settings{mapping.VarMLP1DDecode: false}, []string{"mlp_1d_decode=false"}},
		{mapping.ProfileMTP, mapping.Settings{mapping.VarGateUpAGMM: false, mapping.VarProj1DDecode: false}, []string{"mlp_gateup_agmm_enabled=false", "proj_1d_decode=false"}},
		// main's fused GDN decode switch (QWEN36_GDN_FUSED_DECODE=0: no
		// dt_bias_fp32 / neg_exp_A_fp32), alone and with another switch.
		{mapping.ProfileMain, mapping.Settings{mapping.VarGDNFusedDecode: false}, []string{"gdn_fused_decode_enabled=false"}},
		{mapping.ProfileMain, mapping.Settings{mapping.VarGDNFusedDecode: false, mapping.VarProj1DDecode: false},
			[]string{"gdn_fused_decode_enabled=false", "proj_1d_decode=false"}},
	} {
		out, plan := buildWith(t, c, tc.profile, tc.set)
		res, err := identify.Dir(context.Background(), out, c, identify.DirOptions{})
		require.NoError(t, err)
		require.True(t, res.Exact, "%s %v: %+v", tc.profile, tc.set, res.Best)
		assert.Equal(t, tc.profile, res.Best.Profile, "%v", tc.set)
		assert.Equal(t, tc.overrides, res.Best.Overrides)
		assert.Empty(t, res.Ties, "every other candidate differs")
		assert.Equal(t, len(plan.Entries), res.Files)
		assert.Equal(t, "1x2", res.Mesh)
		assert.Equal(t, "P300", res.Device)
		// The cache folder itself works as well as its root.
		res2, err := identify.Dir(context.Background(), cache.FolderOf(out, plan.CacheDir).Path(), c, identify.DirOptions{})
		require.NoError(t, err)
		assert.Equal(t, res.Best, res2.Best)
		// From the file names and headers alone, the same verdict.
		res3, err := identify.DirNames(context.Background(), out, identify.DirOptions{})
		require.NoError(t, err)
		require.True(t, res3.Exact, "%s %v names only: %+v", tc.profile, tc.set, res3.Best)
		assert.Equal(t, tc.profile, res3.Best.Profile, "%v names only", tc.set)
		assert.Equal(t, tc.overrides, res3.Best.Overrides, "names only")
	}
}

// A cache no candidate reproduces gets the closest one, with what is left.
func TestIdentifyClosest(t *testing.T) {
	t.Parallel()
	_, c, _ := fixture(t, synth.Small())
	out, plan := buildWith(t, c, mapping.ProfileMain, nil)
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	var removed string
	for _, e := range plan.Entries {
		if filepath.Base(filepath.Dir(e.File)) == "tp" {
			removed = filepath.Join(out, filepath.FromSlash(e.File))
			break
		}
	}
	require.NoError(t, os.Remove(removed))
	res, err := identify.Dir(context.Background(), dir, c, identify.DirOptions{})
	require.NoError(t, err)
	assert.False(t, res.Exact)
	assert.Equal(t, mapping.ProfileMain, res.Best.Profile)
	assert.Equal(t, 1, res.Best.Differences)
	assert.Equal(t, 1, res.Best.Missing)
	require.Len(t, res.ClosestReport().Diffs, 1)
	assert.Equal(t, compare.DiffMissing, res.ClosestReport().Diffs[0].Kind)

	_, err = identify.Dir(context.Background(), filepath.Join(t.TempDir(), "none"), c, identify.DirOptions{})
	require.Error(t, err)
}

package identify_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builtMain builds the small fixture with main's profile (the fused GDN
// decode's neg_exp_A_fp32 = −exp(A_log) in FLOAT32) and returns the
// source, the cache root and the plan.
func builtMain(t *testing.T) (string, string, *mapping.Plan) {
	t.Helper()
	src, c, _ := fixture(t, synth.Small())
	p, err := mapping.Builtin(mapping.ProfileMain)
	require.NoError(t, err)
	plan, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "cache")
	_, err = build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, NoSync: true})
	require.NoError(t, err)
	return src, out, plan
}

// filesOf are the plan's files whose target ends in suffix, relative to
// the cache folder, with their targets.
func filesOf(plan *mapping.Plan, suffix string) map[string]string {
	out := map[string]string{}
	for _, e := range plan.Entries {
		if strings.HasSuffix(e.Target, suffix) {
			out[strings.TrimPrefix(e.File, plan.CacheDir+"/")] = e.Target
		}
	}
	return out
}

// nudge moves element 1 of every shard of each file by ulps.
func nudge(t *testing.T, cdir string, files map[string]string, ulps int32) {
	t.Helper()
	for f := range files {
		_, err := cachetest.NudgeF32(filepath.Join(cdir, filepath.FromSlash(f)), 1, ulps)
		require.NoError(t, err)
	}
}

// identify --source of a cache whose neg_exp_A_fp32 values are one ulp
// from ckpt's is exact, its report listing the files within 1 ulp; 2 ulp
// in one file is a data difference of the closest candidate (cache/check's
// TestCompareWithinULP holds cache compare and verify --read-data to the
// same).
func TestFolderWithinULP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, out, plan := builtMain(t)
	negExp := filesOf(plan, "/neg_exp_A_fp32")
	require.Len(t, negExp, 3)
	stackRoot := copyTree(t, out)
	stack := cache.FolderOf(stackRoot, plan.CacheDir).Path()
	nudge(t, stack, negExp, 1)
	require.NoError(t, cachetest.Rehash(stackRoot, plan.CacheDir))

	c, _ := openPlan(t, src)
	id, err := identify.Dir(ctx, stack, c, identify.DirOptions{Profiles: []string{mapping.ProfileMain}, Data: true, Workers: 2})
	require.NoError(t, err)
	assert.True(t, id.Exact, "%v", id.ClosestReport().Diffs)
	assert.Len(t, id.ClosestReport().Tolerated, 3)
	assert.Len(t, id.Report.Tolerated, 3)

	var f2 string
	for f := range negExp {
		f2 = f
		break
	}
	_, err = cachetest.NudgeF32(filepath.Join(stack, filepath.FromSlash(f2)), 1, 1)
	require.NoError(t, err)
	require.NoError(t, cachetest.Rehash(stackRoot, plan.CacheDir))
	id, err = identify.Dir(ctx, stack, c, identify.DirOptions{Profiles: []string{mapping.ProfileMain}, Data: true, Workers: 2})
	require.NoError(t, err)
	assert.False(t, id.Exact)
	assert.Equal(t, 2, id.Candidates[0].Data)
}

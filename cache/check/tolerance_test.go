package check_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/compare"
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

// A cache whose neg_exp_A_fp32 values are one ulp from ckpt's (what the
// serving host's torch writes for ~1 % of inputs) is the same within
// 1 ulp for every data comparison — cache compare (with the ckpt
// manifest on one side, and with none), identify --source and verify
// --read-data — and says so per file, never "identical"; 2 ulp is a
// difference naming the file, target and byte; every other file,
// dt_bias_fp32 in FLOAT32 too, stays byte-exact. Before the tolerance
// every one of these comparisons reported the 1-ulp files as data
// differences.
func TestCompareWithinULP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, out, plan := builtMain(t)
	cdir := cache.FolderOf(out, plan.CacheDir).Path()
	negExp := filesOf(plan, "/neg_exp_A_fp32")
	require.Len(t, negExp, 3)

	stackRoot := copyTree(t, out)
	stack := cache.FolderOf(stackRoot, plan.CacheDir).Path()
	nudge(t, stack, negExp, 1)
	require.NoError(t, cachetest.Rehash(stackRoot, plan.CacheDir))

	checkWithin := func(rep *compare.Report, what string) {
		t.Helper()
		assert.True(t, rep.Same(), "%s: %v", what, rep.Diffs)
		require.Len(t, rep.Tolerated, 3, what)
		for _, tol := range rep.Tolerated {
			assert.Contains(t, negExp, tol.File, what)
			assert.Equal(t, negExp[tol.File], tol.Target, what)
			assert.Equal(t, mapping.OpNegExp, tol.Tolerance.Op)
			assert.Equal(t, uint64(1), tol.Tolerance.ULP)
			assert.Equal(t, int64(2), tol.Elements, "%s: one element of each of the two shards", what)
			assert.Equal(t, uint64(1), tol.MaxULP)
			assert.Contains(t, tol.Message, "data equal within 1 ulp, not bit for bit")
			assert.NotContains(t, tol.Message, "identical")
		}
	}
	for _, tc := range []struct {
		name       string
		noManifest bool
	}{{"ckpt manifest on A", false}, {"no manifest on either side (every built-in profile's rules)", true}} {
		a := cdir
		if tc.noManifest {
			a = filepath.Join(copyTree(t, cdir))
			require.NoError(t, os.Remove(filepath.Join(a, cache.ManifestName)))
			b := copyTree(t, stack)
			require.NoError(t, os.Remove(filepath.Join(b, cache.ManifestName)))
			rep, err := compare.Dirs(ctx, a, b, compare.DirsOptions{})
			require.NoError(t, err)
			checkWithin(rep, tc.name)
			assert.Equal(t, rep.Common-3, rep.Identical, tc.name)
			continue
		}
		rep, err := compare.Dirs(ctx, a, stack, compare.DirsOptions{ChunkBytes: 4096})
		require.NoError(t, err)
		checkWithin(rep, tc.name)
		assert.Equal(t, rep.Common-3, rep.Identical, "the files within 1 ulp are not identical")
		// The roots (the folder's path inside) name the same files.
		rep, err = compare.Dirs(ctx, out, stackRoot, compare.DirsOptions{})
		require.NoError(t, err)
		assert.True(t, rep.Same(), "%v", rep.Diffs)
		assert.Len(t, rep.Tolerated, 3)
	}

	// identify --source: in cache/identify's TestFolderWithinULP.

	// verify --read-data: ok, the files within 1 ulp named.
	res, err := check.Dir(ctx, stackRoot, check.DirOptions{Source: src, ReadData: true})
	require.NoError(t, err)
	assert.True(t, res.OK, "%v", res.Findings)
	assert.Len(t, res.Tolerated, 3)
	assert.Contains(t, res.Verdict(nil), "; the data of 3 file(s) equal within 1 ulp, not bit for bit (neg_exp: transcendental")

	// 2 ulp in one file: a data difference naming the file, target and
	// byte, in every comparison; the others stay within 1 ulp.
	var f2 string
	for f := range negExp {
		f2 = f
		break
	}
	_, err = cachetest.NudgeF32(filepath.Join(stack, filepath.FromSlash(f2)), 1, 1)
	require.NoError(t, err)
	require.NoError(t, cachetest.Rehash(stackRoot, plan.CacheDir))
	rep, err := compare.Dirs(ctx, cdir, stack, compare.DirsOptions{})
	require.NoError(t, err)
	require.False(t, rep.Same())
	require.Len(t, rep.Diffs, 2, "both shards of the file")
	for _, d := range rep.Diffs {
		assert.Equal(t, compare.DiffData, d.Kind)
		assert.Equal(t, f2, d.File)
		assert.Equal(t, negExp[f2], d.Target)
		require.NotNil(t, d.FirstByte)
		assert.Equal(t, int64(4), *d.FirstByte)
		require.NotNil(t, d.Tolerance)
		assert.Equal(t, mapping.OpNegExp, d.Tolerance.Op)
		assert.Contains(t, d.Message, "differs by more than 1 ulp")
		assert.Contains(t, d.Message, "2 ulp apart")
	}
	assert.Len(t, rep.Tolerated, 2)
	res, err = check.Dir(ctx, stackRoot, check.DirOptions{Source: src, ReadData: true})
	require.NoError(t, err)
	assert.False(t, res.OK)
	require.Len(t, res.Findings, 2, "both shards of the file")
	for _, f := range res.Findings {
		assert.Equal(t, check.FindingData, f.ID)
		assert.Equal(t, plan.CacheDir+"/"+f2, f.File())
		assert.Contains(t, f.Message, "(target "+negExp[f2]+")")
		assert.Contains(t, f.Message, "differs by more than 1 ulp (the tolerance of neg_exp) from byte 4")
	}

	// An exactly reproducible FLOAT32 file one ulp off is a difference.
	exact := copyTree(t, cdir)
	dtBias := filesOf(plan, "/dt_bias_fp32")
	require.Len(t, dtBias, 3)
	nudge(t, exact, dtBias, 1)
	rep, err = compare.Dirs(ctx, cdir, exact, compare.DirsOptions{})
	require.NoError(t, err)
	assert.Len(t, rep.Diffs, 6, "both shards of the three dt_bias_fp32 files")
	for _, d := range rep.Diffs {
		assert.Contains(t, dtBias, d.File)
		assert.Nil(t, d.Tolerance)
		assert.Contains(t, d.Message, "differs from byte 4")
	}
	assert.Empty(t, rep.Tolerated)
}

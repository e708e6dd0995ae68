package build_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wrong request is a *ckpt.UsageError with the CLI's message, refused
// before the source (which does not exist) is read.
func TestRunOptionsErrors(t *testing.T) {
	t.Parallel()
	plan := mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: "1x2"}
	tests := []struct {
		name string
		req  build.Options
		msg  string
	}{
		{"no out", build.Options{Plan: plan}, "cache build needs -o/--out DIR (or $TT_CACHE_PATH)"},
		{"nan", build.Options{Plan: plan, Out: "o", WriteOptions: build.WriteOptions{NaN: "avx"}}, `--nan: NaN style "avx": want vector or scalar`},
		{"device dram", build.Options{Plan: plan, Out: "o", DeviceDRAM: "0"}, `--device-dram: want a positive size, got "0"`},
		{"mesh", build.Options{Plan: mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: "2"}, Out: "o"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.req.Source = filepath.Join(t.TempDir(), "missing")
			if tc.msg != "" {
				err := tc.req.Validate()
				require.Error(t, err)
				assert.True(t, errors.Is(err, ckpt.ErrUsage), "%T", err)
				assert.Equal(t, tc.msg, err.Error())
			}
			rep, err := build.Run(context.Background(), tc.req)
			require.Error(t, err)
			assert.Nil(t, rep)
			assert.True(t, errors.Is(err, ckpt.ErrUsage), "%v", err)
			if tc.msg != "" {
				assert.Equal(t, tc.msg, err.Error())
			}
		})
	}
}

// Run makes the plan of the source, builds it and returns the
// document with the DRAM per device; a second build skips every file.
func TestRun(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(t.TempDir(), "cache")
	prog := ckpt.NewProgress()
	req := build.Options{Source: src, Plan: mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: "1x2"}, Out: out,
		WriteOptions: build.WriteOptions{Workers: 2, Progress: prog, Tool: "test"}}
	rep, err := build.Run(context.Background(), req)
	require.NoError(t, err)
	require.Nil(t, rep.Problems)
	require.NotNil(t, rep.Document)
	sum := rep.Document
	assert.Equal(t, len(rep.Plan.Entries), sum.Files)
	assert.Len(t, sum.Built, sum.Files)
	assert.Equal(t, out, sum.Out)
	assert.Equal(t, filepath.Join(cache.FolderOf(out, rep.Plan.CacheDir).Path(), cache.ManifestName), sum.Manifest)
	require.NotNil(t, sum.Memory)
	assert.Len(t, sum.PerDevice, 2)
	assert.Equal(t, rep.PlanWarnings, rep.Plan.GroupedWarnings())
	_, err = os.Stat(sum.Manifest)
	require.NoError(t, err)
	done, _, _ := prog.Snapshot()
	assert.Positive(t, done, "the build counts its work")

	rep, err = build.Run(context.Background(), req)
	require.NoError(t, err)
	assert.Empty(t, rep.Document.Built)
	assert.Equal(t, rep.Document.Files, rep.Document.Skipped)
}

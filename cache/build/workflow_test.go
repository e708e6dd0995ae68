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

// Options a caller other than the CLI gets wrong are a *ckpt.OptionError
// naming the field, refused before the source (which does not exist) is
// read; a plan request that is itself wrong is a usage error.
func TestRunOptionsErrors(t *testing.T) {
	t.Parallel()
	plan := mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: mapping.DefaultMesh}
	tests := []struct {
		name string
		req  build.Options
		msg  string
	}{
		{"no out", build.Options{Plan: plan}, "Options.Out is empty: want the cache root"},
		{"device dram", build.Options{Plan: plan, Out: "o", DeviceDRAM: -1}, "Options.DeviceDRAM is -1 bytes; want a positive size, or 0 for the board's"},
		{"profile", build.Options{Plan: mapping.PlanOptions{Profile: "nope"}, Out: "o"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.req.Source = filepath.Join(t.TempDir(), "missing")
			rep, err := build.Run(context.Background(), tc.req)
			require.Error(t, err)
			assert.Nil(t, rep)
			assert.True(t, errors.Is(err, ckpt.ErrUsage), "%v", err)
			if tc.msg != "" {
				var oe *ckpt.OptionError
				require.ErrorAs(t, err, &oe)
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
	req := build.Options{Source: src, Plan: mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: mapping.DefaultMesh}, Out: out,
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

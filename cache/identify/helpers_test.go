package identify_test

import (
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// fixture writes a checkpoint with opts, opens it and builds its plan.
func fixture(t *testing.T, opts synth.Options) (string, *ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	return cachetest.Fixture(t, opts)
}

func openPlan(t testing.TB, dir string) (*ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	return cachetest.OpenPlan(t, dir)
}

// copyTree copies a directory tree into a temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, cachetest.CopyTree(src, dst))
	return dst
}

package check_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
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

// checkAgainstMaterialize is cachetest.CheckAgainstMaterialize with the
// build's packer.
func checkAgainstMaterialize(t *testing.T, c *ckpt.Checkpoint, plan *mapping.Plan, out string) {
	t.Helper()
	cachetest.CheckAgainstMaterialize(t, c, plan, out, build.PackShard)
}

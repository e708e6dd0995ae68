package diff

import (
	"context"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// compareProbed is Compare with the test hook probe (hooks.probe): the
// tests' hooked call of the engine.
func compareProbed(ctx context.Context, base, ft *ckpt.Checkpoint, opt CompareOptions, probe *chunkProbe) (*Result, error) {
	return compare(ctx, base, ft, opt, hooks{probe: probe})
}

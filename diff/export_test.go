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

// The names the tests of package diff_test call that no other package
// needs.
var (
	// DiffConfig is diffConfig.
	DiffConfig = diffConfig
	// Groups is groupSummaries.
	Groups = groupSummaries
	// Wilson is wilson.
	Wilson = wilson
)

// Add is add.
func (s *Summary) Add(r Relation) { s.add(r) }

// Total is total.
func (s Summary) Total() int64 { return s.total() }

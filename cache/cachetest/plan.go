package cachetest

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// OpenPlan opens the checkpoint in dir and plans it with the built-in
// profile on a 1x2 mesh, the plan the cache tests build; the checkpoint is
// closed when tb's test ends.
func OpenPlan(tb testing.TB, dir string) (*ckpt.Checkpoint, *mapping.Plan) {
	tb.Helper()
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	if err != nil {
		tb.Fatalf("opening %s: %v", dir, err)
	}
	tb.Cleanup(func() { c.Close() })
	p, err := mapping.Builtin(mapping.BuiltinName)
	if err != nil {
		tb.Fatal(err)
	}
	plan, err := mapping.Build(c, p, mapping.Mesh{Rows: 1, Cols: 2})
	if err != nil {
		tb.Fatalf("planning %s: %v", dir, err)
	}
	return c, plan
}

package cachetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
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
	plan, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	if err != nil {
		tb.Fatalf("planning %s: %v", dir, err)
	}
	return c, plan
}

// Fixture writes a synthetic checkpoint with opts into a temporary
// directory of tb, opens it and plans it as OpenPlan does; it returns the
// checkpoint's directory too.
func Fixture(tb testing.TB, opts synth.Options) (string, *ckpt.Checkpoint, *mapping.Plan) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "src")
	if err := synth.Write(dir, opts); err != nil {
		tb.Fatalf("writing the fixture: %v", err)
	}
	c, plan := OpenPlan(tb, dir)
	return dir, c, plan
}

package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// update rewrites testdata/*.golden from the current output:
// go test ./cmd/ckpt -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// runApp runs the command line in-process and returns the exit code and
// what it printed.
func runApp(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Out: &out, Err: &errb, Getenv: os.Getenv, Now: fixedNow}
	code = app.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

// fixedNow is the clock of runApp: reports and contracts name this time,
// so that goldens do not change with the date.
func fixedNow() time.Time { return time.Date(2026, time.December, 1, 12, 0, 0, 0, time.UTC) }

// golden compares got with testdata/name (or rewrites it with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./cmd/ckpt -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), got)
}

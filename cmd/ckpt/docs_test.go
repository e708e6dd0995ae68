package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

//go:generate go test -run TestCLIReference -update

// referenceDir holds the CLI reference generated from the cobra commands.
const referenceDir = "../../docs/reference"

// genReference writes the Markdown reference of every command into dir.
func genReference(t *testing.T, dir string) {
	t.Helper()
	root := (&App{}).newRootCmd()
	root.DisableAutoGenTag = true // no date: the output depends only on the commands
	require.NoError(t, doc.GenMarkdownTree(root, dir))
}

// TestCLIReference fails when docs/reference is stale: it regenerates the
// reference into a temporary directory and compares every file. Run
// `go generate ./cmd/ckpt` (or this test with -update) to rewrite it.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	if *update {
		require.NoError(t, os.RemoveAll(referenceDir))
		require.NoError(t, os.MkdirAll(referenceDir, 0o755))
		genReference(t, referenceDir)
	}
	tmp := t.TempDir()
	genReference(t, tmp)
	want, err := os.ReadDir(tmp)
	require.NoError(t, err)
	got, err := os.ReadDir(referenceDir)
	require.NoError(t, err, "docs/reference is missing: run go generate ./cmd/ckpt")
	names := func(es []os.DirEntry) []string {
		var n []string
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	require.Equal(t, names(want), names(got), "docs/reference lists other commands: run go generate ./cmd/ckpt")
	for _, e := range want {
		w, err := os.ReadFile(filepath.Join(tmp, e.Name()))
		require.NoError(t, err)
		g, err := os.ReadFile(filepath.Join(referenceDir, e.Name()))
		require.NoError(t, err)
		assert.Equal(t, string(w), string(g), "docs/reference/%s is stale: run go generate ./cmd/ckpt", e.Name())
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

//go:generate go test -run TestCLIReference -update

// The generated documentation of the commands: the Markdown reference and
// the man pages (section 1).
const (
	referenceDir = "../../docs/reference"
	manDir       = "../../docs/man"
)

// manDate is the date in the man pages' footer: fixed, so that the pages
// depend only on the commands (bump it with the version).
var manDate = time.Date(2026, time.November, 30, 0, 0, 0, 0, time.UTC)

// genReference writes the Markdown reference of every command into dir.
func genReference(t *testing.T, dir string) {
	t.Helper()
	root := (&App{}).newRootCmd()
	root.DisableAutoGenTag = true // no date: the output depends only on the commands
	require.NoError(t, doc.GenMarkdownTree(root, dir))
}

// genMan writes a man page of every command into dir.
func genMan(t *testing.T, dir string) {
	t.Helper()
	root := (&App{}).newRootCmd()
	root.DisableAutoGenTag = true
	require.NoError(t, doc.GenManTree(root, &doc.GenManHeader{Title: "CKPT", Section: "1", Source: "ckpt " + Version, Manual: "ckpt manual", Date: &manDate}, dir))
}

// TestCLIReference fails when docs/reference or docs/man is stale: it
// regenerates them into a temporary directory and compares every file.
// Run `go generate ./cmd/ckpt` (or this test with -update) to rewrite them.
func TestCLIReference(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir string
		gen func(*testing.T, string)
	}{{referenceDir, genReference}, {manDir, genMan}} {
		name := strings.TrimPrefix(tc.dir, "../../")
		if *update {
			require.NoError(t, os.RemoveAll(tc.dir))
			require.NoError(t, os.MkdirAll(tc.dir, 0o755))
			tc.gen(t, tc.dir)
		}
		tmp := t.TempDir()
		tc.gen(t, tmp)
		want, err := os.ReadDir(tmp)
		require.NoError(t, err)
		got, err := os.ReadDir(tc.dir)
		require.NoError(t, err, "%s is missing: run go generate ./cmd/ckpt", name)
		names := func(es []os.DirEntry) []string {
			var n []string
			for _, e := range es {
				n = append(n, e.Name())
			}
			return n
		}
		require.Equal(t, names(want), names(got), "%s lists other commands: run go generate ./cmd/ckpt", name)
		for _, e := range want {
			w, err := os.ReadFile(filepath.Join(tmp, e.Name()))
			require.NoError(t, err)
			g, err := os.ReadFile(filepath.Join(tc.dir, e.Name()))
			require.NoError(t, err)
			assert.Equal(t, string(w), string(g), "%s/%s is stale: run go generate ./cmd/ckpt", name, e.Name())
		}
	}
}

// TestManPages: every command has a page, with its examples and flags.
func TestManPages(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	genMan(t, tmp)
	b, err := os.ReadFile(filepath.Join(tmp, "ckpt-verify.1"))
	require.NoError(t, err)
	page := string(b)
	assert.Contains(t, page, `.TH "CKPT" "1" "Nov 2026" "ckpt `+Version+`" "ckpt manual"`)
	assert.Contains(t, page, `\fB--arch\fP="auto"`)
	assert.Contains(t, page, "EXAMPLE")
	assert.NotContains(t, page, `\fB--profile`, "deprecated spellings are hidden")
	_, err = os.Stat(filepath.Join(tmp, "ckpt-cache-build.1"))
	require.NoError(t, err)
}

package main

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/ckpt-dev/ckpt"

// TestArchitectureLayers holds docs/architecture.md's layer table to the
// code: every package of the module is in the table, and each imports (in
// its non-test files, on every GOOS/GOARCH pair below) only packages of
// lower layers.
func TestArchitectureLayers(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	layers := parseLayers(t, string(doc))

	var pkgs []string
	require.NoError(t, filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "../.." && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel("../..", filepath.Dir(path))
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if len(pkgs) == 0 || pkgs[len(pkgs)-1] != rel {
				pkgs = append(pkgs, rel)
			}
		}
		return nil
	}))
	require.NotEmpty(t, pkgs)

	for _, p := range pkgs {
		lp, ok := layers[p]
		if !assert.True(t, ok, "package %s is not in the layer table of docs/architecture.md", p) {
			continue
		}
		for _, target := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
			ctx := build.Default
			ctx.GOOS, ctx.GOARCH = target[0], target[1]
			bp, err := ctx.ImportDir(filepath.Join("../..", filepath.FromSlash(p)), 0)
			if err != nil {
				continue // no files for this target (e.g. the unix-only bench)
			}
			for _, imp := range bp.Imports {
				if !strings.HasPrefix(imp, modulePath+"/") {
					continue
				}
				q := strings.TrimPrefix(imp, modulePath+"/")
				lq, ok := layers[q]
				if assert.True(t, ok, "%s imports %s, which is not in the layer table", p, q) {
					assert.Less(t, lq, lp, "%s (layer %d) imports %s (layer %d) on %s/%s: imports go to lower layers only", p, lp, q, lq, target[0], target[1])
				}
			}
		}
	}
}

// parseLayers reads the table between the layers markers: "| N | `pkg` `pkg` |".
func parseLayers(t *testing.T, doc string) map[string]int {
	t.Helper()
	i := strings.Index(doc, "<!-- layers:begin -->")
	j := strings.Index(doc, "<!-- layers:end -->")
	require.True(t, i >= 0 && j > i, "docs/architecture.md has no layers table")
	row := regexp.MustCompile(`^\| (\d+) \| (.*) \|$`)
	name := regexp.MustCompile("`([^`]+)`")
	layers := map[string]int{}
	for _, line := range strings.Split(doc[i:j], "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		for _, p := range name.FindAllStringSubmatch(m[2], -1) {
			_, dup := layers[p[1]]
			require.False(t, dup, "package %s is twice in the layer table", p[1])
			layers[p[1]] = n
		}
	}
	require.NotEmpty(t, layers)
	return layers
}

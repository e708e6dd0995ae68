package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsNameCode holds the docs to the code: every Go name the docs
// spell in code spans as pkg.Name or pkg.Name.Member, where pkg is the
// name of one of the module's packages, is declared there (a top-level
// name, a method or a struct field), so that a rename cannot leave the
// docs naming what no longer exists.
func TestDocsNameCode(t *testing.T) {
	t.Parallel()
	names := map[string]map[string]bool{} // package name → declared names
	require.NoError(t, filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != "../.." && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := path.Base(filepath.ToSlash(filepath.Dir(p)))
		if f.Name.Name == "main" {
			return nil
		}
		if names[pkg] == nil {
			names[pkg] = map[string]bool{}
		}
		declared(f, names[pkg])
		return nil
	}))
	require.Contains(t, names, "mapping")

	docs, err := filepath.Glob("../../docs/*.md")
	require.NoError(t, err)
	docs = append(docs, "../../README.md")
	span := regexp.MustCompile("`[^`\n]+`")
	ref := regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Z][A-Za-z0-9_]*))?`)
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		var missing []string
		for _, s := range span.FindAllString(string(b), -1) {
			for _, m := range ref.FindAllStringSubmatch(s, -1) {
				decl, ok := names[m[1]]
				if !ok {
					continue
				}
				checked++
				if !decl[m[2]] || (m[3] != "" && !decl[m[3]]) {
					missing = append(missing, m[0])
				}
			}
		}
		sort.Strings(missing)
		assert.Empty(t, missing, "%s names Go names the code does not declare", doc)
	}
	assert.Greater(t, checked, 100, "the docs' code spans name the packages' Go names")
}

// declared adds to set the names f declares: top-level names, methods and
// the fields of its struct types.
func declared(f *ast.File, set map[string]bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			set[d.Name.Name] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					set[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								set[n.Name] = true
							}
							if len(fl.Names) == 0 { // embedded: its type's name
								if id, ok := ast.Unparen(fl.Type).(*ast.Ident); ok {
									set[id.Name] = true
								}
							}
						}
					}
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								set[n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						set[n.Name] = true
					}
				}
			}
		}
	}
}

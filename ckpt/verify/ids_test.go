package verify_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// findingIDs are the values of the ckpt.FindingID constants declared in
// the non-test Go files of dir.
func findingIDs(t *testing.T, dir string, typ string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var ids []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				if vs.Type == nil || types(vs.Type) != typ {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					require.True(t, ok, "%s: a finding id is a string literal", name)
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					ids = append(ids, s)
				}
			}
		}
	}
	return ids
}

func types(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return types(x.X) + "." + x.Sel.Name
	}
	return ""
}

// TestFindingIDsDocumented: every finding id constant of verify, of the
// contract comparison and of the core reader is listed in the package doc (go doc ./ckpt/verify, which
// docs/cli.md points to), and the doc lists no id that has no constant.
func TestFindingIDsDocumented(t *testing.T) {
	t.Parallel()
	ids := append(findingIDs(t, ".", "ckpt.FindingID"), findingIDs(t, "..", "FindingID")...)
	ids = append(ids, findingIDs(t, "../contract", "ckpt.FindingID")...)
	require.Greater(t, len(ids), 40)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments)
	require.NoError(t, err)
	doc := f.Doc.Text()
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(?:index|file|header|fp8|scheme|arch|data|cache|contract)\.[a-z0-9_]+\b`).FindAllString(doc, -1) {
		listed[m] = true
	}
	known := map[string]bool{}
	for _, id := range ids {
		known[id] = true
		assert.True(t, listed[id], "%s is not in the package doc", id)
	}
	for id := range listed {
		assert.True(t, known[id], "the package doc lists %s, which is no finding id constant", id)
	}
}

// TestFindingIDsList: FindingIDs (the ids --allow-finding takes) holds
// every finding id constant of verify, of the contract comparison and of
// the core reader, once.
func TestFindingIDsList(t *testing.T) {
	t.Parallel()
	ids := append(findingIDs(t, ".", "ckpt.FindingID"), findingIDs(t, "..", "FindingID")...)
	ids = append(ids, findingIDs(t, "../contract", "ckpt.FindingID")...)
	var got []string
	for _, id := range verify.FindingIDs() {
		got = append(got, string(id))
	}
	assert.ElementsMatch(t, ids, got)
}

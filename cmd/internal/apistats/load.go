package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// listed is the part of `go list -json` that the loader reads.
type listed struct {
	ImportPath     string
	Dir            string
	Name           string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	TestGoFiles    []string
	XTestGoFiles   []string
	Imports        []string
	TestImports    []string
	XTestImports   []string
	Export         string
	Error          *struct{ Err string }
}

// pkg is one package of the module: its files parsed once, and type-checked
// as the product (GoFiles) and, when it has tests, as the test variant
// (GoFiles + TestGoFiles) and the external test package (XTestGoFiles).
type pkg struct {
	Path string // import path
	Rel  string // path relative to the module root, "." for the root
	Name string
	Dir  string

	Files        []*ast.File // product files of this GOOS/GOARCH
	IgnoredFiles []*ast.File // product files of other targets (parsed, not type-checked)
	TestFiles    []*ast.File // in-package _test.go files
	XTestFiles   []*ast.File // package x_test files

	Types     *types.Package // the product
	TestTypes *types.Package // the test variant, or Types when there are no in-package tests
	Imports   []string       // module-relative imports of the product files
}

// program is the loaded module.
type program struct {
	Root    string // module root directory
	Module  string // module path
	Fset    *token.FileSet
	Pkgs    []*pkg // sorted by Rel
	byPath  map[string]*pkg
	Info    *types.Info // uses, defs, types and selections of every check
	isTest  map[*ast.File]bool
	errs    []error // type errors (tolerated: the checks go on)
	fileOf  map[string]*ast.File
	extPkgs map[string]*types.Package
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// decodeList reads the JSON stream of go list.
func decodeList(b []byte) ([]listed, error) {
	var out []listed
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list output: %w", err)
		}
		out = append(out, l)
	}
}

// findRoot walks up from dir to the directory holding go.mod.
func findRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod in %s or above", dir)
		}
		d = parent
	}
}

// load lists, parses and type-checks every package of the module at root.
// Type errors do not stop it (they are counted): the measures need names,
// not a build.
func load(root string) (*program, error) {
	modOut, err := goCmd(root, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return nil, err
	}
	p := &program{
		Root:   root,
		Module: strings.TrimSpace(string(modOut)),
		Fset:   token.NewFileSet(),
		byPath: map[string]*pkg{},
		Info: &types.Info{
			Uses:       map[*ast.Ident]types.Object{},
			Defs:       map[*ast.Ident]types.Object{},
			Types:      map[ast.Expr]types.TypeAndValue{},
			Selections: map[*ast.SelectorExpr]*types.Selection{},
		},
		isTest:  map[*ast.File]bool{},
		fileOf:  map[string]*ast.File{},
		extPkgs: map[string]*types.Package{},
	}
	fields := "ImportPath,Dir,Name,GoFiles,CgoFiles,IgnoredGoFiles,TestGoFiles,XTestGoFiles,Imports,TestImports,XTestImports,Error"
	out, err := goCmd(root, "list", "-e", "-json="+fields, "./...")
	if err != nil {
		return nil, err
	}
	list, err := decodeList(out)
	if err != nil {
		return nil, err
	}
	ext := map[string]bool{}
	for _, l := range list {
		if l.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", l.ImportPath, l.Error.Err)
		}
		rel, err := filepath.Rel(root, l.Dir)
		if err != nil {
			return nil, err
		}
		k := &pkg{Path: l.ImportPath, Rel: filepath.ToSlash(rel), Name: l.Name, Dir: l.Dir}
		parse := func(names []string, test bool) ([]*ast.File, error) {
			var fs []*ast.File
			for _, n := range names {
				if !strings.HasSuffix(n, ".go") {
					continue
				}
				f, err := p.parse(filepath.Join(l.Dir, n), test)
				if err != nil {
					return nil, err
				}
				fs = append(fs, f)
			}
			return fs, nil
		}
		if k.Files, err = parse(append(append([]string(nil), l.GoFiles...), l.CgoFiles...), false); err != nil {
			return nil, err
		}
		if k.IgnoredFiles, err = parse(l.IgnoredGoFiles, false); err != nil {
			return nil, err
		}
		// IgnoredGoFiles holds ignored test files too: keep the product ones.
		var prod []*ast.File
		for _, f := range k.IgnoredFiles {
			if !strings.HasSuffix(p.Fset.File(f.Pos()).Name(), "_test.go") {
				prod = append(prod, f)
			}
		}
		k.IgnoredFiles = prod
		if k.TestFiles, err = parse(l.TestGoFiles, true); err != nil {
			return nil, err
		}
		if k.XTestFiles, err = parse(l.XTestGoFiles, true); err != nil {
			return nil, err
		}
		for _, imp := range l.Imports {
			if rel, ok := p.rel(imp); ok {
				k.Imports = append(k.Imports, rel)
			}
		}
		for _, imps := range [][]string{l.Imports, l.TestImports, l.XTestImports} {
			for _, imp := range imps {
				if !strings.HasPrefix(imp, p.Module+"/") && imp != p.Module && imp != "unsafe" && imp != "C" {
					ext[imp] = true
				}
			}
		}
		p.Pkgs = append(p.Pkgs, k)
		p.byPath[k.Path] = k
	}
	sort.Slice(p.Pkgs, func(i, j int) bool { return p.Pkgs[i].Rel < p.Pkgs[j].Rel })

	gc, err := exportImporter(root, p.Fset, ext)
	if err != nil {
		return nil, err
	}

	// The products, in import order.
	done := map[string]bool{}
	var check func(k *pkg, stack map[string]bool) error
	check = func(k *pkg, stack map[string]bool) error {
		if done[k.Path] {
			return nil
		}
		if stack[k.Path] {
			return fmt.Errorf("import cycle through %s", k.Path)
		}
		stack[k.Path] = true
		for _, rel := range k.Imports {
			if err := check(p.byPath[p.abs(rel)], stack); err != nil {
				return err
			}
		}
		k.Types = p.check(k.Path, k.Files, gc, nil, nil)
		k.TestTypes = k.Types
		done[k.Path] = true
		return nil
	}
	for _, k := range p.Pkgs {
		if err := check(k, map[string]bool{}); err != nil {
			return nil, err
		}
	}
	// The test variants and external test packages.
	for _, k := range p.Pkgs {
		if len(k.TestFiles) > 0 {
			k.TestTypes = p.check(k.Path, append(append([]*ast.File(nil), k.Files...), k.TestFiles...), gc, nil, nil)
		}
		if len(k.XTestFiles) > 0 {
			p.check(k.Path+"_test", k.XTestFiles, gc, k, map[string]*types.Package{})
		}
	}
	return p, nil
}

// exportImporter returns an importer of the packages ext (outside the
// module) from the export data the go command builds into its cache.
func exportImporter(root string, fset *token.FileSet, ext map[string]bool) (types.Importer, error) {
	exports := map[string]string{}
	if len(ext) > 0 {
		args := []string{"list", "-e", "-export", "-json=ImportPath,Export,Error"}
		for imp := range ext {
			args = append(args, imp)
		}
		sort.Strings(args[4:])
		out, err := goCmd(root, args...)
		if err != nil {
			return nil, err
		}
		el, err := decodeList(out)
		if err != nil {
			return nil, err
		}
		for _, l := range el {
			if l.Error != nil || l.Export == "" {
				return nil, fmt.Errorf("no export data for %s", l.ImportPath)
			}
			exports[l.ImportPath] = l.Export
		}
	}
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}), nil
}

// parse reads one file with its comments.
func (p *program) parse(path string, test bool) (*ast.File, error) {
	if f, ok := p.fileOf[path]; ok {
		return f, nil
	}
	f, err := parser.ParseFile(p.Fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	p.fileOf[path] = f
	p.isTest[f] = test
	return f, nil
}

// rel is the module-relative path of a module import path.
func (p *program) rel(imp string) (string, bool) {
	if imp == p.Module {
		return ".", true
	}
	if r, ok := strings.CutPrefix(imp, p.Module+"/"); ok {
		return r, true
	}
	return "", false
}

// abs is the import path of a module-relative path.
func (p *program) abs(rel string) string {
	if rel == "." {
		return p.Module
	}
	return p.Module + "/" + rel
}

// moduleImporter resolves module packages to the checked products and
// others to export data. For the external tests of under, it resolves under
// to its test variant and, as the go command does, checks again against it
// the module packages that import under (kept in again).
type moduleImporter struct {
	p     *program
	gc    types.Importer
	under *pkg
	again map[string]*types.Package
}

func (m moduleImporter) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if k, ok := m.p.byPath[path]; ok {
		if m.under != nil && k == m.under {
			return k.TestTypes, nil
		}
		if k.Types == nil {
			return nil, fmt.Errorf("%s is not checked yet", path)
		}
		if m.under != nil && m.under.TestTypes != m.under.Types && m.p.dependsOn(k, m.under) {
			if t, ok := m.again[path]; ok {
				return t, nil
			}
			t := m.p.check(path, k.Files, m.gc, m.under, m.again)
			m.again[path] = t
			return t, nil
		}
		return k.Types, nil
	}
	if t, ok := m.p.extPkgs[path]; ok {
		return t, nil
	}
	t, err := m.gc.Import(path)
	if err == nil {
		m.p.extPkgs[path] = t
	}
	return t, err
}

// dependsOn says whether k imports dep, directly or not.
func (p *program) dependsOn(k, dep *pkg) bool {
	seen := map[string]bool{}
	var walk func(k *pkg) bool
	walk = func(k *pkg) bool {
		for _, rel := range k.Imports {
			if rel == dep.Rel {
				return true
			}
			if !seen[rel] {
				seen[rel] = true
				if walk(p.byPath[p.abs(rel)]) {
					return true
				}
			}
		}
		return false
	}
	return walk(k)
}

// check type-checks files as the package path.
func (p *program) check(path string, files []*ast.File, gc types.Importer, under *pkg, again map[string]*types.Package) *types.Package {
	conf := types.Config{
		Importer: moduleImporter{p: p, gc: gc, under: under, again: again},
		Error:    func(err error) { p.errs = append(p.errs, err) },
	}
	t, _ := conf.Check(path, p.Fset, files, p.Info)
	return t
}

// fileName is the file name of a node's position.
func (p *program) fileName(n token.Pos) string {
	return p.Fset.File(n).Name()
}

// relPos is "dir/file.go:line" of a position, relative to the module root.
func (p *program) relPos(pos token.Pos) string {
	ps := p.Fset.Position(pos)
	r, err := filepath.Rel(p.Root, ps.Filename)
	if err != nil {
		r = ps.Filename
	}
	return fmt.Sprintf("%s:%d", filepath.ToSlash(r), ps.Line)
}

// relFile is the module-relative name of a file.
func (p *program) relFile(f *ast.File) string {
	r, err := filepath.Rel(p.Root, p.fileName(f.Pos()))
	if err != nil {
		return p.fileName(f.Pos())
	}
	return filepath.ToSlash(r)
}

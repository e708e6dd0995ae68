package main

import (
	"go/ast"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Thresholds of the size figures (issue #37's Done-when).
const (
	maxFileLines = 800
	maxFuncLines = 150
	maxLineChars = 160
)

// Report is everything apistats measures, as printed by -json.
type Report struct {
	Module     string   `json:"module"`
	Commit     string   `json:"commit,omitempty"`
	TypeErrors []string `json:"type_errors"` // tolerated errors of the type checks

	// Packages are the library packages (the module's packages outside
	// cmd/), sorted by path.
	Packages []PackageStats `json:"packages"`
	Totals   ExportCounts   `json:"totals"`

	Commands   []Command `json:"commands"`    // cmd/ckpt's commands and the library workflows each runs
	EntryNames []string  `json:"entry_names"` // the distinct names of those workflows

	LargeFiles []Sized `json:"large_files"` // product files over maxFileLines lines
	LargeFuncs []Sized `json:"large_funcs"` // product functions over maxFuncLines lines
	LongLines  []Count `json:"long_lines"`  // lines over maxLineChars characters, per package (cmd/internal's too), tests and generated files left out

	RequestTypes    []RequestType `json:"request_types"`    // library types named *Request
	ValidateMethods []Site        `json:"validate_methods"` // library methods named Validate
	ValidateCalls   []Site        `json:"validate_calls"`   // calls of a Validate method inside library code

	Defaults []DefaultGroup `json:"defaults"` // default values spelled as a literal at more than one place
	Parsers  []ParserUse    `json:"parsers"`  // parse functions called from more than one product place

	FlagLines   int     `json:"flag_lines"`   // library product lines with a string literal naming a --flag
	FlagNames   []Count `json:"flag_names"`   // the flag names those literals name, with their line counts
	FlagSites   []Site  `json:"flag_sites"`   // the lines
	NameClashes []Clash `json:"name_clashes"` // exported top-level names declared in more than one library package

	TestImports []TestImport `json:"test_imports"` // test files importing a module package of the same or a higher layer
}

// ExportCounts classifies exported names by who names them.
type ExportCounts struct {
	Exported int `json:"exported"` // top-level names, methods and fields of exported types, interface methods
	TopLevel int `json:"top_level"`
	Methods  int `json:"methods"`
	Fields   int `json:"fields"`
	// OtherProduct: named by the product code of another package of the
	// module; the rest are named by no other package's product code:
	OtherProduct int `json:"other_product"`
	OwnOnly      int `json:"own_only"`   // named only by the package's own product code (and maybe tests)
	TestsOnly    int `json:"tests_only"` // named by no product code, only by tests
	Unnamed      int `json:"unnamed"`    // named nowhere besides its declaration
	// Implicit are methods among OwnOnly+TestsOnly+Unnamed that implement
	// a method of an interface (used without being named); JSONFields the
	// fields among them with a json tag.
	Implicit     int `json:"implicit"`
	JSONFields   int `json:"json_fields"`
	Undocumented int `json:"undocumented"` // exported top-level names and methods without a doc comment
	// The same classes without the fields: top-level names and methods.
	TopLevelMethodsNotOther  int `json:"top_level_methods_not_other"`
	TopLevelMethodsTestsOnly int `json:"top_level_methods_tests_only"`
	TopLevelMethodsUnnamed   int `json:"top_level_methods_unnamed"`
}

// PackageStats are one library package's figures.
type PackageStats struct {
	Path      string `json:"path"` // module-relative
	Files     int    `json:"files"`
	Lines     int    `json:"lines"` // product lines, every target's files
	Examples  int    `json:"examples"`
	ReExports int    `json:"re_exports"` // exported names that only rename another module package's
	ExportCounts
	// OwnNames are the top-level names and methods (not fields, not
	// interface methods) named only by the package's own product code.
	OwnNames       []string `json:"own_names"`
	TestsOnlyNames []string `json:"tests_only_names"`
	UnnamedNames   []string `json:"unnamed_names"`
}

// Command is one command of cmd/ckpt and the library workflows its RunE
// reaches (functions of library packages that take a context.Context or a
// *Request / *Options value).
type Command struct {
	Name      string   `json:"name"`
	Workflows []string `json:"workflows"` // "pkg.Func"
}

// Sized is a file or function and its length in lines.
type Sized struct {
	Name  string `json:"name"` // file, or "file: Func" / "file: (T).M"
	Lines int    `json:"lines"`
}

// Count is a name and a number.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Site is a place in the code.
type Site struct {
	Pos  string `json:"pos"`  // file:line
	In   string `json:"in"`   // enclosing function
	What string `json:"what"` // what is there
}

// RequestType is a library type named *Request.
type RequestType struct {
	Name    string `json:"name"` // pkg.Type
	Fields  int    `json:"fields"`
	Strings int    `json:"strings"` // fields of type string or []string
}

// DefaultGroup is one default value and the places that spell it.
type DefaultGroup struct {
	Value   string `json:"value"`
	Written int    `json:"written"` // sites spelling it as a literal
	Sites   []Site `json:"sites"`
}

// ParserUse is a parsing function and its product call sites.
type ParserUse struct {
	Func     string `json:"func"`
	Sites    []Site `json:"sites"`    // What is the calling package
	Packages int    `json:"packages"` // how many packages call it
}

// Clash is an exported top-level name declared in several packages.
type Clash struct {
	Name  string   `json:"name"`
	Decls []string `json:"decls"` // "pkg (kind)"
	Kinds bool     `json:"kinds"` // the kinds differ (a func in one, a type in another…)
}

// TestImport is a test file's import that goes to the same or a higher layer.
type TestImport struct {
	File      string `json:"file"`
	FileLayer int    `json:"file_layer"`
	Import    string `json:"import"`
	Layer     int    `json:"layer"`  // -1: not in the table
	Helper    bool   `json:"helper"` // Import makes test fixtures (isHelper)
}

// isLibrary says whether a module-relative package path is a library
// (outside cmd/).
func isLibrary(rel string) bool {
	return rel != "cmd" && !strings.HasPrefix(rel, "cmd/")
}

// isProduct says whether a package is product code for the default and
// parse figures (the libraries, cmd/ckpt and its internal packages; not the
// programs of cmd/internal).
func isProduct(rel string) bool {
	return !strings.HasPrefix(rel, "cmd/internal/")
}

// measure computes the report. layers is docs/architecture.md's table.
func measure(p *program, layers map[string]int) (*Report, error) {
	r := &Report{Module: p.Module, TypeErrors: []string{}}
	for _, e := range p.errs {
		r.TypeErrors = append(r.TypeErrors, e.Error())
	}
	u := p.users()
	ifaces := p.interfaces()
	var err error
	for _, k := range p.Pkgs {
		if !isLibrary(k.Rel) || k.Types == nil {
			continue
		}
		ps := PackageStats{Path: k.Rel}
		for _, f := range append(append([]*ast.File(nil), k.Files...), k.IgnoredFiles...) {
			ps.Files++
			ps.Lines += p.Fset.File(f.Pos()).LineCount()
		}
		for _, f := range append(append([]*ast.File(nil), k.TestFiles...), k.XTestFiles...) {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Example") {
					ps.Examples++
				}
			}
		}
		p.classify(k, u, ifaces, &ps)
		ps.Undocumented = p.undocumented(k)
		ps.ReExports = p.reExports(k)
		r.Packages = append(r.Packages, ps)
		t := &r.Totals
		for _, x := range [][2]*int{{&t.Exported, &ps.Exported}, {&t.TopLevel, &ps.TopLevel}, {&t.Methods, &ps.Methods}, {&t.Fields, &ps.Fields},
			{&t.OtherProduct, &ps.OtherProduct}, {&t.OwnOnly, &ps.OwnOnly}, {&t.TestsOnly, &ps.TestsOnly}, {&t.Unnamed, &ps.Unnamed},
			{&t.Implicit, &ps.Implicit}, {&t.JSONFields, &ps.JSONFields}, {&t.Undocumented, &ps.Undocumented},
			{&t.TopLevelMethodsNotOther, &ps.TopLevelMethodsNotOther}, {&t.TopLevelMethodsTestsOnly, &ps.TopLevelMethodsTestsOnly},
			{&t.TopLevelMethodsUnnamed, &ps.TopLevelMethodsUnnamed}} {
			*x[0] += *x[1]
		}
	}
	r.Commands, r.EntryNames = p.entryPoints()
	if r.LargeFiles, r.LargeFuncs, r.LongLines, err = p.sizes(); err != nil {
		return nil, err
	}
	r.RequestTypes, r.ValidateMethods, r.ValidateCalls = p.validation()
	r.Defaults = p.defaults()
	r.Parsers = p.parsers()
	r.FlagLines, r.FlagNames, r.FlagSites = p.flagLiterals()
	r.NameClashes = p.clashes()
	if r.TestImports, err = p.testImports(layers); err != nil {
		return nil, err
	}
	return r, nil
}

// isHelper says whether a package makes fixtures for tests: its name ends
// in "test" (ckpttest, sourcetest, cachetest), or it is ckpt/synth, which
// docs/architecture.md lists with them.
func isHelper(rel string) bool {
	return strings.HasSuffix(path.Base(rel), "test") || rel == "ckpt/synth"
}

// parseLayers reads docs/architecture.md's layers table ("| N | `pkg` … |"
// between the layers markers), as cmd/ckpt's architecture test does.
func parseLayers(doc string) (map[string]int, bool) {
	i := strings.Index(doc, "<!-- layers:begin -->")
	j := strings.Index(doc, "<!-- layers:end -->")
	if i < 0 || j < i {
		return nil, false
	}
	row := regexp.MustCompile(`^\| (\d+) \| (.*) \|$`)
	name := regexp.MustCompile("`([^`]+)`")
	layers := map[string]int{}
	for _, line := range strings.Split(doc[i:j], "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		for _, q := range name.FindAllStringSubmatch(m[2], -1) {
			layers[q[1]] = n
		}
	}
	return layers, len(layers) > 0
}

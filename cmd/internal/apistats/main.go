// Command apistats prints the figures of the module's API and layout that
// issue #37 (parse once, one name per entry point, an API on purpose) is
// measured by: exported names per library package and who names them, the
// library workflows each command of cmd/ckpt runs, the files and functions
// over the size limits, the Validate calls inside library code, the
// defaults spelled twice, the flag names in library messages, the test
// files that import upwards against docs/architecture.md's layers.
//
//	go run ./cmd/internal/apistats [-C DIR] [-json] [-v]
//
// It needs only the go command: the packages are listed with `go list`,
// parsed and type-checked from source (the imports outside the module from
// the go command's export data). Text output is Markdown; -json prints the
// Report document; -v adds the lists behind the counts.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	dir := flag.String("C", ".", "directory inside the module to measure")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	verbose := flag.Bool("v", false, "list the names and places behind each count")
	flag.Parse()
	if err := run(os.Stdout, *dir, *asJSON, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "apistats:", err)
		os.Exit(1)
	}
}

// run measures the module holding dir and prints the report to w.
func run(w io.Writer, dir string, asJSON, verbose bool) error {
	r, err := report(dir)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return printText(w, r, verbose)
}

// report loads and measures the module holding dir.
func report(dir string) (*Report, error) {
	root, err := findRoot(dir)
	if err != nil {
		return nil, err
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		return nil, fmt.Errorf("reading the layers table: %w", err)
	}
	layers, ok := parseLayers(string(doc))
	if !ok {
		return nil, fmt.Errorf("docs/architecture.md has no layers table")
	}
	p, err := load(root)
	if err != nil {
		return nil, err
	}
	r, err := measure(p, layers)
	if err != nil {
		return nil, err
	}
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		r.Commit = strings.TrimSpace(string(out))
	}
	return r, nil
}

// printText prints the report as Markdown sections.
func printText(w io.Writer, r *Report, verbose bool) error {
	b := &strings.Builder{}
	pf := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	commit := r.Commit
	if commit == "" {
		commit = "(no git)"
	}
	pf("# apistats: %s at %s\n\n", r.Module, commit)
	if len(r.TypeErrors) > 0 {
		pf("(%d type errors were tolerated: the figures may miss names)\n\n", len(r.TypeErrors))
		if verbose {
			for _, e := range r.TypeErrors {
				pf("- %s\n", e)
			}
			pf("\n")
		}
	}
	sections := []func(func(string, ...any), *Report, bool){printExports, printEntries, printSizes, printValidation,
		printDefaults, printFlags, printClashes, printTestImports}
	for _, section := range sections {
		section(pf, r, verbose)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// printExports prints the exported names per library package.
func printExports(pf func(string, ...any), r *Report, verbose bool) {
	pf("## Exported names per library package\n\n")
	pf("exported = top-level names + methods (of exported types, interface methods included) + fields of exported structs.\n")
	pf("other = named by another package's product code; own = only by its own product code; tests = by no product code, only tests;\n")
	pf("unnamed = nowhere; not other = own + tests + unnamed; implicit = methods among those that implement an interface;\n")
	pf("json = fields among them with a json tag; undoc = exported top-level names and methods without a doc comment;\n")
	pf("re-exp = names that only rename another module package's.\n\n")
	pf("| package | files | lines | exported | top-level | methods | fields | other | own | tests | unnamed | not other |")
	pf(" implicit | json | undoc | re-exp | examples |\n")
	pf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	row := func(name string, files, lines, examples, reexp int, c ExportCounts) {
		pf("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n",
			name, files, lines, c.Exported, c.TopLevel, c.Methods, c.Fields, c.OtherProduct, c.OwnOnly, c.TestsOnly, c.Unnamed,
			c.Exported-c.OtherProduct, c.Implicit, c.JSONFields, c.Undocumented, reexp, examples)
	}
	var files, lines, examples, reexp, noExample int
	for _, ps := range r.Packages {
		row("`"+ps.Path+"`", ps.Files, ps.Lines, ps.Examples, ps.ReExports, ps.ExportCounts)
		files += ps.Files
		lines += ps.Lines
		examples += ps.Examples
		reexp += ps.ReExports
		if ps.Examples == 0 {
			noExample++
		}
	}
	row(fmt.Sprintf("**%d packages**", len(r.Packages)), files, lines, examples, reexp, r.Totals)
	t := r.Totals
	pf("\nTop-level names and methods only (no fields): %d exported, %d named by no other package's product code, %d only by tests, %d nowhere.\n",
		t.TopLevel+t.Methods, t.TopLevelMethodsNotOther, t.TopLevelMethodsTestsOnly, t.TopLevelMethodsUnnamed)
	pf("\nPackages without a runnable example: %d of %d.\n\n", noExample, len(r.Packages))
	if !verbose {
		return
	}
	for _, ps := range r.Packages {
		if len(ps.OwnNames) > 0 {
			pf("- `%s` named only by its own product code (not fields or interface methods): %s\n", ps.Path, strings.Join(ps.OwnNames, ", "))
		}
		if len(ps.TestsOnlyNames) > 0 {
			pf("- `%s` named only by tests: %s\n", ps.Path, strings.Join(ps.TestsOnlyNames, ", "))
		}
		if len(ps.UnnamedNames) > 0 {
			pf("- `%s` named nowhere: %s\n", ps.Path, strings.Join(ps.UnnamedNames, ", "))
		}
	}
	pf("\n")
}

// printEntries prints the workflows of each command.
func printEntries(pf func(string, ...any), r *Report, _ bool) {
	pf("## Entry points: the library workflows each command runs\n\n")
	pf("| command | workflows |\n|---|---|\n")
	for _, c := range r.Commands {
		pf("| %s | %s |\n", c.Name, codeList(c.Workflows))
	}
	pf("\n%d distinct entry-point names: %s\n\n", len(r.EntryNames), codeList(r.EntryNames))
}

// printSizes prints the long files, functions and lines.
func printSizes(pf func(string, ...any), r *Report, _ bool) {
	pf("## Sizes (product code: not cmd/internal, not tests, not generated files)\n\n")
	pf("Files over %d lines: %d\n\n", maxFileLines, len(r.LargeFiles))
	for _, s := range r.LargeFiles {
		pf("- %s: %d\n", s.Name, s.Lines)
	}
	pf("\nFunctions over %d lines: %d\n\n", maxFuncLines, len(r.LargeFuncs))
	for _, s := range r.LargeFuncs {
		pf("- %s: %d\n", s.Name, s.Lines)
	}
	n, all := 0, 0
	var per []string
	for _, c := range r.LongLines {
		all += c.Count
		if isProduct(c.Name) {
			n += c.Count
		}
		per = append(per, fmt.Sprintf("%s %d", c.Name, c.Count))
	}
	pf("\nLines over %d characters: %d in product code, %d with cmd/internal (%s)\n\n", maxLineChars, n, all, strings.Join(per, ", "))
}

// printValidation prints the request types and the Validate calls.
func printValidation(pf func(string, ...any), r *Report, _ bool) {
	pf("## Requests and their validation\n\n")
	strs := 0
	for _, rt := range r.RequestTypes {
		if rt.Strings > 0 {
			strs++
		}
	}
	pf("Library types named *Request: %d (%d with string fields)\n\n", len(r.RequestTypes), strs)
	for _, rt := range r.RequestTypes {
		pf("- %s: %d fields, %d string\n", rt.Name, rt.Fields, rt.Strings)
	}
	pf("\nValidate methods in library code: %d\n\n", len(r.ValidateMethods))
	for _, s := range r.ValidateMethods {
		pf("- %s %s\n", s.Pos, s.What)
	}
	req := 0
	for _, s := range r.ValidateCalls {
		if strings.HasSuffix(s.What, "Request.Validate") {
			req++
		}
	}
	pf("\nValidate() calls inside library code: %d (%d of a *Request)\n\n", len(r.ValidateCalls), req)
	for _, s := range r.ValidateCalls {
		pf("- %s in %s: %s\n", s.Pos, s.In, s.What)
	}
	pf("\n")
}

// printDefaults prints the defaults written twice and the parsers called
// from several places.
func printDefaults(pf func(string, ...any), r *Report, verbose bool) {
	pf("## Defaults written more than once (product code)\n\n")
	pf("Values spelled as a literal at two or more default sites: %d\n\n", len(r.Defaults))
	for _, g := range r.Defaults {
		pf("- %s, written %d times:\n", g.Value, g.Written)
		for _, s := range g.Sites {
			pf("  - %s in %s: %s\n", s.Pos, s.In, s.What)
		}
	}
	pf("\nExported parse functions called from more than one place (product code): %d\n\n", len(r.Parsers))
	for _, u := range r.Parsers {
		pf("- %s: %d calls in %d packages\n", u.Func, len(u.Sites), u.Packages)
		if verbose {
			for _, s := range u.Sites {
				pf("  - %s in %s\n", s.Pos, s.In)
			}
		}
	}
	pf("\n")
}

// printFlags prints the flag names of library messages.
func printFlags(pf func(string, ...any), r *Report, verbose bool) {
	pf("## Flag names in library messages\n\n")
	pf("Library product lines with a string literal naming a --flag: %d\n\n", r.FlagLines)
	var fl []string
	for _, c := range r.FlagNames {
		fl = append(fl, fmt.Sprintf("%s %d", c.Name, c.Count))
	}
	pf("Flags named (lines): %s\n\n", strings.Join(fl, ", "))
	if verbose {
		for _, s := range r.FlagSites {
			pf("- %s in %s: %s\n", s.Pos, s.In, s.What)
		}
		pf("\n")
	}
}

// printClashes prints the names declared in several library packages.
func printClashes(pf func(string, ...any), r *Report, verbose bool) {
	pf("## Exported top-level names declared in more than one library package\n\n")
	kinds := 0
	for _, c := range r.NameClashes {
		if c.Kinds {
			kinds++
		}
	}
	pf("%d names, %d of them of different kinds%s\n\n", len(r.NameClashes), kinds, map[bool]string{true: ":", false: " (-v lists them all):"}[verbose])
	for _, c := range r.NameClashes {
		if !verbose && !c.Kinds {
			continue
		}
		mark := ""
		if c.Kinds {
			mark = " (kinds differ)"
		}
		pf("- %s%s: %s\n", c.Name, mark, strings.Join(c.Decls, ", "))
	}
	pf("\n")
}

// printTestImports prints the test imports that do not go down.
func printTestImports(pf func(string, ...any), r *Report, _ bool) {
	pf("## Test files importing upwards or sideways (docs/architecture.md's layers)\n\n")
	var up, side, helper int
	for _, t := range r.TestImports {
		switch {
		case t.Helper:
			helper++
		case t.Layer > t.FileLayer || t.Layer < 0:
			up++
		default:
			side++
		}
	}
	pf("Imports of a fixture package (cachetest, ckpttest, sourcetest, synth) of the same or a higher layer: %d\n", helper)
	pf("Imports of another package of a higher layer: %d; of the same layer: %d\n\n", up, side)
	for _, t := range r.TestImports {
		if t.Helper {
			continue
		}
		dir := "higher"
		if t.Layer == t.FileLayer {
			dir = "same"
		}
		pf("- %s (layer %d) imports %s (layer %d, %s)\n", t.File, t.FileLayer, t.Import, t.Layer, dir)
	}
}

// codeList is the names in backquotes, comma-separated.
func codeList(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

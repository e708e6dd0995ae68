package main

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// sizes finds the long files and functions and counts the long lines of
// the product code (generated files left out).
func (p *program) sizes() (files, funcs []Sized, long []Count, err error) {
	for _, k := range p.Pkgs {
		n := 0
		for _, f := range append(append([]*ast.File(nil), k.Files...), k.IgnoredFiles...) {
			if ast.IsGenerated(f) {
				continue
			}
			name := p.relFile(f)
			tf := p.Fset.File(f.Pos())
			b, err := os.ReadFile(tf.Name())
			if err != nil {
				return nil, nil, nil, err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if utf8.RuneCountInString(line) > maxLineChars {
					n++
				}
			}
			if !isProduct(k.Rel) {
				continue
			}
			if tf.LineCount() > maxFileLines {
				files = append(files, Sized{Name: name, Lines: tf.LineCount()})
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				lines := p.Fset.Position(fd.End()).Line - p.Fset.Position(fd.Pos()).Line + 1
				if lines > maxFuncLines {
					funcs = append(funcs, Sized{Name: name + ": " + funcName(fd), Lines: lines})
				}
			}
		}
		if n > 0 {
			long = append(long, Count{Name: k.Rel, Count: n})
		}
	}
	bySize := func(s []Sized) {
		sort.Slice(s, func(i, j int) bool {
			if s[i].Lines != s[j].Lines {
				return s[i].Lines > s[j].Lines
			}
			return s[i].Name < s[j].Name
		})
	}
	bySize(files)
	bySize(funcs)
	return files, funcs, long, nil
}

// funcName is "Func" or "(T).Method".
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil {
		return fd.Name.Name
	}
	return "(" + recvName(fd) + ")." + fd.Name.Name
}

// enclosing returns the function declaration of f that holds pos.
func enclosing(f *ast.File, pos token.Pos) string {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Pos() <= pos && pos < fd.End() {
			return funcName(fd)
		}
	}
	return "(package level)"
}

// productFiles calls fn for every product file of the packages keep accepts
// (this target's files: the type information is theirs).
func (p *program) productFiles(keep func(rel string) bool, fn func(k *pkg, f *ast.File)) {
	for _, k := range p.Pkgs {
		if !keep(k.Rel) {
			continue
		}
		for _, f := range k.Files {
			fn(k, f)
		}
	}
}

// validation finds the *Request types, the Validate methods and the calls
// of Validate inside library code.
func (p *program) validation() (reqs []RequestType, methods, calls []Site) {
	for _, k := range p.Pkgs {
		if !isLibrary(k.Rel) || k.Types == nil {
			continue
		}
		scope := k.Types.Scope()
		for _, n := range scope.Names() {
			tn, ok := scope.Lookup(n).(*types.TypeName)
			if !ok || !strings.HasSuffix(n, "Request") {
				continue
			}
			st, ok := tn.Type().Underlying().(*types.Struct)
			if !ok {
				continue
			}
			rt := RequestType{Name: path.Base(k.Rel) + "." + n, Fields: st.NumFields()}
			for i := 0; i < st.NumFields(); i++ {
				t := st.Field(i).Type()
				if sl, ok := t.(*types.Slice); ok {
					t = sl.Elem()
				}
				if b, ok := t.(*types.Basic); ok && b.Kind() == types.String {
					rt.Strings++
				}
			}
			reqs = append(reqs, rt)
		}
	}
	p.productFiles(isLibrary, func(k *pkg, f *ast.File) {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == "Validate" {
				methods = append(methods, Site{Pos: p.relPos(fd.Pos()), In: funcName(fd), What: path.Base(k.Rel) + "." + recvName(fd)})
			}
		}
		ast.Inspect(f, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Validate" {
				return true
			}
			fn, ok := p.Info.Uses[sel.Sel].(*types.Func)
			if !ok || fn.Type().(*types.Signature).Recv() == nil {
				return true
			}
			recv := types.TypeString(fn.Type().(*types.Signature).Recv().Type(), func(t *types.Package) string { return t.Name() })
			calls = append(calls, Site{Pos: p.relPos(call.Pos()), In: enclosing(f, call.Pos()), What: strings.TrimPrefix(recv, "*") + ".Validate"})
			return true
		})
	})
	return reqs, methods, calls
}

// pflagMethod matches the flag registrations of pflag.FlagSet (and of the
// interfaces cmd/ckpt declares over it); the value is the default.
var pflagMethod = regexp.MustCompile(`^(String|Bool|Int|Int8|Int16|Int32|Int64|Uint|Uint8|Uint16|Uint32|Uint64|` +
	`Float32|Float64|Duration|StringArray|StringSlice|IntSlice|Count|BytesHex|IP)(Var)?(P)?$`)

// defaults finds the default values of the product code and returns those
// spelled as a literal at more than one place. A default is: the default
// argument of a flag registration, an argument to a parameter whose name
// says default, the value assigned by `if x == zero { x = V }`, an argument
// after the first of cmp.Or.
func (p *program) defaults() []DefaultGroup {
	groups := map[string]*DefaultGroup{}
	add := func(f *ast.File, e ast.Expr, what string) {
		tv := p.Info.Types[e]
		if tv.Value == nil {
			return
		}
		v := tv.Value.ExactString()
		switch v {
		case `""`, "0", "false", "true", "1":
			return
		}
		g := groups[v]
		if g == nil {
			g = &DefaultGroup{Value: v}
			groups[v] = g
		}
		written := false
		ast.Inspect(e, func(x ast.Node) bool {
			if _, ok := x.(*ast.BasicLit); ok {
				written = true
			}
			return true
		})
		if written {
			g.Written++
		} else {
			what += " (" + types.ExprString(e) + ")"
		}
		g.Sites = append(g.Sites, Site{Pos: p.relPos(e.Pos()), In: enclosing(f, e.Pos()), What: what})
	}
	p.productFiles(isProduct, func(k *pkg, f *ast.File) {
		ast.Inspect(f, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.CallExpr:
				sel, _ := ast.Unparen(x.Fun).(*ast.SelectorExpr)
				var fn *types.Func
				switch fun := ast.Unparen(x.Fun).(type) {
				case *ast.SelectorExpr:
					fn, _ = p.Info.Uses[fun.Sel].(*types.Func)
				case *ast.Ident:
					fn, _ = p.Info.Uses[fun].(*types.Func)
				}
				if fn == nil {
					return true
				}
				if fn.Pkg() != nil && fn.Pkg().Path() == "cmp" && fn.Name() == "Or" {
					for _, a := range x.Args[1:] {
						add(f, a, "cmp.Or")
					}
					return true
				}
				sig := fn.Type().(*types.Signature)
				if m := pflagMethod.FindStringSubmatch(fn.Name()); m != nil && sel != nil && isFlagSet(sig.Recv()) {
					i := 1 // Name(name, value, usage)
					if m[2] != "" {
						i++
					}
					if m[3] != "" {
						i++
					}
					if m[1] == "Count" {
						return true
					}
					if i < len(x.Args) && len(x.Args) > 0 {
						name := ""
						if tv := p.Info.Types[x.Args[i-1-boolInt(m[3] != "")]]; tv.Value != nil && tv.Value.Kind() == constant.String {
							name = "--" + constant.StringVal(tv.Value)
						}
						add(f, x.Args[i], "flag "+name)
					}
					return true
				}
				for i := 0; i < sig.Params().Len() && i < len(x.Args); i++ {
					n := strings.ToLower(sig.Params().At(i).Name())
					if n == "def" || strings.Contains(n, "default") {
						add(f, x.Args[i], "argument "+sig.Params().At(i).Name()+" of "+fn.Name())
					}
				}
			case *ast.IfStmt:
				be, ok := x.Cond.(*ast.BinaryExpr)
				if !ok || be.Op != token.EQL {
					return true
				}
				if tv := p.Info.Types[be.Y]; tv.Value == nil || (tv.Value.ExactString() != `""` && tv.Value.ExactString() != "0") {
					return true
				}
				target := types.ExprString(be.X)
				for _, s := range x.Body.List {
					as, ok := s.(*ast.AssignStmt)
					if ok && as.Tok == token.ASSIGN && len(as.Lhs) == 1 && len(as.Rhs) == 1 && types.ExprString(as.Lhs[0]) == target {
						add(f, as.Rhs[0], "if "+target+" is zero")
					}
				}
			}
			return true
		})
	})
	var out []DefaultGroup
	for _, g := range groups {
		if g.Written > 1 {
			sort.Slice(g.Sites, func(i, j int) bool { return g.Sites[i].Pos < g.Sites[j].Pos })
			out = append(out, *g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// isFlagSet says whether a method's receiver is a pflag.FlagSet or an
// interface (cmd/ckpt declares interfaces over the FlagSet's methods).
func isFlagSet(recv *types.Var) bool {
	if recv == nil {
		return false
	}
	t := recv.Type()
	if pt, ok := t.(*types.Pointer); ok {
		t = pt.Elem()
	}
	if _, ok := t.Underlying().(*types.Interface); ok {
		return true
	}
	nt, ok := t.(*types.Named)
	return ok && nt.Obj().Pkg() != nil && nt.Obj().Pkg().Path() == "github.com/spf13/pflag"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parsers finds the module's exported parse functions called from more than
// one place of the product code: named Parse… or Compile…, or taking only
// strings (none named like a path) and returning a value and an error, and
// not named like a reader of files (Read…, Open…, Load…, Create…, Lock…).
func (p *program) parsers() []ParserUse {
	sites := map[token.Pos][]Site{}
	names := map[token.Pos]string{}
	p.productFiles(isProduct, func(k *pkg, f *ast.File) {
		ast.Inspect(f, func(x ast.Node) bool {
			call, ok := x.(*ast.CallExpr)
			if !ok {
				return true
			}
			var id *ast.Ident
			switch fun := ast.Unparen(call.Fun).(type) {
			case *ast.SelectorExpr:
				id = fun.Sel
			case *ast.Ident:
				id = fun
			}
			if id == nil {
				return true
			}
			fn, ok := p.Info.Uses[id].(*types.Func)
			if !ok || fn.Pkg() == nil || !strings.HasPrefix(fn.Pkg().Path(), p.Module) || !fn.Exported() || !isParser(fn) {
				return true
			}
			fn = fn.Origin()
			name := fn.Pkg().Name() + "." + fn.Name()
			if r := fn.Type().(*types.Signature).Recv(); r != nil {
				name = fn.Pkg().Name() + "." + strings.TrimPrefix(types.TypeString(r.Type(), func(*types.Package) string { return "" }), "*") + "." + fn.Name()
			}
			names[fn.Pos()] = name
			sites[fn.Pos()] = append(sites[fn.Pos()], Site{Pos: p.relPos(call.Pos()), In: enclosing(f, call.Pos()), What: k.Rel})
			return true
		})
	})
	var out []ParserUse
	for pos, s := range sites {
		if len(s) < 2 {
			continue
		}
		sort.Slice(s, func(i, j int) bool { return s[i].Pos < s[j].Pos })
		pkgs := map[string]bool{}
		for _, x := range s {
			pkgs[x.What] = true
		}
		out = append(out, ParserUse{Func: names[pos], Sites: s, Packages: len(pkgs)})
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Sites) != len(out[j].Sites) {
			return len(out[i].Sites) > len(out[j].Sites)
		}
		return out[i].Func < out[j].Func
	})
	return out
}

// isParser says whether fn parses text (see parsers).
func isParser(fn *types.Func) bool {
	n := fn.Name()
	if strings.HasPrefix(n, "Parse") || strings.HasPrefix(n, "Compile") {
		return true
	}
	for _, io := range []string{"Read", "Open", "Load", "Create", "Lock", "Write"} {
		if strings.HasPrefix(n, io) {
			return false
		}
	}
	sig := fn.Type().(*types.Signature)
	if sig.Recv() != nil || sig.Params().Len() == 0 || sig.Results().Len() != 2 {
		return false
	}
	if t, ok := sig.Results().At(1).Type().(*types.Named); !ok || t.Obj().Name() != "error" || t.Obj().Pkg() != nil {
		return false
	}
	for i := 0; i < sig.Params().Len(); i++ {
		v := sig.Params().At(i)
		if b, ok := v.Type().(*types.Basic); !ok || b.Kind() != types.String {
			return false
		}
		switch strings.ToLower(v.Name()) {
		case "dir", "path", "root", "file", "filename", "name":
			return false
		}
	}
	return true
}

// flagRE finds a --flag name in text.
var flagRE = regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)`)

// flagLiterals finds the lines of library product code with a string literal
// that names a --flag.
func (p *program) flagLiterals() (int, []Count, []Site) {
	lines := map[string]bool{}
	names := map[string]map[string]bool{}
	var sites []Site
	for _, k := range p.Pkgs {
		if !isLibrary(k.Rel) {
			continue
		}
		for _, f := range append(append([]*ast.File(nil), k.Files...), k.IgnoredFiles...) {
			ast.Inspect(f, func(x ast.Node) bool {
				lit, ok := x.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				ms := flagRE.FindAllStringSubmatch(v, -1)
				if len(ms) == 0 {
					return true
				}
				pos := p.relPos(lit.Pos())
				var fl []string
				for _, m := range ms {
					if names[m[1]] == nil {
						names[m[1]] = map[string]bool{}
					}
					names[m[1]][pos] = true
					fl = append(fl, "--"+m[1])
				}
				if !lines[pos] {
					lines[pos] = true
					sites = append(sites, Site{Pos: pos, In: enclosing(f, lit.Pos()), What: strings.Join(fl, " ")})
				} else {
					sites[len(sites)-1].What += " " + strings.Join(fl, " ")
				}
				return true
			})
		}
	}
	var counts []Count
	for n, ls := range names {
		counts = append(counts, Count{Name: "--" + n, Count: len(ls)})
	}
	sort.Slice(counts, func(i, j int) bool {
		if counts[i].Count != counts[j].Count {
			return counts[i].Count > counts[j].Count
		}
		return counts[i].Name < counts[j].Name
	})
	sort.Slice(sites, func(i, j int) bool { return sites[i].Pos < sites[j].Pos })
	return len(lines), counts, sites
}

// testImports finds the test files (of every target) that import a module
// package of the same or a higher layer than their own (an external test
// package importing the package it tests is not counted).
func (p *program) testImports(layers map[string]int) ([]TestImport, error) {
	var out []TestImport
	for _, k := range p.Pkgs {
		lp, ok := layers[k.Rel]
		if !ok {
			continue
		}
		names, err := filepath.Glob(filepath.Join(k.Dir, "*_test.go"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, name := range names {
			f, err := p.parse(name, true)
			if err != nil {
				return nil, err
			}
			for _, imp := range f.Imports {
				ip, err := strconv.Unquote(imp.Path.Value)
				if err != nil {
					continue
				}
				q, ok := p.rel(ip)
				if !ok || q == k.Rel {
					continue
				}
				lq, known := layers[q]
				if !known {
					lq = -1
				}
				if !known || lq >= lp {
					out = append(out, TestImport{File: p.relFile(f), FileLayer: lp, Import: q, Layer: lq, Helper: isHelper(q)})
				}
			}
		}
	}
	return out, nil
}

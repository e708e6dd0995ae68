package main

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// use is who names an object: another package's product code, its own
// package's product code, a test file.
type use struct{ other, own, test bool }

// users maps the declaration position of every module object to who names it.
func (p *program) users() map[token.Pos]*use {
	dirPkg := map[string]*pkg{}
	for _, k := range p.Pkgs {
		dirPkg[k.Dir] = k
	}
	out := map[token.Pos]*use{}
	for id, obj := range p.Info.Uses {
		if obj == nil || obj.Pkg() == nil || !obj.Pos().IsValid() {
			continue
		}
		decl := origin(obj).Pos()
		file := p.fileName(id.Pos())
		if file == p.fileName(decl) && id.Pos() == decl {
			continue
		}
		u := out[decl]
		if u == nil {
			u = &use{}
			out[decl] = u
		}
		switch from := dirPkg[filepath.Dir(file)]; {
		case strings.HasSuffix(file, "_test.go"):
			u.test = true
		case from != nil && from.Path == strings.TrimSuffix(obj.Pkg().Path(), "_test"):
			u.own = true
		default:
			u.other = true
		}
	}
	return out
}

// origin is the generic origin of an instantiated method or field.
func origin(obj types.Object) types.Object {
	switch o := obj.(type) {
	case *types.Func:
		return o.Origin()
	case *types.Var:
		return o.Origin()
	}
	return obj
}

// interfaces indexes, by method name, every non-generic interface type
// named in the loaded packages (the module's and those they import, and
// error).
func (p *program) interfaces() map[string][]*types.Interface {
	idx := map[string][]*types.Interface{}
	add := func(t types.Type) {
		it, ok := t.Underlying().(*types.Interface)
		if !ok {
			return
		}
		for i := 0; i < it.NumMethods(); i++ {
			idx[it.Method(i).Name()] = append(idx[it.Method(i).Name()], it)
		}
	}
	add(types.Universe.Lookup("error").Type())
	seen := map[*types.Package]bool{}
	var walk func(t *types.Package)
	walk = func(t *types.Package) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		for _, n := range t.Scope().Names() {
			if tn, ok := t.Scope().Lookup(n).(*types.TypeName); ok && !tn.IsAlias() {
				if nt, ok := tn.Type().(*types.Named); ok && nt.TypeParams().Len() == 0 {
					add(nt)
				}
			}
		}
		for _, imp := range t.Imports() {
			walk(imp)
		}
	}
	for _, k := range p.Pkgs {
		walk(k.Types)
	}
	for _, t := range p.extPkgs {
		walk(t)
	}
	return idx
}

// classify counts a library package's exported names by who names them.
func (p *program) classify(k *pkg, u map[token.Pos]*use, ifaces map[string][]*types.Interface, ps *PackageStats) {
	var tests, unnamed, own []string
	count := func(obj types.Object, name string, implicit, jsonField bool) {
		ps.Exported++
		x := u[obj.Pos()]
		v, _ := obj.(*types.Var)
		field := v != nil && v.IsField()
		if x == nil || !x.other {
			ps.TopLevelMethodsNotOther += boolInt(!field)
		}
		switch {
		case x != nil && x.other:
			ps.OtherProduct++
			return
		case x != nil && x.own:
			ps.OwnOnly++
			if !field && !implicit {
				own = append(own, name)
			}
		case x != nil && x.test:
			ps.TestsOnly++
			ps.TopLevelMethodsTestsOnly += boolInt(!field)
			tests = append(tests, name)
		default:
			ps.Unnamed++
			ps.TopLevelMethodsUnnamed += boolInt(!field)
			unnamed = append(unnamed, name)
		}
		if implicit {
			ps.Implicit++
		}
		if jsonField {
			ps.JSONFields++
		}
	}
	scope := k.Types.Scope()
	for _, n := range scope.Names() {
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		ps.TopLevel++
		count(obj, n, false, false)
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		nt, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		generic := nt.TypeParams().Len() > 0
		for i := 0; i < nt.NumMethods(); i++ {
			m := nt.Method(i)
			if !m.Exported() {
				continue
			}
			ps.Methods++
			implicit := false
			if !generic {
				for _, it := range ifaces[m.Name()] {
					if types.Implements(nt, it) || types.Implements(types.NewPointer(nt), it) {
						implicit = true
						break
					}
				}
			}
			count(m, n+"."+m.Name(), implicit, false)
		}
		switch under := nt.Underlying().(type) {
		case *types.Struct:
			for i := 0; i < under.NumFields(); i++ {
				f := under.Field(i)
				if !f.Exported() {
					continue
				}
				ps.Fields++
				tag := reflectTag(under.Tag(i), "json")
				count(f, n+"."+f.Name(), false, tag != "" && tag != "-")
			}
		case *types.Interface:
			for i := 0; i < under.NumExplicitMethods(); i++ {
				m := under.ExplicitMethod(i)
				if !m.Exported() {
					continue
				}
				ps.Methods++
				count(m, n+"."+m.Name(), false, false)
			}
		}
	}
	sort.Strings(tests)
	sort.Strings(unnamed)
	sort.Strings(own)
	ps.TestsOnlyNames, ps.UnnamedNames, ps.OwnNames = tests, unnamed, own
}

// reflectTag is reflect.StructTag.Get without reflect.
func reflectTag(tag, key string) string {
	for tag != "" {
		i := 0
		for i < len(tag) && tag[i] == ' ' {
			i++
		}
		tag = tag[i:]
		i = 0
		for i < len(tag) && tag[i] > ' ' && tag[i] != ':' && tag[i] != '"' {
			i++
		}
		if i == 0 || i+1 >= len(tag) || tag[i] != ':' || tag[i+1] != '"' {
			return ""
		}
		name := tag[:i]
		tag = tag[i+1:]
		i = 1
		for i < len(tag) && tag[i] != '"' {
			if tag[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(tag) {
			return ""
		}
		qv := tag[:i+1]
		tag = tag[i+1:]
		if name == key {
			v, err := strconv.Unquote(qv)
			if err != nil {
				return ""
			}
			return strings.Split(v, ",")[0]
		}
	}
	return ""
}

// undocumented counts exported top-level names and methods of the product
// files without a doc comment (a grouped const or var may have the group's).
func (p *program) undocumented(k *pkg) int {
	n := 0
	for _, f := range k.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Doc != nil {
					continue
				}
				if d.Recv != nil && !ast.IsExported(recvName(d)) {
					continue
				}
				n++
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Doc == nil && d.Doc == nil {
							n++
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() && s.Doc == nil && d.Doc == nil && s.Comment == nil {
								n++
							}
						}
					}
				}
			}
		}
	}
	return n
}

// recvName is the receiver's type name of a method.
func recvName(d *ast.FuncDecl) string {
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// reExports counts exported names whose declaration only renames another
// module package's: an alias, a const or var set to pkg.Name, a function
// whose body is one return of pkg.Func(…).
func (p *program) reExports(k *pkg) int {
	other := func(e ast.Expr) bool {
		sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
		if !ok {
			return false
		}
		obj := p.Info.Uses[sel.Sel]
		return obj != nil && obj.Pkg() != nil && obj.Pkg().Path() != k.Path && strings.HasPrefix(obj.Pkg().Path(), p.Module)
	}
	n := 0
	for _, f := range k.Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Assign.IsValid() && other(s.Type) {
							n++
						}
					case *ast.ValueSpec:
						for i, id := range s.Names {
							if id.IsExported() && i < len(s.Values) && other(s.Values[i]) {
								n++
							}
						}
					}
				}
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Recv != nil || d.Body == nil || len(d.Body.List) != 1 {
					continue
				}
				ret, ok := d.Body.List[0].(*ast.ReturnStmt)
				if !ok || len(ret.Results) != 1 {
					continue
				}
				if call, ok := ret.Results[0].(*ast.CallExpr); ok && other(call.Fun) {
					n++
				}
			}
		}
	}
	return n
}

// clashes finds exported top-level names declared by more than one
// library package.
func (p *program) clashes() []Clash {
	decls := map[string][]string{}
	kinds := map[string]map[string]bool{}
	for _, k := range p.Pkgs {
		if !isLibrary(k.Rel) || k.Types == nil {
			continue
		}
		for _, n := range k.Types.Scope().Names() {
			obj := k.Types.Scope().Lookup(n)
			if !obj.Exported() {
				continue
			}
			kind := "var"
			switch obj.(type) {
			case *types.Func:
				kind = "func"
			case *types.TypeName:
				kind = "type"
			case *types.Const:
				kind = "const"
			}
			decls[n] = append(decls[n], k.Rel+" ("+kind+")")
			if kinds[n] == nil {
				kinds[n] = map[string]bool{}
			}
			kinds[n][kind] = true
		}
	}
	var out []Clash
	for n, d := range decls {
		if len(d) > 1 {
			out = append(out, Clash{Name: n, Decls: d, Kinds: len(kinds[n]) > 1})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

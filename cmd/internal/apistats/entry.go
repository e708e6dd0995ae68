package main

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"sort"
	"strings"
	"unicode"
)

// entryPoints finds cmd/ckpt's cobra commands and, for each, the library
// workflows its RunE reaches through cmd/ckpt's own functions.
func (p *program) entryPoints() ([]Command, []string) {
	main := p.byPath[p.abs("cmd/ckpt")]
	if main == nil {
		return nil, nil
	}
	bodies := map[token.Pos]ast.Node{}
	for _, f := range main.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				bodies[fd.Name.Pos()] = fd.Body
			}
		}
	}
	// reach collects the library workflows referenced from n, following
	// references to cmd/ckpt's functions and methods.
	var reach func(n ast.Node, seen map[token.Pos]bool, out map[string]bool)
	reach = func(n ast.Node, seen map[token.Pos]bool, out map[string]bool) {
		ast.Inspect(n, func(x ast.Node) bool {
			id, ok := x.(*ast.Ident)
			if !ok {
				return true
			}
			fn, ok := p.Info.Uses[id].(*types.Func)
			if !ok || fn.Pkg() == nil {
				return true
			}
			fn = fn.Origin()
			if fn.Pkg().Path() == main.Path {
				if b, ok := bodies[fn.Pos()]; ok && !seen[fn.Pos()] {
					seen[fn.Pos()] = true
					reach(b, seen, out)
				}
				return true
			}
			rel, ok := p.rel(fn.Pkg().Path())
			if ok && isLibrary(rel) && isWorkflow(fn) {
				out[fn.Pkg().Name()+"."+fn.Name()] = true
			}
			return true
		})
	}
	var cmds []Command
	names := map[string]bool{}
	for _, f := range main.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(x ast.Node) bool {
				lit, ok := x.(*ast.CompositeLit)
				if !ok || !isCobraCommand(p.Info.Types[lit].Type) {
					return true
				}
				var run ast.Expr
				use := ""
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch key, _ := kv.Key.(*ast.Ident); {
					case key == nil:
					case key.Name == "Use":
						if tv := p.Info.Types[kv.Value]; tv.Value != nil && tv.Value.Kind() == constant.String {
							use, _, _ = strings.Cut(constant.StringVal(tv.Value), " ")
						}
					case key.Name == "RunE" || key.Name == "Run":
						run = kv.Value
					}
				}
				if run == nil {
					return true
				}
				out := map[string]bool{}
				reach(run, map[token.Pos]bool{}, out)
				c := Command{Name: commandName(fd.Name.Name, use)}
				for w := range out {
					c.Workflows = append(c.Workflows, w)
					names[w[strings.Index(w, ".")+1:]] = true
				}
				sort.Strings(c.Workflows)
				cmds = append(cmds, c)
				return true
			})
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	var distinct []string
	for n := range names {
		distinct = append(distinct, n)
	}
	sort.Strings(distinct)
	return cmds, distinct
}

// isCobraCommand says whether t is cobra.Command.
func isCobraCommand(t types.Type) bool {
	nt, ok := t.(*types.Named)
	return ok && nt.Obj().Name() == "Command" && nt.Obj().Pkg() != nil && nt.Obj().Pkg().Path() == "github.com/spf13/cobra"
}

// isWorkflow says whether fn is shaped like a workflow: a package-level
// function taking a context.Context or a (*)…Request / (*)…Options value.
func isWorkflow(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if sig.Recv() != nil || !fn.Exported() {
		return false
	}
	for i := 0; i < sig.Params().Len(); i++ {
		t := sig.Params().At(i).Type()
		if pt, ok := t.(*types.Pointer); ok {
			t = pt.Elem()
		}
		nt, ok := t.(*types.Named)
		if !ok {
			continue
		}
		o := nt.Obj()
		if o.Pkg() != nil && o.Pkg().Path() == "context" && o.Name() == "Context" {
			return true
		}
		if strings.HasSuffix(o.Name(), "Request") || strings.HasSuffix(o.Name(), "Options") {
			return true
		}
	}
	return false
}

// commandName is the command path of a constructor (newCacheBuildCmd →
// "cache build"); use is the cobra Use word, for the last word.
func commandName(ctor, use string) string {
	if !strings.HasPrefix(ctor, "new") || !strings.HasSuffix(ctor, "Cmd") {
		return use
	}
	s := strings.TrimSuffix(strings.TrimPrefix(ctor, "new"), "Cmd")
	var words []string
	start := 0
	for i, c := range s {
		if i > 0 && unicode.IsUpper(c) {
			words = append(words, strings.ToLower(s[start:i]))
			start = i
		}
	}
	words = append(words, strings.ToLower(s[start:]))
	if use != "" {
		words[len(words)-1] = use
	}
	return strings.Join(words, " ")
}

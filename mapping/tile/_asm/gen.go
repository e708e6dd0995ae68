// Command _asm writes the amd64 assembly of package tile with avo
// (github.com/mmcloughlin/avo). It lives in its own module, in a directory
// the go tool ignores, so the package's module does not depend on avo.
//
// Run it from the package directory as the //go:generate lines there do:
//
//	go run -C _asm . -out ../fp8_amd64.s
//	go run -C _asm . -out ../bfp16_amd64.s
//
// The base name of -out picks the file to write (see files). The
// functions' Go declarations stay hand-written in the package's
// _amd64.go files (avo writes no stubs here); go vet's asmdecl check
// holds the two together. The code keeps physical registers throughout, so
// avo's register allocator has nothing to choose: the generated file
// assembles to the instructions the hand-written one did.
package main

import (
	"errors"
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
	"github.com/mmcloughlin/avo/reg"
)

// files maps the base name of each generated file to the function that
// builds it.
func files() map[string]func(g gen) {
	return map[string]func(g gen){
		"fp8_amd64.s":   fp8File,
		"bfp16_amd64.s": bfp16File,
	}
}

// constraint is the build constraint of every file, in the +build syntax
// that avo v0.5.0 parses; it writes the //go:build line from it.
const constraint = "amd64,!purego"

func main() {
	// avo's build package registers its own flags on flag.CommandLine;
	// this generator has a set of its own.
	fs := flag.NewFlagSet("asm", flag.ExitOnError)
	out := fs.String("out", "", "the assembly file to write: "+names())
	_ = fs.Parse(os.Args[1:]) // ExitOnError: Parse exits on an error
	if err := run(*out, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "asm:", err)
		os.Exit(1)
	}
}

// run builds the file named by out and writes it there; args are the
// generator's arguments, recorded in the file's header.
func run(out string, args []string) error {
	file, ok := files()[filepath.Base(out)]
	if !ok {
		return fmt.Errorf("-out %q: not one of %s", out, names())
	}
	g := newGen()
	file(g)
	f, err := g.file()
	if err != nil {
		return fmt.Errorf("build %s: %w", out, err)
	}
	if err := pass.Compile.Execute(f); err != nil {
		return fmt.Errorf("compile %s: %w", out, err)
	}
	// The header names the command as the package's //go:generate line
	// runs it.
	cfg := printer.Config{Argv: append([]string{"go", "run", "-C", "_asm", "."}, args...), Pkg: "tile"}
	b, err := printer.NewGoAsm(cfg).Print(f)
	if err != nil {
		return fmt.Errorf("print %s: %w", out, err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// names lists the files the generator writes.
func names() string {
	var s []string
	for n := range files() {
		s = append(s, n)
	}
	sort.Strings(s)
	return fmt.Sprint(s)
}

// gen is the avo build context of one file, with the helpers the kernels
// share; errs collects the errors of those helpers (the context keeps its
// own).
type gen struct {
	*build.Context
	errs *[]error
	pkg  *types.Package
}

func newGen() gen {
	g := gen{Context: build.NewContext(), errs: new([]error), pkg: tilePkg()}
	g.ConstraintExpr(constraint)
	return g
}

// file returns the built file and every error of the build.
func (g gen) file() (*ir.File, error) {
	f, err := g.Result()
	return f, errors.Join(append([]error{err}, *g.errs...)...)
}

// tilePkg is package tile as far as the kernels' signatures need it: its
// type bfpParams (bfp16_amd64.go), as its layout is there.
func tilePkg() *types.Package {
	pkg := types.NewPackage("github.com/ckpt-dev/ckpt/mapping/tile", "tile")
	lanes := types.NewArray(types.Typ[types.Uint16], 8)
	var fields []*types.Var
	for _, n := range []string{"base", "dmax", "limit", "sign"} {
		fields = append(fields, types.NewField(token.NoPos, pkg, n, lanes, false))
	}
	name := types.NewTypeName(token.NoPos, pkg, "bfpParams", nil)
	types.NewNamed(name, types.NewStruct(fields, nil), nil)
	pkg.Scope().Insert(name)
	return pkg
}

// text starts the NOSPLIT function name with the signature sig of its Go
// declaration in package tile.
func (g gen) text(name, sig string) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	s, err := gotypes.ParseSignatureInPackage(g.pkg, sig)
	if err != nil {
		*g.errs = append(*g.errs, fmt.Errorf("%s: %w", name, err))
		return
	}
	g.Signature(s)
}

// param is the frame address of the current function's parameter name.
func (g gen) param(name string) operand.Mem {
	return resolve(g, g.Param(name))
}

// result is the frame address of the current function's result i.
func (g gen) result(i int) operand.Mem {
	return resolve(g, g.ReturnIndex(i))
}

func resolve(g gen, c gotypes.Component) operand.Mem {
	b, err := c.Resolve()
	if err != nil {
		*g.errs = append(*g.errs, err)
		return operand.Mem{}
	}
	return b.Addr
}

// table is a static RODATA|NOPTR data symbol built from consecutive
// constants.
type table struct {
	g    gen
	base operand.Mem
	size int
}

// newTable starts the data symbol name<> (GLOBL follows its last datum).
func (g gen) newTable(name string) *table {
	base := g.StaticGlobal(name)
	g.DataAttributes(attr.RODATA | attr.NOPTR)
	return &table{g: g, base: base}
}

// add appends vs and returns the address of the first.
func (t *table) add(vs ...operand.Constant) operand.Mem {
	m := t.base.Offset(t.size)
	for _, v := range vs {
		t.g.AppendDatum(v)
		t.size += v.Bytes()
	}
	return m
}

// qwords is n copies of v.
func qwords(v uint64, n int) []operand.Constant {
	c := make([]operand.Constant, n)
	for i := range c {
		c[i] = operand.U64(v)
	}
	return c
}

// mem is the address disp(base).
func mem(base reg.Register, disp int) operand.Mem {
	return operand.Mem{Base: base, Disp: disp}
}

// idx is the address disp(base)(index*1).
func idx(base, index reg.Register, disp int) operand.Mem {
	return operand.Mem{Base: base, Index: index, Scale: 1, Disp: disp}
}

// label is a reference to the label name.
func label(name string) operand.LabelRef { return operand.LabelRef(name) }

// Command _asm writes the amd64 assembly of package tile with avo
// (github.com/mmcloughlin/avo). It lives in its own module, in a directory
// the go tool ignores, so the package's module does not depend on avo.
//
// Run it from the package directory as the //go:generate lines there do:
//
//	go run -C _asm . -out ../fp8_amd64.s
//	go run -C _asm . -out ../bfp16_amd64.s
//
// The base name of -out picks the file to write (see main); the command
// line, the build and the common helpers are package asmgen's. The
// functions' Go declarations stay hand-written in the package's
// _amd64.go files (avo writes no stubs here); go vet's asmdecl check
// holds the two together. The code keeps physical registers throughout, so
// avo's register allocator has nothing to choose: the generated file
// assembles to the instructions the hand-written one did.
package main

import (
	"go/token"
	"go/types"

	"github.com/ckpt-dev/ckpt/asmgen"
	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	asmgen.Main(tilePkg(), map[string]func(*asmgen.File){
		"fp8_amd64.s":   func(f *asmgen.File) { fp8File(gen{f}) },
		"bfp16_amd64.s": func(f *asmgen.File) { bfp16File(gen{f}) },
	})
}

// gen is the avo build context of one file, with the helpers the kernels
// of package tile share.
type gen struct{ *asmgen.File }

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

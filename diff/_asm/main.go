// Command _asm generates the amd64 assembly of package diff with avo.
//
// One run writes one file, chosen by the base name of -out: the
// //go:generate lines of package diff run, for each X_amd64.s,
//
//	go run -C _asm . -out ../X_amd64.s
//
// and .ci/asmgen.sh checks that the committed files are what this gives.
// The kernels name physical registers, as the hand-written files did, so
// that the machine code is theirs instruction for instruction; the Go
// declarations stay hand-written in the package (no -stubs). What the
// files once took from go_asm.h (struct offsets and sizes, constants)
// is in layout.go, written into each file as comments that
// TestGoAsmLayout (diff/asmlayout_amd64_test.go) checks against the
// package's types.
package main

import (
	"go/token"
	"go/types"

	"github.com/ckpt-dev/ckpt/asmgen"
)

// generators are the generators, by the name of the file they write
// less "_amd64.s".
func generators() map[string]func(f *file) {
	return map[string]func(f *file){
		"accumulate":    accumulate,
		"e4m3blocks512": e4m3blocks512,
		"e4m3run":       e4m3run,
		"fp8eq":         fp8eq,
		"rawdiff":       rawdiff,
	}
}

func main() {
	files := map[string]func(*asmgen.File){}
	for name, gen := range generators() {
		files[name+"_amd64.s"] = func(a *asmgen.File) { gen(&file{File: a}) }
	}
	asmgen.Main(declarations(), files)
}

// file is the avo context of one generated file (package asmgen's, with
// its command line and helpers), with the goAsm values the current
// function uses.
type file struct {
	*asmgen.File
	used map[string]int // the goAsm values of the current function
}

// text starts the NOSPLIT function name of Go signature sig (as in
// package diff, whose declaration stays hand-written).
func (f *file) text(name, sig string) {
	f.Text(name, sig)
	f.used = nil
}

// declarations are the types of package diff that the signatures name,
// opaque: the kernels reach their fields through layout.go.
func declarations() *types.Package {
	pkg := types.NewPackage("github.com/ckpt-dev/ckpt/diff", "diff")
	for _, n := range []string{"lanes", "e4m3Block", "e4m3Lanes", "e4m3Sums", "partial"} {
		obj := types.NewTypeName(token.NoPos, pkg, n, nil)
		types.NewNamed(obj, types.NewStruct(nil, nil), nil)
		pkg.Scope().Insert(obj)
	}
	pkg.MarkComplete()
	return pkg
}

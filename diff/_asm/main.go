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
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/operand"
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
	// The file is chosen before the flags are parsed: avo's -out creates
	// its file then.
	out := outFlag(os.Args[1:])
	gen, ok := generators()[strings.TrimSuffix(filepath.Base(out), "_amd64.s")]
	if !ok {
		fmt.Fprintf(os.Stderr, "_asm: -out %q names no generator (one of %s)\n", out, names())
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	flags := build.NewFlags(fs)
	_ = fs.Parse(os.Args[1:])
	f := &file{Context: build.NewContext(), pkg: declarations()}
	f.ConstraintExpr("amd64,!purego")
	gen(f)
	os.Exit(build.Main(flags.Config(), f.Context))
}

// outFlag is the value of the -out flag in args ("" without one).
func outFlag(args []string) string {
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if v, ok := strings.CutPrefix(a, "out="); ok {
			return v
		}
		if a == "out" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// names lists the generators' file names.
func names() string {
	var ns []string
	for n := range generators() {
		ns = append(ns, n+"_amd64.s")
	}
	sort.Strings(ns)
	return strings.Join(ns, ", ")
}

// file is the avo context of one generated file.
type file struct {
	*build.Context
	pkg  *types.Package // the types of package diff the signatures name
	used map[string]int // the goAsm values of the current function
}

// text starts the NOSPLIT function name of Go signature sig (as in
// package diff, whose declaration stays hand-written).
func (f *file) text(name, sig string) {
	s, err := gotypes.ParseSignatureInPackage(f.pkg, sig)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	f.Function(name)
	f.Attributes(attr.NOSPLIT)
	f.Signature(s)
	f.used = nil
}

// arg is the address of argument (or named result) name of the current
// function: name+offset(FP).
func (f *file) arg(name string) operand.Mem {
	c := f.Param(name)
	if _, err := c.Resolve(); err != nil {
		c = f.Return(name)
	}
	b, err := c.Resolve()
	if err != nil {
		panic(fmt.Sprintf("argument %s: %v", name, err))
	}
	return b.Addr
}

// ret is the address of the (only, unnamed) result: ret+offset(FP).
func (f *file) ret() operand.Mem {
	b, err := f.ReturnIndex(0).Resolve()
	if err != nil {
		panic(fmt.Sprintf("result: %v", err))
	}
	return b.Addr
}

// data declares the static RODATA|NOPTR symbol name<> of the 64-bit
// words vs and returns its address.
func (f *file) data(name string, vs ...uint64) operand.Mem {
	m := f.StaticGlobal(name)
	f.DataAttributes(attr.RODATA | attr.NOPTR)
	for i, v := range vs {
		f.AddDatum(8*i, operand.U64(v))
	}
	return m
}

// declarations are the types of package diff that the signatures name,
// opaque: the kernels reach their fields through layout.go.
func declarations() *types.Package {
	pkg := types.NewPackage("github.com/ckpt-dev/ckpt/diff", "diff")
	for _, n := range []string{"lanes", "e4m3Block", "e4m3Sums", "partial"} {
		obj := types.NewTypeName(token.NoPos, pkg, n, nil)
		types.NewNamed(obj, types.NewStruct(nil, nil), nil)
		pkg.Scope().Insert(obj)
	}
	pkg.MarkComplete()
	return pkg
}

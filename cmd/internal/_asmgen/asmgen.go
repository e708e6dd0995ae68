// Package asmgen is what every avo generator of the repository shares (the
// PKG/_asm modules that write PKG's *_amd64.s): the command line, the build
// of one file, its header, and the helpers every kernel uses to start a
// function, address its arguments and lay out read-only data.
//
// It is a module of its own (github.com/ckpt-dev/ckpt/asmgen), in a
// directory the go tool ignores, which each generator's go.mod requires
// with a replace directive pointing here; the main module does not depend
// on avo. .ci/asmgen.sh copies it beside the generators it runs.
package asmgen

import (
	"errors"
	"flag"
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// Constraint is the build constraint of every generated file, in the old
// plus-build syntax that avo v0.5.0 parses; avo writes the go:build line
// from it.
const Constraint = "amd64,!purego"

// File is the avo build context of one generated file. Its helpers record
// their errors, which Main reports with the context's own.
type File struct {
	*build.Context
	pkg  *types.Package
	errs []error
}

// Main is a generator's main: the base name of -out picks the function of
// files that builds the file, which is written to -out with the header
// "go run -C _asm . ARGS" (as the package's //go:generate line runs it).
// pkg holds the package's types that the Go signatures name (nil: none).
func Main(pkg *types.Package, files map[string]func(*File)) {
	// avo's build package registers its flags on flag.CommandLine; the
	// generator has a set of its own, which creates no file.
	fs := flag.NewFlagSet("_asm", flag.ExitOnError)
	out := fs.String("out", "", "the assembly file to write: "+names(files))
	_ = fs.Parse(os.Args[1:])
	if err := generate(*out, os.Args[1:], pkg, files); err != nil {
		fmt.Fprintln(os.Stderr, "_asm:", err)
		os.Exit(1)
	}
}

// generate builds the file named by out's base name and writes it to out;
// args are recorded in the header.
func generate(out string, args []string, pkg *types.Package, files map[string]func(*File)) error {
	gen, ok := files[filepath.Base(out)]
	if !ok {
		return fmt.Errorf("-out %q: the base name is none of %s", out, names(files))
	}
	f := &File{Context: build.NewContext(), pkg: pkg}
	f.ConstraintExpr(Constraint)
	gen(f)
	ir, err := f.Result()
	if err = errors.Join(append([]error{err}, f.errs...)...); err != nil {
		return fmt.Errorf("build %s: %w", out, err)
	}
	if err := pass.Compile.Execute(ir); err != nil {
		return fmt.Errorf("compile %s: %w", out, err)
	}
	cfg := printer.Config{Argv: append([]string{"go", "run", "-C", "_asm", "."}, args...)}
	b, err := printer.NewGoAsm(cfg).Print(ir)
	if err != nil {
		return fmt.Errorf("print %s: %w", out, err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// names lists the files a generator writes.
func names(files map[string]func(*File)) string {
	ns := make([]string, 0, len(files))
	for n := range files {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return strings.Join(ns, ", ")
}

// Text starts the NOSPLIT function name with sig, the signature of its
// hand-written Go declaration.
func (f *File) Text(name, sig string) {
	f.Function(name)
	f.Attributes(attr.NOSPLIT)
	s, err := gotypes.ParseSignatureInPackage(f.pkg, sig)
	if err != nil {
		f.errs = append(f.errs, fmt.Errorf("%s: %w", name, err))
		return
	}
	f.Signature(s)
}

// Arg is the frame address of the current function's argument or named
// result name.
func (f *File) Arg(name string) operand.Mem {
	c := f.Param(name)
	if _, err := c.Resolve(); err != nil {
		c = f.Return(name)
	}
	return f.resolve(c, name)
}

// Ret is the frame address of the current function's result i.
func (f *File) Ret(i int) operand.Mem {
	return f.resolve(f.ReturnIndex(i), fmt.Sprintf("result %d", i))
}

func (f *File) resolve(c gotypes.Component, what string) operand.Mem {
	b, err := c.Resolve()
	if err != nil {
		f.errs = append(f.errs, fmt.Errorf("%s: %w", what, err))
		return operand.Mem{}
	}
	return b.Addr
}

// Data declares the static RODATA|NOPTR symbol name<> of the 64-bit words
// vs and returns its address.
func (f *File) Data(name string, vs ...uint64) operand.Mem {
	m := f.StaticGlobal(name)
	f.DataAttributes(attr.RODATA | attr.NOPTR)
	for i, v := range vs {
		f.AddDatum(8*i, operand.U64(v))
	}
	return m
}

// Command _asm writes the amd64 assembly of package numfmt with avo:
//
//	go run . -out ../nonfinite_amd64.s
//
// The base name of -out chooses the file (nonfinite_amd64.s,
// requant_amd64.s, dequant_amd64.s); the package's //go:generate lines run
// it for each. The kernels use physical registers only, so that avo's
// register allocation has nothing to choose and the machine code is the
// hand-written one's. No Go stubs are written: the declarations stay in
// the package's _amd64.go files.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/gotypes"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/pass"
	"github.com/mmcloughlin/avo/printer"
)

// files maps the name of each generated file to the function that builds it.
func files() map[string]func(c *build.Context) {
	return map[string]func(c *build.Context){
		"nonfinite_amd64.s": nonfinite,
		"requant_amd64.s":   requant,
		"dequant_amd64.s":   dequant,
	}
}

func main() {
	// avo's build package defines its own flags on flag.CommandLine.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	out := fs.String("out", "", "the .s file to write; its base name chooses the kernels")
	_ = fs.Parse(os.Args[1:])
	if err := generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// generate builds the file named by out's base name and writes it to out.
func generate(out string) error {
	fs := files()
	gen, ok := fs[filepath.Base(out)]
	if !ok {
		names := make([]string, 0, len(fs))
		for n := range fs {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("-out %q: the base name is none of %v", out, names)
	}
	c := build.NewContext()
	c.ConstraintExpr("amd64,!purego")
	gen(c)
	f, err := c.Result()
	if err != nil {
		return fmt.Errorf("build %s: %w", out, err)
	}
	if err := pass.Compile.Execute(f); err != nil {
		return fmt.Errorf("compile %s: %w", out, err)
	}
	cfg := printer.Config{Argv: append([]string{"go", "run", "-C", "_asm", "."}, os.Args[1:]...)}
	b, err := printer.NewGoAsm(cfg).Print(f)
	if err != nil {
		return fmt.Errorf("print %s: %w", out, err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// text starts the function name with NOSPLIT and the Go signature sig.
func text(c *build.Context, name, sig string) {
	c.Function(name)
	c.Attributes(build.NOSPLIT)
	c.SignatureExpr(sig)
}

// arg is the frame address of the active function's argument or result
// name; "ret" is the first result when it has no name.
func arg(c *build.Context, name string) operand.Mem {
	for _, comp := range []gotypes.Component{c.Param(name), c.Return(name)} {
		if b, err := comp.Resolve(); err == nil {
			return b.Addr
		}
	}
	if name == "ret" {
		if b, err := c.ReturnIndex(0).Resolve(); err == nil {
			return b.Addr
		}
	}
	panic(fmt.Sprintf("no argument or result %q", name))
}

// global starts a read-only static data section of name with the 64-bit words
// vs and returns its address.
func global(c *build.Context, name string, vs ...uint64) operand.Mem {
	m := c.StaticGlobal(name)
	c.DataAttributes(build.RODATA | build.NOPTR)
	for i, v := range vs {
		c.AddDatum(8*i, operand.U64(v))
	}
	return m
}

// splat4 is four copies of v, the 32 bytes of a Y register.
func splat4(v uint64) []uint64 { return []uint64{v, v, v, v} }

// Command _asm writes the amd64 assembly of package build with avo:
//
//	go run -C _asm . -out ../FILE
//
// as the package's //go:generate lines run it; the base name of -out
// chooses the file (see main). The kernels use physical registers only, so
// that avo's register allocation has nothing to choose and the machine
// code is the hand-written one's. No Go stubs are written: the
// declarations stay in the package's _amd64.go files. The command line,
// the build and the helpers are the shared ones of package asmgen.
package main

import "github.com/ckpt-dev/ckpt/asmgen"

func main() {
	asmgen.Main(nil, map[string]func(*asmgen.File){
		"transpose_amd64.s": transpose,
	})
}

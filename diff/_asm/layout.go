package main

import (
	"fmt"
	"sort"
)

// goAsm returns what the kernels once took from go_asm.h, which avo cannot
// include: the offsets (Type_field) and sizes (Type__size) of the
// structs of package diff that they read and write, and its constants
// (const_name), under go_asm.h's names. A kernel lists the ones it uses
// (useGoAsm), which writes them into the file as comments; the test
// TestGoAsmLayout of package diff reads those comments back and checks
// them against unsafe.Offsetof, unsafe.Sizeof and the constants, so that
// a change of the types cannot go unnoticed (change them here too and
// regenerate).
func goAsm() map[string]int {
	return map[string]int{
		"lanes_ss": 0,
		"lanes_nb": 64,
		"lanes_nf": 128,
		"lanes_d":  192,
		"lanes_mx": 256,

		"const_e4m3Same": 1,
		"const_e4m3Diff": 2,

		"e4m3Block__size":    96,
		"e4m3Block_class":    0,
		"e4m3Block_kb":       8,
		"e4m3Block_kf":       16,
		"e4m3Block_bb":       24,
		"e4m3Block_ff":       32,
		"e4m3Block_bf":       40,
		"e4m3Block_mxs":      48,
		"e4m3Block_mbb":      56,
		"e4m3Block_mff":      64,
		"e4m3Block_cross2":   72,
		"e4m3Block_crossNeg": 80,
		"e4m3Block_unit":     88,

		"e4m3Lanes__size":    144,
		"e4m3Lanes_bb":       0,
		"e4m3Lanes_ff":       32,
		"e4m3Lanes_bf":       64,
		"e4m3Lanes_mx":       96,
		"e4m3Lanes_changed":  128,
		"e4m3Lanes_zeroSign": 136,

		"e4m3Sums__size":    48,
		"e4m3Sums_bb":       0,
		"e4m3Sums_ff":       8,
		"e4m3Sums_bf":       16,
		"e4m3Sums_mx":       24,
		"e4m3Sums_changed":  32,
		"e4m3Sums_zeroSign": 40,

		"partial_changed":   0,
		"partial_maxAbs":    8,
		"partial_sumSqDiff": 16,
		"partial_normB":     24,
		"partial_normF":     32,
		"partial_dot":       40,
		"partial_zeroSign":  112,
	}
}

// useGoAsm lets the current function use the goAsm values names and
// writes them into it as comments, one "go_asm.h: name = value" a line.
func (f *file) useGoAsm(names ...string) {
	sort.Strings(names)
	f.Comment("The go_asm.h values this function uses (TestGoAsmLayout checks them):")
	f.used = map[string]int{}
	values := goAsm()
	for _, n := range names {
		v, ok := values[n]
		if !ok {
			panic(fmt.Sprintf("go_asm.h: no value %s", n))
		}
		f.used[n] = v
		f.Commentf("go_asm.h: %s = %d", n, v)
	}
}

// layout is the goAsm value name, which the current function declared
// with useGoAsm.
func (f *file) layout(name string) int {
	v, ok := f.used[name]
	if !ok {
		panic(fmt.Sprintf("go_asm.h: %s not declared with useGoAsm", name))
	}
	return v
}

package main

import (
	"github.com/ckpt-dev/ckpt/asmgen"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// transpose builds transpose_amd64.s (the Go side is transpose_amd64.go).
func transpose(c *asmgen.File) {
	// func transposeRowsSSE2(dst *uint16, src *byte, stride uintptr, n uintptr)
	//
	// dst[j*32+k] = 16-bit value j of the row at src + k*stride, for the 32
	// rows k and the n values j (n a multiple of 8): 8x8 blocks transposed in
	// registers (three rounds of unpacks: 16-, 32- and 64-bit lanes).
	c.Text("transposeRowsSSE2", "func(dst *uint16, src *byte, stride uintptr, n uintptr)")
	c.MOVQ(c.Arg("dst"), RDI)
	c.MOVQ(c.Arg("src"), RSI)
	c.MOVQ(c.Arg("stride"), R9)
	c.MOVQ(c.Arg("n"), RCX)
	c.LEAQ(Mem{Base: R9, Index: R9, Scale: 2}, R11) // 3*stride
	c.SHRQ(U8(3), RCX)                              // 8-value column groups
	c.JZ(LabelRef("done"))
	c.Label("cols")
	c.MOVQ(RSI, R12) // rows k0..k0+7 of this column group
	c.MOVQ(RDI, R13)
	c.MOVQ(U32(4), RDX)
	c.Label("rows")
	c.LEAQ(Mem{Base: R12, Index: R9, Scale: 4}, R14)
	// The 8 rows: R12 and R14 (4 rows on) at 0, 1, 2 and 3 strides.
	rows := []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7}
	for i, x := range rows {
		base := Mem{Base: R12}
		if i >= 4 {
			base = Mem{Base: R14}
		}
		switch i % 4 {
		case 1:
			base = base.Idx(R9, 1)
		case 2:
			base = base.Idx(R9, 2)
		case 3:
			base = base.Idx(R11, 1)
		}
		c.MOVOU(base, x)
	}
	// Each round interleaves pairs (lo, hi): hi gets the high halves in a
	// copy of lo (a new register), lo the low halves.
	unpack := func(hi func(mx, x Op), lo func(mx, x Op), pairs [][3]VecPhysical) {
		for _, p := range pairs {
			a, b, t := p[0], p[1], p[2]
			c.MOVOU(a, t)
			hi(b, t)
			lo(b, a)
		}
	}
	// 16-bit lanes: rows (0 1) (2 3) (4 5) (6 7).
	unpack(c.PUNPCKHWL, c.PUNPCKLWL, [][3]VecPhysical{
		{X0, X1, X8}, {X2, X3, X9}, {X4, X5, X10}, {X6, X7, X11},
	})
	// 32-bit lanes.
	unpack(c.PUNPCKHLQ, c.PUNPCKLLQ, [][3]VecPhysical{
		{X0, X2, X1}, {X8, X9, X3}, {X4, X6, X5}, {X10, X11, X7},
	})
	// 64-bit lanes.
	unpack(c.PUNPCKHQDQ, c.PUNPCKLQDQ, [][3]VecPhysical{
		{X0, X4, X12}, {X1, X5, X13}, {X8, X10, X14}, {X3, X7, X15},
	})
	// Output rows j0..j0+7 (64 bytes apart), the 8 words of rows k0..k0+7.
	for i, x := range []VecPhysical{X0, X12, X1, X13, X8, X14, X3, X15} {
		c.MOVOU(x, Mem{Base: R13, Disp: 64 * i})
	}
	c.LEAQ(Mem{Base: R14, Index: R9, Scale: 4}, R12) // next 8 rows
	c.ADDQ(U8(16), R13)                              // rows k0+8.. of the output
	c.DECQ(RDX)
	c.JNZ(LabelRef("rows"))
	c.ADDQ(U8(16), RSI)   // next 8 values
	c.ADDQ(U32(512), RDI) // 8 output rows of 32
	c.DECQ(RCX)
	c.JNZ(LabelRef("cols"))
	c.Label("done")
	c.RET()
}

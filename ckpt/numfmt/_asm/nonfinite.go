package main

import (
	"github.com/ckpt-dev/ckpt/asmgen"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// nonfinite builds nonfinite_amd64.s.
func nonfinite(c *asmgen.File) {
	nan7f := c.Data("nan7f", splat4(0x7f7f7f7f7f7f7f7f)...)

	// Per 128 bytes: the low seven bits of every code (VPAND), compared
	// with 0x7f (VPCMPEQB: 0xff where a code is a NaN), the four results
	// ORed and tested once.
	c.Text("cleanE4M3AVX2", "func(p *byte, n int) int")
	c.MOVQ(c.Arg("p"), RSI)
	c.MOVQ(c.Arg("n"), RCX)
	c.VMOVDQU(nan7f, Y7)
	c.XORQ(RAX, RAX)
	c.Label("loop")
	at := Mem{Base: RSI, Index: RAX, Scale: 1}
	c.VPAND(at, Y7, Y0)
	c.VPAND(at.Offset(32), Y7, Y1)
	c.VPAND(at.Offset(64), Y7, Y2)
	c.VPAND(at.Offset(96), Y7, Y3)
	c.VPCMPEQB(Y7, Y0, Y0)
	c.VPCMPEQB(Y7, Y1, Y1)
	c.VPCMPEQB(Y7, Y2, Y2)
	c.VPCMPEQB(Y7, Y3, Y3)
	c.VPOR(Y1, Y0, Y0)
	c.VPOR(Y3, Y2, Y2)
	c.VPOR(Y2, Y0, Y0)
	c.VPTEST(Y0, Y0)
	c.JNZ(LabelRef("done"))
	c.ADDQ(U32(128), RAX)
	c.CMPQ(RAX, RCX)
	c.JLT(LabelRef("loop"))
	c.Label("done")
	c.VZEROUPPER()
	c.MOVQ(RAX, c.Ret(0))
	c.RET()
}

package main

import (
	"github.com/ckpt-dev/ckpt/asmgen"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// region builds region_amd64.s, the stripe accumulation of XXH3's long
// input loop (the Go side is region_amd64.go).
func region(c *asmgen.File) {
	// func stripesSSE2(sum *[8]uint64, p *byte, key *uint64, n uintptr)
	//
	// For each of the n stripes of 64 bytes at p (stripe i keyed by the eight
	// words at key+8i), lane j (v, word k): sum[j] += lo32(v^k) * hi32(v^k)
	// and sum[j^1] += v; two lanes per register.
	c.Text("stripesSSE2", "func(sum *[8]uint64, p *byte, key *uint64, n uintptr)")
	stripesArgs(c)
	acc := []VecPhysical{X0, X1, X2, X3}
	for i, x := range acc {
		c.MOVOU(Mem{Base: RDI, Disp: 16 * i}, x)
	}
	c.TESTQ(RCX, RCX)
	c.JZ(LabelRef("done"))
	c.Label("loop")
	for i, x := range acc {
		c.MOVOU(Mem{Base: RSI, Disp: 16 * i}, X4)
		c.MOVOU(Mem{Base: RDX, Disp: 16 * i}, X5)
		c.PXOR(X4, X5)
		c.PSHUFD(U8(0x4e), X4, X4)
		c.PADDQ(X4, x)
		c.MOVO(X5, X6)
		c.PSRLQ(U8(32), X6)
		c.PMULULQ(X6, X5)
		c.PADDQ(X5, x)
	}
	c.ADDQ(U8(64), RSI)
	c.ADDQ(U8(8), RDX)
	c.DECQ(RCX)
	c.JNZ(LabelRef("loop"))
	c.Label("done")
	for i, x := range acc {
		c.MOVOU(x, Mem{Base: RDI, Disp: 16 * i})
	}
	c.RET()

	// func stripesAVX2(sum *[8]uint64, p *byte, key *uint64, n uintptr)
	//
	// stripesSSE2 with four lanes per register, two stripes per iteration:
	// the products and the data words of even and odd stripes are summed
	// apart (Y0-Y1, Y2-Y3, Y10-Y11, Y12-Y13) and added at the end.
	c.Text("stripesAVX2", "func(sum *[8]uint64, p *byte, key *uint64, n uintptr)")
	stripesArgs(c)
	c.VMOVDQU(Mem{Base: RDI}, Y0)
	c.VMOVDQU(Mem{Base: RDI, Disp: 32}, Y1)
	for _, y := range []VecPhysical{Y2, Y3, Y10, Y11, Y12, Y13} {
		c.VPXOR(y, y, y)
	}
	c.CMPQ(RCX, U8(2))
	c.JB(LabelRef("avxone"))
	c.Label("avxloop")
	// Two stripes: data (Y4 Y5, Y14 Y15), data^key (Y6 Y7, Y8 Y9); the
	// data words summed into Y2 Y3 and Y12 Y13, the products into Y0 Y1
	// and Y10 Y11.
	stripesAVX2Step(c,
		[]VecPhysical{Y4, Y5, Y14, Y15},
		[]int{0, 32, 8, 40},
		[]VecPhysical{Y6, Y7, Y8, Y9},
		[]VecPhysical{Y2, Y3, Y12, Y13},
		[]VecPhysical{Y0, Y1, Y10, Y11})
	c.ADDQ(U32(128), RSI)
	c.ADDQ(U8(16), RDX)
	c.SUBQ(U8(2), RCX)
	c.CMPQ(RCX, U8(2))
	c.JAE(LabelRef("avxloop"))
	c.Label("avxone")
	c.TESTQ(RCX, RCX)
	c.JZ(LabelRef("avxdone"))
	stripesAVX2Step(c,
		[]VecPhysical{Y4, Y5},
		[]int{0, 32},
		[]VecPhysical{Y6, Y7},
		[]VecPhysical{Y2, Y3},
		[]VecPhysical{Y0, Y1})
	c.Label("avxdone")
	c.VPADDQ(Y2, Y0, Y0)
	c.VPADDQ(Y3, Y1, Y1)
	c.VPADDQ(Y10, Y0, Y0)
	c.VPADDQ(Y11, Y1, Y1)
	c.VPADDQ(Y12, Y0, Y0)
	c.VPADDQ(Y13, Y1, Y1)
	c.VMOVDQU(Y0, Mem{Base: RDI})
	c.VMOVDQU(Y1, Mem{Base: RDI, Disp: 32})
	c.VZEROUPPER()
	c.RET()
}

// stripesArgs loads sum (DI), p (SI), key (DX) and n (CX).
func stripesArgs(c *asmgen.File) {
	c.MOVQ(c.Arg("sum"), RDI)
	c.MOVQ(c.Arg("p"), RSI)
	c.MOVQ(c.Arg("key"), RDX)
	c.MOVQ(c.Arg("n"), RCX)
}

// stripesAVX2Step adds the 32-byte quarters i of the stripes at SI:
// data[i] is loaded from 32i(SI), mixed[i] = data[i] ^ the key words at
// keyOff[i](DX); data[i] with its words swapped in pairs is added to
// words[i], lo32·hi32 of mixed[i] (hi32 shifted into data[i]) to prods[i].
// Each step runs for every i before the next, as the hand-written loop
// interleaved them.
func stripesAVX2Step(c *asmgen.File, data []VecPhysical, keyOff []int, mixed, words, prods []VecPhysical) {
	for i, y := range data {
		c.VMOVDQU(Mem{Base: RSI, Disp: 32 * i}, y)
	}
	for i, y := range data {
		c.VPXOR(Mem{Base: RDX, Disp: keyOff[i]}, y, mixed[i])
	}
	for _, y := range data {
		c.VPSHUFD(U8(0x4e), y, y)
	}
	for i, y := range data {
		c.VPADDQ(y, words[i], words[i])
	}
	for i, y := range data {
		c.VPSRLQ(U8(32), mixed[i], y)
	}
	for i, y := range data {
		c.VPMULUDQ(y, mixed[i], mixed[i])
	}
	for i, y := range mixed {
		c.VPADDQ(y, prods[i], prods[i])
	}
}

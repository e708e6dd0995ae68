package main

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/asmgen"
	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// requant builds requant_amd64.s, the re-quantisation kernels of
// requantBlock (the Go side is requant_amd64.go).
func requant(c *asmgen.File) {
	rqc := c.StaticGlobal("rqc")
	c.DataAttributes(build.RODATA | build.NOPTR)
	for i, v := range []uint32{
		0x80,
		0x3c800000, // 2^-6
		1,
		0x43f00000, // 480
		0x43e00000, // 448
		0x44000000, // 512
		0x7fffffff,
	} {
		c.AddDatum(4*i, U32(v))
	}
	// 0x7ffff - 0x3c000000 (mod 2^32)
	rqk := c.Data("rqk", splat4(0xc407ffffc407ffff)...)
	rq7f := c.Data("rq7f", splat4(0x0000007f0000007f)...)

	// func requantAVX2(w *float32, codes *byte, n int, s float32, mul bool) (same, zeroSign int)
	//
	// n is a positive multiple of 8 below 2^31. same counts the i < n whose
	// code EncodeE4M3(w[i]/s) (EncodeE4M3(w[i]·s) when mul) decodes to the
	// value of codes[i] (equal, ±0, or both NaN), zeroSign those that differ
	// only in the sign of zero.
	c.Text("requantAVX2", "func(w *float32, codes *byte, n int, s float32, mul bool) (same, zeroSign int)")
	c.MOVQ(c.Arg("w"), RSI)
	c.MOVQ(c.Arg("codes"), RDI)
	c.MOVQ(c.Arg("n"), RCX)
	c.MOVBQZX(c.Arg("mul"), R8)
	requantConsts(c, rqc)
	c.VPXOR(Y5, Y5, Y5) // same, per lane
	c.VPXOR(Y6, Y6, Y6) // zeroSign, per lane
	c.Label("loop")
	encode(c, rqk, "r")
	c.VPMOVZXBD(Mem{Base: RDI}, Y2) // the stored codes
	c.VPXOR(Y2, Y0, Y0)             // d = code ^ stored
	c.VPCMPEQD(Y9, Y0, Y2)          // equal
	c.VPCMPEQD(Y7, Y0, Y0)          // only the sign differs
	c.VPCMPEQD(Y9, Y1, Y3)          // the code is ±0
	c.VPCMPEQD(rq7f, Y1, Y1)        // the code is NaN
	c.VPOR(Y3, Y1, Y1)              //
	c.VPAND(Y0, Y1, Y1)             // ±0 against ∓0, NaN against NaN
	c.VPAND(Y0, Y3, Y3)             // ±0 against ∓0
	c.VPOR(Y2, Y1, Y1)              // same value
	c.VPSUBD(Y1, Y5, Y5)
	c.VPSUBD(Y3, Y6, Y6)
	c.ADDQ(U8(32), RSI)
	c.ADDQ(U8(8), RDI)
	c.SUBQ(U8(8), RCX)
	c.JNZ(LabelRef("loop"))
	c.VEXTRACTI128(U8(1), Y5, X0)
	c.VPADDD(X0, X5, X5)
	c.VEXTRACTI128(U8(1), Y6, X0)
	c.VPADDD(X0, X6, X6)
	c.VPSHUFD(U8(0x4e), X5, X0)
	c.VPADDD(X0, X5, X5)
	c.VPSHUFD(U8(0x4e), X6, X0)
	c.VPADDD(X0, X6, X6)
	c.VPSHUFD(U8(0xb1), X5, X0)
	c.VPADDD(X0, X5, X5)
	c.VPSHUFD(U8(0xb1), X6, X0)
	c.VPADDD(X0, X6, X6)
	c.VMOVD(X5, EAX)
	c.MOVQ(RAX, c.Arg("same"))
	c.VMOVD(X6, EAX)
	c.MOVQ(RAX, c.Arg("zeroSign"))
	c.VZEROUPPER()
	c.RET()

	// func encodeE4M3AVX2(dst *uint32, src *float32, n int, s float32, mul bool)
	//
	// dst[i] = EncodeE4M3(src[i]/s) (src[i]·s when mul) for i < n, a positive
	// multiple of 8: the encode of requantAVX2 on its own, for its test.
	c.Text("encodeE4M3AVX2", "func(dst *uint32, src *float32, n int, s float32, mul bool)")
	c.MOVQ(c.Arg("dst"), RDI)
	c.MOVQ(c.Arg("src"), RSI)
	c.MOVQ(c.Arg("n"), RCX)
	c.MOVBQZX(c.Arg("mul"), R8)
	requantConsts(c, rqc)
	c.Label("enc")
	encode(c, rqk, "e")
	c.VMOVDQU(Y0, Mem{Base: RDI})
	c.ADDQ(U8(32), RSI)
	c.ADDQ(U8(32), RDI)
	c.SUBQ(U8(8), RCX)
	c.JNZ(LabelRef("enc"))
	c.VZEROUPPER()
	c.RET()

	// func absMaxAVX2(w *float32, n int) float32
	//
	// The largest |w[i]| for i < n, a positive multiple of 32, ignoring NaN
	// (MAXPS returns its second operand, the running maximum, when the first
	// is NaN), as the Go loop's x > amax; 0 when there is none.
	c.Text("absMaxAVX2", "func(w *float32, n int) float32")
	c.MOVQ(c.Arg("w"), RSI)
	c.MOVQ(c.Arg("n"), RCX)
	c.VPBROADCASTD(rqc.Offset(24), Y4)
	c.VXORPS(Y0, Y0, Y0)
	c.VXORPS(Y1, Y1, Y1)
	c.VXORPS(Y2, Y2, Y2)
	c.VXORPS(Y3, Y3, Y3)
	c.Label("amax")
	c.VANDPS(Mem{Base: RSI}, Y4, Y5)
	c.VANDPS(Mem{Base: RSI, Disp: 32}, Y4, Y6)
	c.VANDPS(Mem{Base: RSI, Disp: 64}, Y4, Y7)
	c.VANDPS(Mem{Base: RSI, Disp: 96}, Y4, Y8)
	c.VMAXPS(Y0, Y5, Y0) // x > m ? x : m
	c.VMAXPS(Y1, Y6, Y1)
	c.VMAXPS(Y2, Y7, Y2)
	c.VMAXPS(Y3, Y8, Y3)
	c.ADDQ(U32(128), RSI)
	c.SUBQ(U8(32), RCX)
	c.JNZ(LabelRef("amax"))
	c.VMAXPS(Y1, Y0, Y0)
	c.VMAXPS(Y3, Y2, Y2)
	c.VMAXPS(Y2, Y0, Y0)
	c.VEXTRACTF128(U8(1), Y0, X1)
	c.VMAXPS(X1, X0, X0)
	c.VPSHUFD(U8(0x4e), X0, X1)
	c.VMAXPS(X1, X0, X0)
	c.VPSHUFD(U8(0xb1), X0, X1)
	c.VMAXPS(X1, X0, X0)
	c.VMOVSS(X0, c.Ret(0))
	c.VZEROUPPER()
	c.RET()
}

// requantConsts loads the constants of encode from rqc; s is the argument
// s of the active function.
func requantConsts(c *asmgen.File, rqc Mem) {
	c.VBROADCASTSS(c.Arg("s"), Y15)
	for i, y := range []VecPhysical{Y7, Y8, Y10, Y11, Y12, Y13, Y14} {
		c.VPBROADCASTD(rqc.Offset(4*i), y)
	}
	c.VPXOR(Y9, Y9, Y9)
}

// encode turns the 8 float32 x at (SI) into the codes ckpt.EncodeE4M3(x/s),
// or ckpt.EncodeE4M3(x·s) when R8 is not zero, as dwords, with the
// operations of the Go function on each lane:
//
//	u = x/s (VDIVPS: the float32 quotient of the Go loop) or x·s (VMULPS:
//	the float32 product; R8 is the same for every iteration, so that the
//	branch is always predicted), a = u &^ sign;
//	subnormal codes (a < 2^-6): a·512 (exact) converted to an integer
//	with the MXCSR rounding, nearest even, as math.RoundToEven;
//	the others: a is first clamped: VMINPS(448, a) gives 448 for
//	448 <= a <= inf and keeps a NaN (MINPS returns its second operand
//	when one is NaN), then an integer minimum with the bits of 480
//	turns a NaN into 480, whose code is 0x7f, while 448 gives 0x7e;
//	then (a + 0x7ffff + (a>>20)&1) >> 20 - 120<<3 as in EncodeE4M3,
//	the rebias folded into the added constant (the wrapped sums of the
//	subnormal lanes are not selected);
//	the sign: bit 31 of u (an integer compare with 0) as bit 7.
//
// Out: Y1 the code's low seven bits, Y0 the code; Y2-Y4 are clobbered.
// Constants: Y7 0x80, Y9 0, Y8 the bits of 2^-6, Y10 1, Y11 the bits of 480,
// Y12 448.0, Y13 512.0, Y14 0x7fffffff, Y15 s; rqk the added constant.
// The labels of the branch are named with prefix, unique per use.
func encode(c *asmgen.File, rqk Mem, prefix string) {
	mul, join := fmt.Sprintf("%smul", prefix), fmt.Sprintf("%sjoin", prefix)
	c.VMOVUPS(Mem{Base: RSI}, Y0)
	c.CMPQ(R8, U8(0))
	c.JNE(LabelRef(mul))
	c.VDIVPS(Y15, Y0, Y0) // u = x/s
	c.JMP(LabelRef(join))
	c.Label(mul)
	c.VMULPS(Y15, Y0, Y0) // u = x·s
	c.Label(join)
	c.VANDPS(Y14, Y0, Y1)       // a = |u|
	c.VPCMPGTD(Y0, Y9, Y0)      // u < 0 as an integer: the sign
	c.VPAND(Y7, Y0, Y0)         // sign<<7
	c.VMULPS(Y13, Y1, Y2)       //
	c.VCVTPS2DQ(Y2, Y2)         // subnormal code: RoundToEven(a*512)
	c.VMINPS(Y1, Y12, Y1)       // 448 < a ? 448 : a (NaN stays)
	c.VPMINSD(Y11, Y1, Y1)      // NaN -> 480
	c.VPCMPGTD(Y1, Y8, Y3)      // a < 2^-6
	c.VPSRLD(U8(20), Y1, Y4)    //
	c.VPAND(Y10, Y4, Y4)        // (a>>20)&1
	c.VPADDD(Y4, Y1, Y1)        //
	c.VPADDD(rqk, Y1, Y1)       // + 0x7ffff - 120<<23
	c.VPSRLD(U8(20), Y1, Y1)    // normal code
	c.VBLENDVPS(Y3, Y2, Y1, Y1) // the subnormal code where a < 2^-6
	c.VPOR(Y1, Y0, Y0)
}

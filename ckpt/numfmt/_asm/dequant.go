package main

import (
	"github.com/ckpt-dev/ckpt/asmgen"
	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// dequant builds dequant_amd64.s, the scaled F8_E4M3 decode
// (decodeE4M3AVX2 and the dequantE4M3 kernels; the Go side is
// dequant_amd64.go).
//
// Like the transposed FP8 tile encoder of mapping/tile (fp8_amd64.s), a
// code's magnitude m = c & 0x7f becomes m' = m + T[min(m, 8)] (VPSHUFB)
// so that the float32 with bits m'<<20 is e4m3(m)·2^-104, a normal number
// for every code but NaN: T[8] = 128 adds 16 to the exponent of the
// normal codes, T[1..7] place the subnormal codes m·2^-9 as normal floats,
// T[0] = 0 keeps ±0. The sign bit is set from c, and one multiply by
// s·2^104 (exact: the caller passes |s| < 2^24) rounds the real number
// e4m3(c)·s once, as the Go product table[c]·s does. NaN codes give
// garbage here; the kernel reports them and the caller redoes them.
//
// The 32 codes of an iteration are permuted by dwords (VPERMD) to
// 0-3 8-11 16-19 24-27 | 4-7 12-15 20-23 28-31 so that the in-lane
// unpacks produce the float32 values in memory order.
func dequant(c *asmgen.File) {
	var words []uint64
	words = append(words, splat4(0x7f7f7f7f7f7f7f7f)...) // magnitude mask
	words = append(words, splat4(0x0808080808080808)...) // T index limit; the sign bit shifted right by 4
	words = append(words,
		0x7f7e7d7c79766f00, // T: 0 111 118 121 124 125 126 127
		0x8080808080808080, //    128 ...
		0x7f7e7d7c79766f00, // (both lanes)
		0x8080808080808080,
		0x0000000200000000, // VPERMD: dwords 0 2 4 6 1 3 5 7
		0x0000000600000004,
		0x0000000300000001,
		0x0000000700000005,
	)
	dec8 := c.Data("dec8", words...)

	// func decodeE4M3AVX2(dst *float32, src *byte, n int, s2 float32) (nan bool)
	//
	// n is a positive multiple of 32; s2 = s·2^104.
	c.Text("decodeE4M3AVX2", "func(dst *float32, src *byte, n int, s2 float32) (nan bool)")
	dequantSetup(c, dec8)
	c.Label("loop")
	decode32(c)
	store32(c)
	dequantStep(c, 128, "loop")
	dequantDone(c)

	// func dequantE4M3F32AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)
	//
	// decodeE4M3AVX2 into bytes (the little-endian float32 output of extract).
	c.Text("dequantE4M3F32AVX2", "func(dst *byte, src *byte, n int, s2 float32) (nan bool)")
	dequantSetup(c, dec8)
	c.Label("loopf")
	decode32(c)
	store32(c)
	dequantStep(c, 128, "loopf")
	dequantDone(c)

	rne := c.StaticGlobal("rne")
	c.DataAttributes(build.RODATA | build.NOPTR)
	c.AddDatum(0, U32(0x00007fff)) // round to nearest even: bias
	c.AddDatum(4, U32(0x00000001)) // and the lowest kept bit

	// func dequantE4M3BF16AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)
	//
	// The products of decodeE4M3AVX2 rounded to bfloat16, nearest even: no
	// product of a non-NaN code is NaN or overflows (|s| < 2^24), so the
	// rounding needs no NaN case. n is a positive multiple of 32.
	c.Text("dequantE4M3BF16AVX2", "func(dst *byte, src *byte, n int, s2 float32) (nan bool)")
	dequantSetup(c, dec8)
	c.Label("loopb")
	decode32(c)
	c.VPBROADCASTD(rne, Y2)
	c.VPBROADCASTD(rne.Offset(4), Y3)
	rne16(c, Y6, Y0)
	rne16(c, Y7, Y1)
	rne16(c, Y8, Y5)
	rne16(c, Y4, Y0)
	c.VPACKUSDW(Y7, Y6, Y6) // 0-3 8-11 | 4-7 12-15
	c.VPERMQ(U8(0xd8), Y6, Y6)
	c.VPACKUSDW(Y4, Y8, Y8)
	c.VPERMQ(U8(0xd8), Y8, Y8)
	c.VMOVDQU(Y6, Mem{Base: RDI})
	c.VMOVDQU(Y8, Mem{Base: RDI, Disp: 32})
	dequantStep(c, 64, "loopb")
	dequantDone(c)

	// func dequantE4M3F16AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)
	//
	// The products of decodeE4M3AVX2 rounded to IEEE half (F16C, nearest
	// even, overflowing to infinity). n is a positive multiple of 32.
	c.Text("dequantE4M3F16AVX2", "func(dst *byte, src *byte, n int, s2 float32) (nan bool)")
	dequantSetup(c, dec8)
	c.Label("looph")
	decode32(c)
	c.VCVTPS2PH(U8(0), Y6, X0)
	c.VCVTPS2PH(U8(0), Y7, X1)
	c.VCVTPS2PH(U8(0), Y8, X2)
	c.VCVTPS2PH(U8(0), Y4, X3)
	c.VMOVDQU(X0, Mem{Base: RDI})
	c.VMOVDQU(X1, Mem{Base: RDI, Disp: 16})
	c.VMOVDQU(X2, Mem{Base: RDI, Disp: 32})
	c.VMOVDQU(X3, Mem{Base: RDI, Disp: 48})
	dequantStep(c, 64, "looph")
	dequantDone(c)
}

// dequantSetup loads the arguments (dst, src, n, s2) and the constants of
// decode32 from dec8, and clears the NaN codes seen (Y9).
func dequantSetup(c *asmgen.File, dec8 Mem) {
	c.MOVQ(c.Arg("dst"), RDI)
	c.MOVQ(c.Arg("src"), RSI)
	c.MOVQ(c.Arg("n"), RCX)
	c.VBROADCASTSS(c.Arg("s2"), Y14)
	c.VPXOR(Y15, Y15, Y15)
	c.VMOVDQU(dec8, Y13)
	c.VMOVDQU(dec8.Offset(32), Y12)
	c.VMOVDQU(dec8.Offset(64), Y11)
	c.VMOVDQU(dec8.Offset(96), Y10)
	c.VPXOR(Y9, Y9, Y9)
}

// decode32 decodes the 32 codes at SI into the float32 products of
// elements 0-7 (Y6), 8-15 (Y7), 16-23 (Y8) and 24-31 (Y4), ORing the NaN
// codes' bytes into Y9; the constants are in Y10-Y15 (dequantSetup). The
// codes permuted (Y0); m = c & 0x7f (Y1); m = 0x7f marks a NaN; the sign
// bit at bit 3 of each byte (Y3); m' = m + T[min(m, 8)] (Y1); the words
// sign<<11 | m', shifted to sign<<15 | m'<<4 (Y4, Y5); the dwords
// sign<<31 | m'<<20, multiplied by s2.
func decode32(c *asmgen.File) {
	c.VPERMD(Mem{Base: RSI}, Y10, Y0)
	c.VPAND(Y13, Y0, Y1)
	c.VPCMPEQB(Y13, Y1, Y2)
	c.VPOR(Y2, Y9, Y9)
	c.VPSRLW(U8(4), Y0, Y3)
	c.VPAND(Y12, Y3, Y3)
	c.VPMINUB(Y12, Y1, Y2)
	c.VPSHUFB(Y2, Y11, Y2)
	c.VPADDB(Y2, Y1, Y1)
	c.VPUNPCKLBW(Y3, Y1, Y4)
	c.VPUNPCKHBW(Y3, Y1, Y5)
	c.VPSLLW(U8(4), Y4, Y4)
	c.VPSLLW(U8(4), Y5, Y5)
	c.VPUNPCKLWD(Y4, Y15, Y6)
	c.VPUNPCKHWD(Y4, Y15, Y7)
	c.VPUNPCKLWD(Y5, Y15, Y8)
	c.VPUNPCKHWD(Y5, Y15, Y4)
	c.VMULPS(Y14, Y6, Y6)
	c.VMULPS(Y14, Y7, Y7)
	c.VMULPS(Y14, Y8, Y8)
	c.VMULPS(Y14, Y4, Y4)
}

// store32 stores the 32 float32 products of decode32 at DI.
func store32(c *asmgen.File) {
	c.VMOVUPS(Y6, Mem{Base: RDI})
	c.VMOVUPS(Y7, Mem{Base: RDI, Disp: 32})
	c.VMOVUPS(Y8, Mem{Base: RDI, Disp: 64})
	c.VMOVUPS(Y4, Mem{Base: RDI, Disp: 96})
}

// dequantStep advances SI by the 32 codes and DI by out bytes and loops to
// label while codes are left.
func dequantStep(c *asmgen.File, out int, label string) {
	c.ADDQ(U8(32), RSI)
	c.ADDQ(U32(out), RDI)
	c.SUBQ(U8(32), RCX)
	c.JNZ(LabelRef(label))
}

// dequantDone reports whether a NaN code was seen and returns.
func dequantDone(c *asmgen.File) {
	c.VPMOVMSKB(Y9, EAX)
	c.TESTL(EAX, EAX)
	c.SETNE(c.Arg("nan"))
	c.VZEROUPPER()
	c.RET()
}

// rne16 rounds the float32 bits of y to their top 16 bits, nearest even
// (no NaN comes here; Y2 holds the bias, Y3 the lowest kept bit); t is
// scratch.
func rne16(c *asmgen.File, y, t VecPhysical) {
	c.VPSRLD(U8(16), y, t)
	c.VPAND(Y3, t, t)
	c.VPADDD(Y2, y, y)
	c.VPADDD(t, y, y)
	c.VPSRLD(U8(16), y, y)
}

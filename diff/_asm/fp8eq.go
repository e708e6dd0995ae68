package main

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// fp8eq writes fp8eq_amd64.s: countFP8SSE2(a, b *byte, bF, fF *float32,
// n int, nanAbove byte) (kept, zeroSign int) counts, over n elements (a
// multiple of 16 and at most 255*16: the byte counters count one per
// block of 16 and must not wrap), the elements with the same canonical
// code and the same value, and the ±0 sign flips.
func fp8eq(f *file) {
	lo7 := f.Data("lo7", 0x7f7f7f7f7f7f7f7f, 0x7f7f7f7f7f7f7f7f)

	f.text("countFP8SSE2", "func(a, b *byte, bF, fF *float32, n int, nanAbove byte) (kept, zeroSign int)")
	f.MOVQ(f.Arg("a"), RSI)
	f.MOVQ(f.Arg("b"), RDI)
	f.MOVQ(f.Arg("bF"), RDX)
	f.MOVQ(f.Arg("fF"), R8)
	f.MOVQ(f.Arg("n"), RCX)
	f.MOVBLZX(f.Arg("nanAbove"), EAX)
	f.MOVQ(RAX, X14)
	f.PUNPCKLBW(X14, X14)
	f.PSHUFLW(U8(0), X14, X14)
	f.PSHUFD(U8(0), X14, X14) // X14: nanAbove in every byte
	f.MOVOU(lo7, X13)         // X13: 0x7f in every byte
	f.PXOR(X15, X15)          // X15: zero
	f.PXOR(X11, X11)          // X11: per-byte count of unchanged elements
	f.PXOR(X12, X12)          // X12: per-byte count of ±0 sign flips
	f.SHRQ(U8(4), RCX)
	f.JZ(LabelRef("done"))

	f.Label("loop")
	f.MOVOU(Mem{Base: RSI}, X0) // codes a
	f.MOVOU(Mem{Base: RDI}, X1) // codes b
	f.MOVO(X0, X2)
	f.PCMPEQB(X1, X2) // X2: a == b
	f.MOVO(X0, X3)
	f.POR(X1, X3)
	f.PAND(X13, X3)
	f.PCMPEQB(X15, X3) // X3: both codes are ±0
	f.MOVO(X0, X4)
	f.PAND(X13, X4)
	f.PCMPGTB(X14, X4) // X4: a is NaN
	f.MOVO(X1, X5)
	f.PAND(X13, X5)
	f.PCMPGTB(X14, X5) // X5: b is NaN
	f.PAND(X5, X4)     // X4: both NaN
	f.MOVO(X2, X6)
	f.PANDN(X3, X6) // X6: a != b and both ±0: a sign flip
	f.POR(X3, X2)
	f.POR(X4, X2) // X2: same canonical code
	f.sameValue(0, X0)
	f.sameValue(16, X1)
	f.sameValue(32, X3)
	f.sameValue(48, X4)
	f.PACKSSLW(X1, X0)
	f.PACKSSLW(X4, X3)
	f.PACKSSWB(X3, X0) // X0: same value, one byte per element in order
	f.PAND(X2, X0)     // X0: unchanged
	f.PSUBB(X0, X11)
	f.PSUBB(X6, X12)
	f.ADDQ(U8(16), RSI)
	f.ADDQ(U8(16), RDI)
	f.ADDQ(U8(64), RDX)
	f.ADDQ(U8(64), R8)
	f.DECQ(RCX)
	f.JNZ(LabelRef("loop"))

	f.Label("done")
	f.PSADBW(X15, X11)
	f.PSADBW(X15, X12)
	f.PSHUFD(U8(0x4e), X11, X0)
	f.PADDQ(X0, X11)
	f.PSHUFD(U8(0x4e), X12, X1)
	f.PADDQ(X1, X12)
	f.MOVQ(X11, RAX)
	f.MOVQ(RAX, f.Arg("kept"))
	f.MOVQ(X12, RAX)
	f.MOVQ(RAX, f.Arg("zeroSign"))
	f.RET()
}

// sameValue is one float group (the SAMEVAL macro of the hand-written
// file): dst = bF[off:off+4], X9 = fF[off:off+4]; it leaves in dst the
// mask of sameValue: equal (±0 included), or both NaN.
func (f *file) sameValue(off int, dst VecPhysical) {
	f.MOVUPS(Mem{Base: RDX, Disp: off}, dst)
	f.MOVUPS(Mem{Base: R8, Disp: off}, X9)
	f.MOVAPS(dst, X10)
	f.CMPPS(X9, X10, U8(0))  // bF == fF
	f.CMPPS(dst, dst, U8(3)) // bF is NaN
	f.CMPPS(X9, X9, U8(3))   // fF is NaN
	f.ANDPS(X9, dst)
	f.ORPS(X10, dst)
}

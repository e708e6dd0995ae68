package main

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// e4m3blocks512 writes e4m3blocks512_amd64.s: e4m3BlocksAVX512, the
// exact statistics of F8_E4M3 code pairs, block after block, in 512-bit
// vectors (the Go side is e4m3run_amd64.go, the references e4m3RunGo and
// e4m3BlocksGo in e4m3exact.go, the AVX2 kernel e4m3run.go). The sums are
// those of the AVX2 kernel and of the Go loop bit for bit: every partial
// sum is exact (e4m3exact.go), so the order and the number of lanes do
// not matter.
//
// Decode. The value of every code is a float64 whose low 48 bits are
// zero (at most 4 significant bits): e4m3Tab holds the two top bytes of
// the value of each magnitude m = c & 0x7f (lo bytes, then hi bytes; the
// NaN magnitude 0x7f gets those of a float64 NaN). VPERMI2B looks both up
// for 64 codes at once (it reads the low 7 bits of each index byte);
// VPUNPCKL/HBW interleave them into words and a zero-masked VPERMB moves
// eight words to the top of eight qwords: eight vectors of eight float64
// per 64 codes. The two sides go through the same permutation, so the
// pairs stay aligned.
//
// Signs. As in the AVX2 kernel only the b side carries one, the sign of
// the product σ = sign(c_b) xor sign(c_f) (the f side decodes to |v_f|):
// B² = v_b², F² = v_f², B·F = v_b·v_f and |F·s_f − B·s_b| = |v_f·s_f −
// v_b·s_b|.
//
// NaN. A NaN code decodes to a NaN, which makes Σv_b² or Σv_f² a NaN: one
// check of the two sums per block.
//
// Sums. bb, ff, bf in two accumulators each (VFMADD231PD), the maximum of
// |F − B| (scales 1) or |F·s_f − B·s_b| (VMULPD, VFMSUB231PD: exact for the
// scales the caller allows) in two by VRANGEPD (the larger magnitude, sign
// cleared).
//
// Counts. eq = (c_b == c_f) and z = ((c_b | c_f) & 0x7f == 0), i.e. both
// codes ±0, as mask registers; POPCNT counts #(z or eq), #eq and (scaled
// loop) #z; #(z and not eq) = #(z or eq) − #eq.
//
// Registers: Z0, Z1 the codes of b and f, then scratch with Z2-Z5, Z7
// (the words of the decode), Z9 (B), Z11 (F), Z13; Z6, Z12 s_b, s_f
// broadcast (scaled loop); Z26/Z27 bb, Z28/Z29 ff, Z30/Z31 bf, Z8/Z10 the
// maximum; Z16/Z17 the lo table, Z18/Z19 the hi table, Z20-Z23 the VPERMB
// indexes, Z24 0x80 bytes, Z25 0x7f bytes; K7 the top two bytes of each
// qword. SI, DI point at the end of the block's codes, DX is minus the
// pairs left; R8 #(z or eq), R9 #eq, R11 #z (scaled loop only); R10
// points at k[j], R12 at out[j], R13 counts the blocks done.
func e4m3blocks512(f *file) {
	// The VPERMB indexes: word i of the 32 of a vector to the top of
	// qword i%8 of index vector i/8.
	idx := make([]uint64, 32)
	for i := range idx {
		idx[i] = uint64(2*i+1)<<56 | uint64(2*i)<<48
	}
	e5k := f.Data("e5k", idx...)

	// e4m3BlocksAVX2 for bn a positive multiple of 64: block j runs the
	// unit loop when k[j] is e4m3Same, the scaled one with k[j].kb, kf
	// when it is e4m3Diff, and overwrites out[j] with its sums like
	// e4m3BlocksGo; the kernel returns at the first block that is
	// e4m3Generic or holds a NaN code, with the number of blocks done.
	// With p not nil it also adds each block done into *p as
	// partial.addE4M3 does, in order, with the same operations (the add
	// section, e4m3Add5).
	f.text("e4m3BlocksAVX512", "func(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Sums, tab *[256]byte, p *partial) int")
	f.useGoAsm("const_e4m3Same", "const_e4m3Diff",
		"e4m3Block__size", "e4m3Block_class", "e4m3Block_kb", "e4m3Block_kf", "e4m3Block_bb",
		"e4m3Block_ff", "e4m3Block_bf", "e4m3Block_mxs", "e4m3Block_mbb", "e4m3Block_mff",
		"e4m3Block_cross2", "e4m3Block_crossNeg", "e4m3Block_unit",
		"e4m3Sums__size", "e4m3Sums_bb", "e4m3Sums_ff", "e4m3Sums_bf", "e4m3Sums_mx",
		"e4m3Sums_changed", "e4m3Sums_zeroSign",
		"partial_changed", "partial_zeroSign", "partial_normB", "partial_normF", "partial_dot",
		"partial_maxAbs", "partial_sumSqDiff")
	blk := func(field string) Mem { return Mem{Base: R10, Disp: f.layout("e4m3Block_" + field)} }
	sums := func(field string) Mem { return Mem{Base: R12, Disp: f.layout("e4m3Sums_" + field)} }
	f.MOVQ(f.Arg("b"), RSI)
	f.MOVQ(f.Arg("f"), RDI)
	f.MOVQ(f.Arg("k"), R10)
	f.MOVQ(f.Arg("out"), R12)
	f.MOVQ(f.Arg("tab"), RAX)
	f.XORQ(R13, R13)
	f.VMOVDQU64(Mem{Base: RAX}, Z16)
	f.VMOVDQU64(Mem{Base: RAX, Disp: 64}, Z17)
	f.VMOVDQU64(Mem{Base: RAX, Disp: 128}, Z18)
	f.VMOVDQU64(Mem{Base: RAX, Disp: 192}, Z19)
	f.VMOVDQU64(e5k, Z20)
	f.VMOVDQU64(e5k.Offset(64), Z21)
	f.VMOVDQU64(e5k.Offset(128), Z22)
	f.VMOVDQU64(e5k.Offset(192), Z23)
	f.MOVL(U32(0x80), EAX)
	f.VPBROADCASTB(EAX, Z24)
	f.MOVL(U32(0x7f), EAX)
	f.VPBROADCASTB(EAX, Z25)
	f.MOVQ(U64(0xc0c0c0c0c0c0c0c0), RAX)
	f.KMOVQ(RAX, K7)

	f.Label("block")
	f.CMPQ(R13, f.Arg("nk"))
	f.JEQ(LabelRef("ret"))
	f.MOVQ(f.Arg("bn"), RDX)
	f.ADDQ(RDX, RSI)
	f.ADDQ(RDX, RDI)
	f.NEGQ(RDX)
	for _, z := range []VecPhysical{Z26, Z27, Z28, Z29, Z30, Z31, Z8, Z10} {
		f.VPXORQ(z, z, z)
	}
	f.XORQ(R8, R8)
	f.XORQ(R9, R9)
	f.XORQ(R11, R11)
	f.MOVBLZX(blk("class"), EAX)
	f.CMPQ(RAX, U8(f.layout("const_e4m3Same")))
	f.JEQ(LabelRef("unit"))
	f.CMPQ(RAX, U8(f.layout("const_e4m3Diff")))
	f.JNE(LabelRef("ret")) // e4m3Generic

	f.VBROADCASTSD(blk("kb"), Z6)
	f.VBROADCASTSD(blk("kf"), Z12)
	f.Label("scaled")
	f.e4m3Decode5()
	f.KMOVQ(K2, RAX) // #z
	f.POPCNTQ(RAX, RAX)
	f.ADDQ(RAX, R11)
	f.e4m3Words5(Z2, Z4, f.e4m3Scaled5)
	f.e4m3Words5(Z3, Z5, f.e4m3Scaled5)
	f.ADDQ(U8(64), RDX)
	f.JNZ(LabelRef("scaled"))
	f.MOVQ(R11, RCX) // scales differ: every pair but two zeros changed
	f.JMP(LabelRef("sums"))

	f.Label("unit")
	f.e4m3Decode5()
	f.e4m3Words5(Z2, Z4, f.e4m3Unit5)
	f.e4m3Words5(Z3, Z5, f.e4m3Unit5)
	f.ADDQ(U8(64), RDX)
	f.JNZ(LabelRef("unit"))
	f.MOVQ(R8, RCX) // one scale: the pairs of different codes changed

	f.Label("sums")
	f.Comment("CX holds the pairs that did not change.")
	f.VADDPD(Z27, Z26, Z26)
	f.VADDPD(Z29, Z28, Z28)
	f.VADDPD(Z31, Z30, Z30)
	f.VRANGEPD(U8(0x0b), Z10, Z8, Z8)
	f.VEXTRACTF64X4(U8(1), Z26, Y0)
	f.VADDPD(Y26, Y0, Y0) // bb
	f.VEXTRACTF64X4(U8(1), Z28, Y1)
	f.VADDPD(Y28, Y1, Y1) // ff
	f.VEXTRACTF64X4(U8(1), Z30, Y2)
	f.VADDPD(Y30, Y2, Y2) // bf
	f.VEXTRACTF64X4(U8(1), Z8, Y3)
	f.VMAXPD(Y8, Y3, Y3)  // max
	f.VHADDPD(Y1, Y0, Y0) // bb01 ff01 bb23 ff23
	f.VEXTRACTF128(U8(1), Y0, X1)
	f.VADDPD(X1, X0, X0) // bb ff
	f.VEXTRACTF128(U8(1), Y2, X1)
	f.VADDPD(X1, X2, X2)
	f.VPERMILPD(U8(1), X2, X1)
	f.VADDSD(X1, X2, X2) // bf
	f.VEXTRACTF128(U8(1), Y3, X1)
	f.VMAXPD(X1, X3, X3)
	f.VPERMILPD(U8(1), X3, X1)
	f.VMAXSD(X1, X3, X3) // max
	f.VPERMILPD(U8(1), X0, X1)
	f.VADDSD(X1, X0, X1)
	f.VUCOMISD(X1, X1)
	f.JPS(LabelRef("ret")) // a NaN code
	f.VMOVSD(X0, sums("bb"))
	f.VMOVHPD(X0, sums("ff"))
	f.VMOVSD(X2, sums("bf"))
	f.VMOVSD(X3, sums("mx"))
	f.MOVQ(f.Arg("bn"), RBX)
	f.SUBQ(RCX, RBX)
	f.MOVQ(RBX, sums("changed"))
	f.SUBQ(R9, R8) // #(z and not eq)
	f.MOVQ(R8, sums("zeroSign"))
	f.e4m3Add5(blk)
	f.Label("next")
	f.ADDQ(U32(f.layout("e4m3Block__size")), R10)
	f.ADDQ(U32(f.layout("e4m3Sums__size")), R12)
	f.INCQ(R13)
	f.JMP(LabelRef("block"))

	f.Label("ret")
	f.MOVQ(R13, f.Ret(0))
	f.VZEROUPPER()
	f.RET()
}

// e4m3Add5 is the add section of e4m3BlocksAVX512 (before next:): with p
// not nil it adds the sums of the block just done (X0 = [bb, ff], X2 =
// bf, X3 = mx, BX changed, R8 zeroSign; R10 its e4m3Block, blk its
// fields) into the partial at p, as partial.addE4M3 does: each product of
// a block factor with a sum rounded once (VMULSD then VADDSD, never
// fused), the maximum by VMAXSD (no NaN gets there, every value is ≥ +0),
// and Σ(f−b)² as k.bb·(ff + bb − 2bf) for one scale, else as e4m3SumSq:
// the 128-bit integer mff·A + mbb·B − (±cross2)·C (A, B, C the sums in
// units of 2^-18), rounded to nearest even with a sticky bit, times 2^n
// and the block's unit. It clobbers AX, BX, CX, DX, R8, R9, R11 and
// X4-X6.
func (f *file) e4m3Add5(blk func(string) Mem) {
	part := func(field string) Mem { return Mem{Base: RAX, Disp: f.layout("partial_" + field)} }
	f.MOVQ(f.Arg("p"), RAX)
	f.TESTQ(RAX, RAX)
	f.JZ(LabelRef("next"))
	f.ADDQ(RBX, part("changed"))
	f.ADDQ(R8, part("zeroSign"))
	f.VMULSD(blk("bb"), X0, X4)
	f.VADDSD(part("normB"), X4, X4)
	f.VMOVSD(X4, part("normB"))
	f.VPERMILPD(U8(1), X0, X5) // ff
	f.VMULSD(blk("ff"), X5, X4)
	f.VADDSD(part("normF"), X4, X4)
	f.VMOVSD(X4, part("normF"))
	f.VMULSD(blk("bf"), X2, X4)
	f.VADDSD(part("dot"), X4, X4)
	f.VMOVSD(X4, part("dot"))
	f.VMULSD(blk("mxs"), X3, X4)
	f.VMAXSD(part("maxAbs"), X4, X4)
	f.VMOVSD(X4, part("maxAbs"))
	f.MOVBLZX(blk("class"), EBX)
	f.CMPQ(RBX, U8(f.layout("const_e4m3Same")))
	f.JNE(LabelRef("add5diff"))
	f.VADDSD(X0, X5, X4) // ff + bb
	f.VADDSD(X2, X2, X6) // 2·bf
	f.VSUBSD(X6, X4, X4)
	f.VMULSD(blk("bb"), X4, X4)
	f.JMP(LabelRef("add5ss"))

	f.Label("add5diff")
	f.MOVQ(U64(0x4110000000000000), RBX) // 2^18
	f.VMOVQ(RBX, X6)
	f.VMULSD(X6, X5, X4)
	f.VCVTTSD2SIQ(X4, R8) // A = Σv_f²
	f.VMULSD(X6, X0, X4)
	f.VCVTTSD2SIQ(X4, R9) // B = Σv_b²
	f.VMULSD(X6, X2, X4)
	f.VCVTTSD2SIQ(X4, R11) // C = Σv_b·v_f
	f.MOVQ(blk("mff"), RAX)
	f.MULQ(R8)
	f.MOVQ(RAX, R8)
	f.MOVQ(RDX, RCX) // t = CX:R8 = mff·A
	f.MOVQ(blk("mbb"), RAX)
	f.MULQ(R9)
	f.ADDQ(RAX, R8)
	f.ADCQ(RDX, RCX) // + mbb·B
	f.MOVQ(blk("cross2"), RAX)
	f.MOVBLZX(blk("crossNeg"), EBX)
	f.NEGQ(RBX)
	f.XORQ(RBX, RAX)
	f.SUBQ(RBX, RAX) // ±cross2, the sign of mb·mf
	f.IMULQ(R11)     // DX:AX = ±cross2·C, signed
	f.SUBQ(RAX, R8)
	f.SBBQ(RDX, RCX) // t ≥ 0: a sum of squares
	f.TESTQ(RCX, RCX)
	f.JNZ(LabelRef("add5wide"))
	f.VCVTUSI2SDQ(R8, X4, X4)
	f.JMP(LabelRef("add5unit"))

	f.Label("add5wide")
	f.BSRQ(RCX, R9) // n − 1, n the bits of hi
	f.MOVQ(RCX, RBX)
	f.MOVQ(U32(63), RCX)
	f.SUBQ(R9, RCX)     // 64 − n
	f.SHLQ(CL, R8, RBX) // m = hi<<(64−n) | lo>>n
	f.SHLQ(CL, R8)      // the bits of lo below m
	f.XORQ(RDX, RDX)
	f.TESTQ(R8, R8)
	f.SETNE(DL)
	f.ORQ(RDX, RBX) // sticky
	f.VCVTUSI2SDQ(RBX, X4, X4)
	f.LEAQ(Mem{Base: R9, Disp: 1024}, RBX)
	f.SHLQ(U8(52), RBX)
	f.VMOVQ(RBX, X6) // 2^n
	f.VMULSD(X6, X4, X4)

	f.Label("add5unit")
	f.VMULSD(blk("unit"), X4, X4)
	f.MOVQ(f.Arg("p"), RAX)

	f.Label("add5ss")
	f.VADDSD(part("sumSqDiff"), X4, X4)
	f.VMOVSD(X4, part("sumSqDiff"))
}

// e4m3Decode5 loads, counts and decodes the 64 pairs at SI, DI into the
// words Z2/Z4 (b/f: codes 0-7 of each 128-bit lane) and Z3/Z5 (codes
// 8-15); the z mask is left in K2 (the DECODE5 macro of the hand-written
// file).
func (f *file) e4m3Decode5() {
	f.VMOVDQU8(Mem{Base: RSI, Index: RDX, Scale: 1}, Z0)
	f.VMOVDQU8(Mem{Base: RDI, Index: RDX, Scale: 1}, Z1)
	f.VPCMPEQB(Z1, Z0, K1) // eq
	f.VPORQ(Z1, Z0, Z2)
	f.VPTESTNMB(Z25, Z2, K2) // z
	f.KORQ(K1, K2, K3)
	f.KMOVQ(K1, RAX)
	f.KMOVQ(K3, RBX)
	f.POPCNTQ(RAX, RAX)
	f.ADDQ(RAX, R9)
	f.POPCNTQ(RBX, RBX)
	f.ADDQ(RBX, R8)
	f.VMOVDQA64(Z0, Z2)
	f.VPTERNLOGD(U8(0x78), Z24, Z1, Z2) // b ^ (f & 0x80): σ in bit 7
	f.VMOVDQA64(Z2, Z3)
	f.VPERMI2B(Z17, Z16, Z3) // lo_b
	f.VMOVDQA64(Z2, Z4)
	f.VPERMI2B(Z19, Z18, Z4)            // |hi_b|
	f.VPTERNLOGD(U8(0xf8), Z24, Z2, Z4) // hi_b | σ
	f.VMOVDQA64(Z1, Z5)
	f.VPERMI2B(Z17, Z16, Z5) // lo_f
	f.VPERMI2B(Z19, Z18, Z1) // hi_f
	f.VPUNPCKLBW(Z4, Z3, Z2)
	f.VPUNPCKHBW(Z4, Z3, Z3)
	f.VPUNPCKLBW(Z1, Z5, Z4)
	f.VPUNPCKHBW(Z1, Z5, Z5)
}

// e4m3Sums5 adds B = Z9, F = Z11 into the accumulators bb, ff, bf
// (SUMS5).
func (f *file) e4m3Sums5(bb, ff, bf VecPhysical) {
	f.VFMADD231PD(Z9, Z9, bb)
	f.VFMADD231PD(Z11, Z11, ff)
	f.VFMADD231PD(Z11, Z9, bf)
}

// e4m3Unit5 adds B, F into the accumulators and keeps max |F − B| in mx
// (UNIT5).
func (f *file) e4m3Unit5(bb, ff, bf, mx VecPhysical) {
	f.e4m3Sums5(bb, ff, bf)
	f.VSUBPD(Z9, Z11, Z13)
	f.VRANGEPD(U8(0x0b), Z13, mx, mx)
}

// e4m3Scaled5 adds B, F into the accumulators and keeps
// max |F·s_f − B·s_b| in mx (SCALED5).
func (f *file) e4m3Scaled5(bb, ff, bf, mx VecPhysical) {
	f.e4m3Sums5(bb, ff, bf)
	f.VMULPD(Z6, Z9, Z13)
	f.VFMSUB231PD(Z12, Z11, Z13)
	f.VRANGEPD(U8(0x0b), Z13, mx, mx)
}

// e4m3Words5 runs step over the four float64 vectors of the words wb, wf,
// alternating the accumulator sets (WORDS5): VPERMB with index vector
// Z20+i, zero-masked by K7, moves them to B = Z9, F = Z11 (VEC5).
func (f *file) e4m3Words5(wb, wf VecPhysical, step func(bb, ff, bf, mx VecPhysical)) {
	for i, idx := range []VecPhysical{Z20, Z21, Z22, Z23} {
		f.VPERMB_Z(wb, idx, K7, Z9)
		f.VPERMB_Z(wf, idx, K7, Z11)
		if i%2 == 0 {
			step(Z26, Z28, Z30, Z8)
		} else {
			step(Z27, Z29, Z31, Z10)
		}
	}
}

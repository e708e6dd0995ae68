package main

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// e4m3run writes e4m3run_amd64.s: e4m3BlocksAVX2, the exact statistics
// of F8_E4M3 code pairs, block after block (the Go side is
// e4m3run_amd64.go, the references e4m3RunGo and e4m3BlocksGo in
// e4m3exact.go).
//
// Decode. Every code c becomes the top 16 bits of a float64 (the other
// 48 bits zero) whose value is e4m3(c)·2^8, a normal number for every
// code but ±0 (exact zero) and NaN (garbage; the kernel reports it): with
// exponent field E = 1024 + e for the normal codes (e = 1..15) the low
// byte of those 16 bits is (E&15)<<4 | mant<<1 = 2m (m = c & 0x7f) and
// the high byte is sign<<7 | E>>4 = sign<<7 | 64. With c2 = c+c (a byte
// add: 2m, the sign dropped) and idx = min(c2, 15) (0, 2, ..., 14 for the
// subnormal codes and zero, 15 for the rest), two VPSHUFB tables give
//
//	lo = c2 + T2[idx]   (T2[15] = 0; the subnormals m·2^-9 = m·2^-1
//	                     scaled get their own exponent and mantissa)
//	hi = H[idx]         (0 for zero, 63 for m = 1..3, 64 otherwise)
//
// and VPUNPCKL/HBW interleaves them into 16-bit words, which VPSHUFB
// (word positions 0-2 of a qword) and VPAND (position 3) move to the top
// of a qword each: four vectors of four float64 per 16 codes. The two
// sides go through the same permutation, so the pairs stay aligned.
//
// Signs. Only the b side carries one, the sign of the product
// σ = sign(c_b) xor sign(c_f) (the f side decodes to |v_f|): then
// B² = v_b², F² = v_f², B·F = v_b·v_f, and F·s_f − B·s_b = ±(v_f·s_f −
// v_b·s_b), whose magnitude is all the maximum needs.
//
// Sums. bb, ff, bf go into one accumulator each (VFMADD231PD); every
// partial sum is a multiple of 2^-2 (the values are multiples of
// 2^-1) below 2^51, so any order gives the exact sum. At the end of a
// block the four lanes of each, scaled by 2^-16, are added into the four
// lanes of out[j] (e4m3Lanes: the caller folds a band's rows into them,
// e4m3fold.go, and adds the lanes up once; still exact), with no
// horizontal reduction. The maximum of |F − B| (scales 1; see
// e4m3Unit1) or |F·s_f − B·s_b| (VMULPD, VFMSUB231PD: exact for the
// scales the caller allows) is scaled by 2^-8 and kept per lane too.
//
// Counts. Byte compares: eq = (c_b == c_f), z = (max(c2_b, c2_f) == 0),
// i.e. both codes ±0; VPMOVMSKB and POPCNT count #(z or eq), #eq and
// (scaled loop) #z; #(z and not eq) = #(z or eq) − #eq. The same
// max(c2_b, c2_f) is 0xFE exactly when a code is NaN (m = 0x7f); its
// running byte maximum is checked once at the end of a block.
//
// Cost. On the Zen 1 this was measured on (256-bit ops split in two),
// every ymm instruction, loads included, costs about 0.7 cycles whatever
// its kind: the loops issue about 1.4 per cycle. Per 32 pairs the unit
// loop has 87 (25 decode and count, 16 moves to qwords, 24 FMA, 20 for
// the maximum), the scaled one 99 (32 for the maximum): about 0.82 and
// 0.95 ns per pair at 2.4 GHz. Counting on the integer side (SWAR), two
// accumulators per sum and software prefetch were tried: no faster. A
// block adds about 40 instructions around its loop (setup, NaN check,
// the adds into out[j]); with the horizontal reductions it had 55, and
// blocks of 128 pairs of two scales took 0.71 ns a pair against 0.57 in
// one long block.
//
// Registers: Y0-Y5 scratch; Y6 bb, Y8 ff, Y10 bf (one accumulator each:
// two were not faster); Y7 scratch of the unit loop, the float64
// magnitude mask in the scaled one, whose Y9, Y11 hold s_b, s_f
// broadcast; Y12 the maximum (float64; in the unit loop packed high
// dwords, see e4m3Unit1); Y13 the running byte max of max(c2_b, c2_f);
// Y14 T2, Y15 H. SI, DI point at the end of the block's codes, DX is
// minus the pairs left; R8 #(z or eq), R9 #eq, R11 #z (scaled loop
// only). Besides, R10 points at k[j], R12 at out[j], R13 counts the
// blocks done; Y14, Y15 are loaded once.
func e4m3run(f *file) {
	const (
		w4 = 0x0f0f0f0f0f0f0f0f
		s8 = 0x8080808080808080
		m1 = 0x7fffffffffffffff
		n2 = 0xfefefefefefefefe
		m2 = 0x7fffffff7fffffff
	)
	e4k := f.Data("e4k",
		w4, w4, w4, w4, // 0: idx limit
		s8, s8, s8, s8, // 32: sign bit
		// 64: T2: 0 . de . ec . f2 . | f8 . fa . fc . fe 00 (both lanes)
		0x00f200ec00de0000, 0x00fe00fc00fa00f8, 0x00f200ec00de0000, 0x00fe00fc00fa00f8,
		// 96: H: 0 . 63 . 63 . 63 . | 64 . 64 . 64 . 64 64
		0x003f003f003f0000, 0x4040004000400040, 0x003f003f003f0000, 0x4040004000400040,
		// 128: word 0 of each qword to its top
		0x0100808080808080, 0x0908808080808080, 0x0100808080808080, 0x0908808080808080,
		// 160: word 1
		0x0302808080808080, 0x0b0a808080808080, 0x0302808080808080, 0x0b0a808080808080,
		// 192: word 2
		0x0504808080808080, 0x0d0c808080808080, 0x0504808080808080, 0x0d0c808080808080,
		// 224: word 3: already on top
		0xffff000000000000, 0xffff000000000000, 0xffff000000000000, 0xffff000000000000,
		m1, m1, m1, m1, // 256: float64 magnitude
		n2, n2, n2, n2, // 288: c2 of a NaN code
		0, 0, 0, 0, // 320: zero
		m2, m2, m2, m2, // 352: float32-style magnitude of dwords
		// 384: 2^-16 in each float64
		0x3ef0000000000000, 0x3ef0000000000000, 0x3ef0000000000000, 0x3ef0000000000000,
		// 416: 2^-8 in each float64
		0x3f70000000000000, 0x3f70000000000000, 0x3f70000000000000, 0x3f70000000000000,
		// 448: the high dword of each qword
		0xffffffff00000000, 0xffffffff00000000, 0xffffffff00000000, 0xffffffff00000000,
	)
	k := e4m3Consts{
		k15: e4k, sign: e4k.Offset(32),
		w:   [4]Mem{e4k.Offset(128), e4k.Offset(160), e4k.Offset(192), e4k.Offset(224)},
		abs: e4k.Offset(256), nanC2: e4k.Offset(288), zero: e4k.Offset(320), abs32: e4k.Offset(352),
		unit16: e4k.Offset(384), unit8: e4k.Offset(416), hi32: e4k.Offset(448),
	}

	// Block j (of nk, bn pairs each, bn a positive multiple of 32) runs
	// the unit loop when k[j] is e4m3Same, the scaled one with k[j].kb,
	// kf when it is e4m3Diff, and adds its sums into the lanes out[j]
	// (e4m3Lanes: the four lanes of each accumulator into the four of
	// the sum, no horizontal reduction; the counts into the counts);
	// the kernel returns at the first block that is e4m3Generic or holds
	// a NaN code, with the number of blocks done (out[j] untouched from
	// there on).
	f.text("e4m3BlocksAVX2", "func(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Lanes) int")
	f.useGoAsm("const_e4m3Same", "const_e4m3Diff", "e4m3Block__size", "e4m3Block_class",
		"e4m3Block_kb", "e4m3Block_kf", "e4m3Lanes__size", "e4m3Lanes_bb", "e4m3Lanes_ff",
		"e4m3Lanes_bf", "e4m3Lanes_mx", "e4m3Lanes_changed", "e4m3Lanes_zeroSign")
	blk := func(field string) Mem { return Mem{Base: R10, Disp: f.layout("e4m3Block_" + field)} }
	sums := func(field string) Mem { return Mem{Base: R12, Disp: f.layout("e4m3Lanes_" + field)} }
	f.MOVQ(f.Arg("b"), RSI)
	f.MOVQ(f.Arg("f"), RDI)
	f.MOVQ(f.Arg("k"), R10)
	f.MOVQ(f.Arg("out"), R12)
	f.XORQ(R13, R13)
	f.VMOVDQU(e4k.Offset(64), Y14)
	f.VMOVDQU(e4k.Offset(96), Y15)

	f.Label("block")
	f.CMPQ(R13, f.Arg("nk"))
	f.JEQ(LabelRef("ret"))
	f.MOVQ(f.Arg("bn"), RDX)
	f.ADDQ(RDX, RSI)
	f.ADDQ(RDX, RDI)
	f.NEGQ(RDX)
	f.VPXOR(Y6, Y6, Y6)
	f.VPXOR(Y8, Y8, Y8)
	f.VPXOR(Y10, Y10, Y10)
	f.VPXOR(Y12, Y12, Y12)
	f.VPXOR(Y13, Y13, Y13)
	f.XORQ(R8, R8)
	f.XORQ(R9, R9)
	f.XORQ(R11, R11)
	f.MOVBLZX(blk("class"), EAX)
	f.CMPQ(RAX, U8(f.layout("const_e4m3Same")))
	f.JEQ(LabelRef("unit"))
	f.CMPQ(RAX, U8(f.layout("const_e4m3Diff")))
	f.JNE(LabelRef("ret")) // e4m3Generic

	f.VBROADCASTSD(blk("kb"), Y9)
	f.VBROADCASTSD(blk("kf"), Y11)
	f.VMOVDQU(k.abs, Y7)
	f.Label("scaled")
	f.e4m3Decode(k)
	f.POPCNTL(EBX, EBX) // #z
	f.ADDQ(RBX, R11)
	f.e4m3Words(k, Y3, Y0, f.e4m3Scaled, f.e4m3Scaled)
	f.e4m3Words(k, Y4, Y2, f.e4m3Scaled, f.e4m3Scaled)
	f.ADDQ(U8(32), RDX)
	f.JNZ(LabelRef("scaled"))
	f.e4m3NaNCheck(k)
	f.VMOVAPD(Y12, Y4) // max |F·s_f − B·s_b|, per lane
	f.MOVQ(R11, RCX)   // scales differ: every pair but two zeros changed
	f.JMP(LabelRef("sums"))

	f.Label("unit")
	f.e4m3Decode(k)
	unit1 := func() { f.e4m3Unit1(k.abs32) }
	f.e4m3Words(k, Y3, Y0, f.e4m3Unit0, unit1)
	f.e4m3Words(k, Y4, Y2, f.e4m3Unit0, unit1)
	f.ADDQ(U8(32), RDX)
	f.JNZ(LabelRef("unit"))
	f.e4m3NaNCheck(k)
	// The packed high dwords of max |F − B| as float64: the even ones
	// shifted to the top, the odd ones already there.
	f.VPSLLQ(U8(32), Y12, Y4)
	f.VPAND(k.hi32, Y12, Y5)
	f.VMAXPD(Y5, Y4, Y4)
	f.MOVQ(R8, RCX) // one scale: the pairs of different codes changed

	f.Label("sums")
	f.Comment("Y4 holds the maximum per lane (·2^8 like the values), CX the", "pairs that did not change.")
	f.VMULPD(k.unit8, Y4, Y4) // exact
	f.VMAXPD(sums("mx"), Y4, Y4)
	f.VMOVUPD(Y4, sums("mx"))
	for _, a := range []struct {
		acc   VecPhysical
		field string
	}{{Y6, "bb"}, {Y8, "ff"}, {Y10, "bf"}} {
		f.VMULPD(k.unit16, a.acc, a.acc) // exact
		f.VADDPD(sums(a.field), a.acc, a.acc)
		f.VMOVUPD(a.acc, sums(a.field))
	}
	f.MOVQ(f.Arg("bn"), RBX)
	f.SUBQ(RCX, RBX)
	f.ADDQ(RBX, sums("changed"))
	f.SUBQ(R9, R8) // #(z and not eq)
	f.ADDQ(R8, sums("zeroSign"))
	f.ADDQ(U32(f.layout("e4m3Block__size")), R10)
	f.ADDQ(U32(f.layout("e4m3Lanes__size")), R12)
	f.INCQ(R13)
	f.JMP(LabelRef("block"))

	f.Label("ret")
	f.MOVQ(R13, f.Ret(0))
	f.VZEROUPPER()
	f.RET()

	e4m3norm(f, k, e4k)
}

// e4m3norm writes e4m3NormAVX2: e4m3BlocksAVX2 for a side compared with
// itself (f = b, the statistics of a chunk whose two sides are the same
// bytes), for blocks of one scale: it adds Σv² into the lanes bb, ff, bf
// of out[j] and leaves mx and the counts (their sums are 0), exactly what
// e4m3BlocksAVX2 adds for the pairs (b[i], b[i]) (σ = 0, so B = F = |v|;
// the lanes hold other partial sums, exact either way). Only Σv² is
// computed: the decode of one side (without the sign, which a square
// drops), its moves to qwords and one FMA per four codes, about 25
// instructions per 32 codes where e4m3BlocksAVX2 takes 87 per 32 pairs.
// It returns at the first block that is not e4m3Same or holds a NaN code
// (the same running byte maximum of c2 as e4m3BlocksAVX2's), with the
// number of blocks done.
//
// Registers: Y0-Y5 scratch, Y6 and Y8 the sums (two accumulators, the
// four lanes of each; exact in any order), Y13 the byte maximum of c2,
// Y14 T2, Y15 H; SI the end of the block's codes, DX minus the codes
// left, R10 k[j], R12 out[j], R13 the blocks done.
func e4m3norm(f *file, k e4m3Consts, e4k Mem) {
	f.text("e4m3NormAVX2", "func(b *byte, bn int, k *e4m3Block, nk int, out *e4m3Lanes) int")
	f.useGoAsm("const_e4m3Same", "e4m3Block__size", "e4m3Block_class", "e4m3Lanes__size", "e4m3Lanes_bb",
		"e4m3Lanes_ff", "e4m3Lanes_bf")
	blk := func(field string) Mem { return Mem{Base: R10, Disp: f.layout("e4m3Block_" + field)} }
	sums := func(field string) Mem { return Mem{Base: R12, Disp: f.layout("e4m3Lanes_" + field)} }
	f.MOVQ(f.Arg("b"), RSI)
	f.MOVQ(f.Arg("k"), R10)
	f.MOVQ(f.Arg("out"), R12)
	f.XORQ(R13, R13)
	f.VMOVDQU(e4k.Offset(64), Y14)
	f.VMOVDQU(e4k.Offset(96), Y15)

	f.Label("nblock")
	f.CMPQ(R13, f.Arg("nk"))
	f.JEQ(LabelRef("nret"))
	f.MOVBLZX(blk("class"), EAX)
	f.CMPQ(RAX, U8(f.layout("const_e4m3Same")))
	f.JNE(LabelRef("nret"))
	f.MOVQ(f.Arg("bn"), RDX)
	f.ADDQ(RDX, RSI)
	f.NEGQ(RDX)
	f.VPXOR(Y6, Y6, Y6)
	f.VPXOR(Y8, Y8, Y8)
	f.VPXOR(Y13, Y13, Y13)

	f.Label("nloop")
	f.VMOVDQU(Mem{Base: RSI, Index: RDX, Scale: 1}, Y0)
	f.VPADDB(Y0, Y0, Y0)     // c2
	f.VPMAXUB(Y0, Y13, Y13)  // NaN check
	f.VPMINUB(k.k15, Y0, Y3) // idx
	f.VPSHUFB(Y3, Y14, Y4)
	f.VPADDB(Y0, Y4, Y4)   // lo
	f.VPSHUFB(Y3, Y15, Y0) // |hi|
	f.VPUNPCKLBW(Y0, Y4, Y3)
	f.VPUNPCKHBW(Y0, Y4, Y4)
	for _, wv := range []VecPhysical{Y3, Y4} {
		for i, w := range k.w {
			if i < 3 {
				f.VPSHUFB(w, wv, Y1)
			} else {
				f.VPAND(w, wv, Y1)
			}
			acc := Y6
			if i%2 == 1 {
				acc = Y8
			}
			f.VFMADD231PD(Y1, Y1, acc)
		}
	}
	f.ADDQ(U8(32), RDX)
	f.JNZ(LabelRef("nloop"))
	f.VPCMPEQB(k.nanC2, Y13, Y13)
	f.VPMOVMSKB(Y13, EAX)
	f.TESTL(EAX, EAX)
	f.JNZ(LabelRef("nret")) // a NaN code

	f.VADDPD(Y8, Y6, Y6)
	f.VMULPD(k.unit16, Y6, Y6) // exact
	for _, field := range []string{"bb", "ff", "bf"} {
		f.VADDPD(sums(field), Y6, Y0)
		f.VMOVUPD(Y0, sums(field))
	}
	f.ADDQ(U32(f.layout("e4m3Block__size")), R10)
	f.ADDQ(U32(f.layout("e4m3Lanes__size")), R12)
	f.INCQ(R13)
	f.JMP(LabelRef("nblock"))

	f.Label("nret")
	f.MOVQ(R13, f.Ret(0))
	f.VZEROUPPER()
	f.RET()
}

// e4m3Consts are the addresses of the constants in e4k<> that
// e4m3BlocksAVX2 reads from memory.
type e4m3Consts struct {
	k15, sign, abs, nanC2, zero, abs32 Mem
	w                                  [4]Mem // word i of each qword to its top
	unit16, unit8                      Mem    // 2^-16, 2^-8 in each float64
	hi32                               Mem    // the high dword of each qword
}

// e4m3Decode decodes the 32 pairs at SI, DI into the words Y3/Y0 (b/f,
// codes 0-7 and 16-23) and Y4/Y2 (8-15 and 24-31) and counts them (the
// DECODE macro of the hand-written file); it leaves z in BX.
func (f *file) e4m3Decode(k e4m3Consts) {
	f.VMOVDQU(Mem{Base: RSI, Index: RDX, Scale: 1}, Y0)
	f.VMOVDQU(Mem{Base: RDI, Index: RDX, Scale: 1}, Y1)
	f.VPCMPEQB(Y1, Y0, Y2)
	f.VPMOVMSKB(Y2, EAX) // eq
	f.VPXOR(Y1, Y0, Y2)
	f.VPAND(k.sign, Y2, Y2) // σ
	f.VPADDB(Y0, Y0, Y0)    // c2_b
	f.VPADDB(Y1, Y1, Y1)    // c2_f
	f.VPMAXUB(Y1, Y0, Y3)
	f.VPMAXUB(Y3, Y13, Y13)
	f.VPCMPEQB(k.zero, Y3, Y3)
	f.VPMOVMSKB(Y3, EBX)     // z
	f.VPMINUB(k.k15, Y0, Y3) // idx_b
	f.VPSHUFB(Y3, Y14, Y4)
	f.VPADDB(Y0, Y4, Y4) // lo_b
	f.VPSHUFB(Y3, Y15, Y0)
	f.VPOR(Y2, Y0, Y0)       // hi_b
	f.VPMINUB(k.k15, Y1, Y3) // idx_f
	f.VPSHUFB(Y3, Y14, Y2)
	f.VPADDB(Y1, Y2, Y2)   // lo_f
	f.VPSHUFB(Y3, Y15, Y1) // hi_f
	f.VPUNPCKLBW(Y0, Y4, Y3)
	f.VPUNPCKHBW(Y0, Y4, Y4)
	f.VPUNPCKLBW(Y1, Y2, Y0)
	f.VPUNPCKHBW(Y1, Y2, Y2)
	f.POPCNTL(EAX, ECX)
	f.ADDQ(RCX, R9)
	f.ORL(EBX, EAX)
	f.POPCNTL(EAX, EAX)
	f.ADDQ(RAX, R8)
}

// e4m3Sums adds B = Y1, F = Y5 into the accumulators Y6 (bb), Y8 (ff),
// Y10 (bf) (SUMS).
func (f *file) e4m3Sums() {
	f.VFMADD231PD(Y1, Y1, Y6)
	f.VFMADD231PD(Y5, Y5, Y8)
	f.VFMADD231PD(Y5, Y1, Y10)
}

// e4m3Unit0 and e4m3Unit1 keep max |F − B| (UNIT0, UNIT1). F − B is a
// multiple of 2^-1 below 2^18: its high dword holds it whole (the low one
// is zero), so e4m3Unit0 keeps it in Y7 and e4m3Unit1 packs the high
// dwords of two vectors (VSHUFPS) and keeps their largest magnitude in
// Y12 by unsigned dword compares.
func (f *file) e4m3Unit0() {
	f.e4m3Sums()
	f.VSUBPD(Y1, Y5, Y7)
}

// e4m3Unit1: see e4m3Unit0; abs32 is the dword magnitude mask.
func (f *file) e4m3Unit1(abs32 Mem) {
	f.e4m3Sums()
	f.VSUBPD(Y1, Y5, Y5)
	f.VSHUFPS(U8(0xdd), Y5, Y7, Y5)
	f.VPAND(abs32, Y5, Y5)
	f.VPMAXUD(Y5, Y12, Y12)
}

// e4m3Scaled keeps max |F·s_f − B·s_b| in Y12 (float64; SCALED0 and
// SCALED1).
func (f *file) e4m3Scaled() {
	f.e4m3Sums()
	f.VMULPD(Y9, Y1, Y1)
	f.VFMSUB231PD(Y11, Y5, Y1)
	f.VANDPD(Y7, Y1, Y1)
	f.VMAXPD(Y1, Y12, Y12)
}

// e4m3Words runs step0, step1 alternately over the four float64 vectors
// of the words wb, wf (WORDS).
func (f *file) e4m3Words(k e4m3Consts, wb, wf VecPhysical, step0, step1 func()) {
	for i, w := range k.w {
		if i < 3 {
			f.VPSHUFB(w, wb, Y1)
			f.VPSHUFB(w, wf, Y5)
		} else {
			f.VPAND(w, wb, Y1)
			f.VPAND(w, wf, Y5)
		}
		if i%2 == 0 {
			step0()
		} else {
			step1()
		}
	}
}

// e4m3NaNCheck returns from the kernel when a code of the block is NaN:
// the running byte maximum of max(c2_b, c2_f) is 0xFE somewhere.
func (f *file) e4m3NaNCheck(k e4m3Consts) {
	f.VPCMPEQB(k.nanC2, Y13, Y13)
	f.VPMOVMSKB(Y13, EAX)
	f.TESTL(EAX, EAX)
	f.JNZ(LabelRef("ret"))
}

package main

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// accumulate writes accumulate_amd64.s: accumulateFMA,
// accumulateBF16FMA and accumulateBF16AVX512 add n pairs (a positive
// multiple of 8) into the lanes at l (struct lanes: 8 lanes of float64
// per sum).
//
// In the AVX2 kernels the lanes live in registers: ss in Y8 (lanes 0-3)
// and Y9 (lanes 4-7), nb in Y10/Y11, nf in Y12/Y13, d in Y14/Y15, and the
// running maximum of |f-b| in the four lanes of Y7.
func accumulate(f *file) {
	abs := f.Data("absmask64", 0x7fffffffffffffff, 0x7fffffffffffffff, 0x7fffffffffffffff, 0x7fffffffffffffff)
	f.text("accumulateFMA", "func(l *lanes, b, f *float32, n int)")
	a := f.lanesAddr()
	f.accumulateArgs(2) // bytes per side
	f.loadLanes(a)
	f.Label("f32loop")
	f.VCVTPS2PD(Mem{Base: RSI, Index: RAX, Scale: 1}, Y0)
	f.VCVTPS2PD(Mem{Base: RSI, Index: RAX, Scale: 1, Disp: 16}, Y1)
	f.VCVTPS2PD(Mem{Base: RDI, Index: RAX, Scale: 1}, Y2)
	f.VCVTPS2PD(Mem{Base: RDI, Index: RAX, Scale: 1, Disp: 16}, Y3)
	f.accumulateStep(abs)
	f.ADDQ(U8(32), RAX)
	f.CMPQ(RAX, RCX)
	f.JNE(LabelRef("f32loop"))
	f.storeLanes(a)
	f.VZEROUPPER()
	f.RET()

	// A BF16 value is the top half of a float32: interleaving the 16-bit
	// words with zeros (zero low half, value high half) gives the float32.
	f.text("accumulateBF16FMA", "func(l *lanes, b, f *byte, n int)")
	a = f.lanesAddr()
	f.accumulateArgs(1)
	f.VPXOR(X6, X6, X6)
	f.loadLanes(a)
	f.Label("bf16loop")
	f.VPUNPCKLWD(Mem{Base: RSI, Index: RAX, Scale: 1}, X6, X0) // b[0:4] as float32
	f.VPUNPCKHWD(Mem{Base: RSI, Index: RAX, Scale: 1}, X6, X1) // b[4:8]
	f.VPUNPCKLWD(Mem{Base: RDI, Index: RAX, Scale: 1}, X6, X2)
	f.VPUNPCKHWD(Mem{Base: RDI, Index: RAX, Scale: 1}, X6, X3)
	f.VCVTPS2PD(X0, Y0)
	f.VCVTPS2PD(X1, Y1)
	f.VCVTPS2PD(X2, Y2)
	f.VCVTPS2PD(X3, Y3)
	f.accumulateStep(abs)
	f.ADDQ(U8(16), RAX)
	f.CMPQ(RAX, RCX)
	f.JNE(LabelRef("bf16loop"))
	f.storeLanes(a)
	f.VZEROUPPER()
	f.RET()

	// accumulateBF16FMA in 512-bit vectors: the eight lanes of each sum
	// are the eight float64 of one register (ss Z8, nb Z10, nf Z12, d Z14;
	// the maximum of |f-b| in Z7), the same operations on each lane in
	// the same order, so the same bits. VPMOVZXWD and VPSLLD widen eight
	// BF16 values to float32, VCVTPS2PD to float64.
	f.text("accumulateBF16AVX512", "func(l *lanes, b, f *byte, n int)")
	a = f.lanesAddr()
	f.accumulateArgs(1)
	f.VMOVUPD(a.ss, Z8)
	f.VMOVUPD(a.nb, Z10)
	f.VMOVUPD(a.nf, Z12)
	f.VMOVUPD(a.d, Z14)
	f.VBROADCASTSD(a.mx, Z7)
	f.VBROADCASTSD(abs, Z6)
	f.Label("bf16loop512")
	f.VPMOVZXWD(Mem{Base: RSI, Index: RAX, Scale: 1}, Y0)
	f.VPSLLD(U8(16), Y0, Y0)
	f.VCVTPS2PD(Y0, Z0)
	f.VPMOVZXWD(Mem{Base: RDI, Index: RAX, Scale: 1}, Y2)
	f.VPSLLD(U8(16), Y2, Y2)
	f.VCVTPS2PD(Y2, Z2)
	f.VSUBPD(Z0, Z2, Z4)
	f.VFMADD231PD(Z4, Z4, Z8)
	f.VFMADD231PD(Z0, Z0, Z10)
	f.VFMADD231PD(Z2, Z2, Z12)
	f.VFMADD231PD(Z0, Z2, Z14)
	f.VANDPD(Z6, Z4, Z4)
	f.VMAXPD(Z7, Z4, Z7)
	f.ADDQ(U8(16), RAX)
	f.CMPQ(RAX, RCX)
	f.JNE(LabelRef("bf16loop512"))
	f.VMOVUPD(Z8, a.ss)
	f.VMOVUPD(Z10, a.nb)
	f.VMOVUPD(Z12, a.nf)
	f.VMOVUPD(Z14, a.d)
	f.VEXTRACTF64X4(U8(1), Z7, Y0)
	f.VMAXPD(Y0, Y7, Y7)
	f.VEXTRACTF128(U8(1), Y7, X0)
	f.VMAXPD(X0, X7, X7)
	f.VPERMILPD(U8(1), X7, X0)
	f.VMAXPD(X0, X7, X7)
	f.VMOVSD(X7, a.mx)
	f.VZEROUPPER()
	f.RET()
}

// lanes are the addresses of the fields of the struct lanes at DX.
type lanes struct{ ss, nb, nf, d, mx Mem }

// lanesAddr is the struct lanes at DX (the offsets of layout.go), for
// the current function.
func (f *file) lanesAddr() lanes {
	f.useGoAsm("lanes_ss", "lanes_nb", "lanes_nf", "lanes_d", "lanes_mx")
	at := func(field string) Mem { return Mem{Base: RDX, Disp: f.layout("lanes_" + field)} }
	return lanes{ss: at("ss"), nb: at("nb"), nf: at("nf"), d: at("d"), mx: at("mx")}
}

// accumulateArgs loads the arguments of the accumulate kernels: l into
// DX, b into SI, f into DI, n<<shift (the bytes per side) into CX; AX, the
// offset into b and f, starts at zero.
func (f *file) accumulateArgs(shift uint8) {
	f.MOVQ(f.Arg("l"), RDX)
	f.MOVQ(f.Arg("b"), RSI)
	f.MOVQ(f.Arg("f"), RDI)
	f.MOVQ(f.Arg("n"), RCX)
	f.SHLQ(U8(shift), RCX)
	f.XORQ(RAX, RAX)
}

// loadLanes loads the lanes at a into Y8-Y15 and the maximum into every
// lane of Y7 (the LOADLANES macro of the hand-written file).
func (f *file) loadLanes(a lanes) {
	f.VMOVUPD(a.ss, Y8)
	f.VMOVUPD(a.ss.Offset(32), Y9)
	f.VMOVUPD(a.nb, Y10)
	f.VMOVUPD(a.nb.Offset(32), Y11)
	f.VMOVUPD(a.nf, Y12)
	f.VMOVUPD(a.nf.Offset(32), Y13)
	f.VMOVUPD(a.d, Y14)
	f.VMOVUPD(a.d.Offset(32), Y15)
	f.VBROADCASTSD(a.mx, Y7)
}

// storeLanes stores the lanes at a, the maximum of the four maxima in mx
// (STORELANES).
func (f *file) storeLanes(a lanes) {
	f.VMOVUPD(Y8, a.ss)
	f.VMOVUPD(Y9, a.ss.Offset(32))
	f.VMOVUPD(Y10, a.nb)
	f.VMOVUPD(Y11, a.nb.Offset(32))
	f.VMOVUPD(Y12, a.nf)
	f.VMOVUPD(Y13, a.nf.Offset(32))
	f.VMOVUPD(Y14, a.d)
	f.VMOVUPD(Y15, a.d.Offset(32))
	f.VEXTRACTF128(U8(1), Y7, X0)
	f.VMAXPD(X0, X7, X7)
	f.VPERMILPD(U8(1), X7, X0)
	f.VMAXPD(X0, X7, X7)
	f.VMOVSD(X7, a.mx)
}

// accumulateStep adds eight pairs into the lanes (STEP): x in Y0
// (elements 0-3) and Y1 (4-7), y in Y2 and Y3, all float64. e = y - x;
// ss += e*e, nb += x*x, nf += y*y, d += x*y, each one fused multiply-add;
// max = max(|e|, max), which keeps max when |e| is NaN (MAXPD returns its
// second operand). abs is the float64 magnitude mask.
func (f *file) accumulateStep(abs Mem) {
	f.VSUBPD(Y0, Y2, Y4)
	f.VSUBPD(Y1, Y3, Y5)
	f.VFMADD231PD(Y4, Y4, Y8)
	f.VFMADD231PD(Y5, Y5, Y9)
	f.VFMADD231PD(Y0, Y0, Y10)
	f.VFMADD231PD(Y1, Y1, Y11)
	f.VFMADD231PD(Y2, Y2, Y12)
	f.VFMADD231PD(Y3, Y3, Y13)
	f.VFMADD231PD(Y0, Y2, Y14)
	f.VFMADD231PD(Y1, Y3, Y15)
	f.VANDPD(abs, Y4, Y4)
	f.VANDPD(abs, Y5, Y5)
	f.VMAXPD(Y7, Y4, Y7)
	f.VMAXPD(Y7, Y5, Y7)
}

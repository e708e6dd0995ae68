package main

import (
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// bfp16_amd64.s: the face kernels bfpFaceSSE2 and bfpFaceAVX2 (declared,
// with their contract, in bfp16_amd64.go). Both take rows (1..16) face rows
// of bfloat16 bits: row k is the 16 values at src + k*stride bytes; its
// shared exponent goes to exps[k] and its codes to out + k*16 (k*8 with
// nibbles). A row of exponent 0 (zeros and denormals only) gets codes 0;
// rows whose exponent is between 1 and minTableExp-1 are left unwritten and
// flagged in bit k of small.
//
// The per-format parameters are at DI (a bfpParams, each field eight 16-bit
// lanes): +0 shift base, +16 largest d with a non-zero code, +32 magnitude
// limit, +48 sign bit.

// faceSig is the Go signature of both face kernels.
const faceSig = "func(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) (small uint32)"

// bfpSSE2Consts are the addresses of the 16-byte constants of bfpFaceSSE2
// (the data symbol bfpc).
type bfpSSE2Consts struct {
	abs  operand.Mem // abs mask
	mant operand.Mem // significand << 8
	one  operand.Mem // implicit one << 8
	w1   operand.Mem // 1
	w2   operand.Mem // 2
	w4   operand.Mem // 4
	w8   operand.Mem // 8
	lo   operand.Mem // low byte
	half operand.Mem // half
	lodw operand.Mem // low byte of dwords
}

// bfpAVX2Consts are the addresses of the 32-byte constants of bfpFaceAVX2
// (the data symbol avxc).
type bfpAVX2Consts struct {
	abs  operand.Mem // abs mask
	mant operand.Mem // significand << 8
	one  operand.Mem // implicit one << 8
	lo   operand.Mem // low byte
	half operand.Mem // half; also the byte index 0x80 (zero) under a shift count
	w1   operand.Mem // 1
	lodw operand.Mem // low byte of dwords
	// pow is the high byte of 2^(16-s) for a shift s in 1..8 (byte s), zero
	// elsewhere; both 128-bit lanes (VPSHUFB looks up within a lane).
	pow operand.Mem
}

// bfp16 builds bfp16_amd64.s.
type bfp16 struct {
	gen
	c bfpSSE2Consts
	a bfpAVX2Consts
}

func bfp16File(g gen) {
	k := bfp16{gen: g}
	t := g.newTable("bfpc")
	k.c = bfpSSE2Consts{
		abs:  t.add(qwords(0x7fff7fff7fff7fff, 2)...),
		mant: t.add(qwords(0x7f007f007f007f00, 2)...),
		one:  t.add(qwords(0x8000800080008000, 2)...),
		w1:   t.add(qwords(0x0001000100010001, 2)...),
		w2:   t.add(qwords(0x0002000200020002, 2)...),
		w4:   t.add(qwords(0x0004000400040004, 2)...),
		w8:   t.add(qwords(0x0008000800080008, 2)...),
		lo:   t.add(qwords(0x00ff00ff00ff00ff, 2)...),
		half: t.add(qwords(0x0080008000800080, 2)...),
		lodw: t.add(qwords(0x000000ff000000ff, 2)...),
	}
	k.sse2()
	t = g.newTable("avxc")
	k.a = bfpAVX2Consts{
		abs:  t.add(qwords(0x7fff7fff7fff7fff, 4)...),
		mant: t.add(qwords(0x7f007f007f007f00, 4)...),
		one:  t.add(qwords(0x8000800080008000, 4)...),
		lo:   t.add(qwords(0x00ff00ff00ff00ff, 4)...),
		half: t.add(qwords(0x0080008000800080, 4)...),
		w1:   t.add(qwords(0x0001000100010001, 4)...),
		lodw: t.add(qwords(0x000000ff000000ff, 4)...),
		pow:  t.add(operand.U64(0x0204081020408000), operand.U64(0x0000000000000001), operand.U64(0x0204081020408000), operand.U64(0x0000000000000001)),
	}
	k.avx2()
}

// faceArgs loads the arguments of the face kernels: SI src, R9 stride, R8
// exps, DX out, DI params, BX nibbles, R12 rows.
func (k bfp16) faceArgs() {
	k.MOVQ(k.Arg("src"), reg.RSI)
	k.MOVQ(k.Arg("stride"), reg.R9)
	k.MOVQ(k.Arg("exps"), reg.R8)
	k.MOVQ(k.Arg("out"), reg.RDX)
	k.MOVQ(k.Arg("p"), reg.RDI)
	k.MOVBLZX(k.Arg("nibbles"), reg.EBX)
	k.MOVQ(k.Arg("rows"), reg.R12)
}

// shiftStep is one step of codes' shift by s: where bit of s (in X3) is
// set, X4 >>= n. Clobbers X5, X6.
func (k bfp16) shiftStep(bit operand.Mem, n int) {
	k.MOVOU(reg.X3, reg.X5)
	k.PAND(bit, reg.X5)
	k.PCMPEQW(bit, reg.X5)
	k.MOVOU(reg.X4, reg.X6)
	k.PSRLW(operand.U8(n), reg.X6)
	k.PAND(reg.X5, reg.X6)
	k.PANDN(reg.X4, reg.X5)
	k.POR(reg.X6, reg.X5)
	k.MOVOU(reg.X5, reg.X4)
}

// codes computes the codes of the 8 values in X0 (bits) into X0 (16-bit
// lanes). X15: shared exponent in every lane; params at DI. Clobbers
// X1-X7.
func (k bfp16) codes() {
	k.MOVOU(k.c.abs, reg.X1)
	k.PAND(reg.X0, reg.X1)         // X1 = h & 0x7fff
	k.PSRLW(operand.U8(7), reg.X1) // x
	k.MOVOU(reg.X15, reg.X2)
	k.PSUBW(reg.X1, reg.X2) // d = e - x
	k.MOVOU(reg.X2, reg.X3)
	k.PADDW(mem(reg.RDI, 0), reg.X3) // s = d + base
	k.MOVOU(reg.X0, reg.X4)
	k.PSLLW(operand.U8(8), reg.X4)
	k.PAND(k.c.mant, reg.X4)
	k.POR(k.c.one, reg.X4) // v = mant8 << 8
	k.shiftStep(k.c.w1, 1)
	k.shiftStep(k.c.w2, 2)
	k.shiftStep(k.c.w4, 4)
	k.shiftStep(k.c.w8, 8)
	k.MOVOU(reg.X4, reg.X5)
	k.PSRLW(operand.U8(8), reg.X5) // q
	k.PAND(k.c.lo, reg.X4)         // r
	k.MOVOU(reg.X4, reg.X6)
	k.PCMPGTW(k.c.half, reg.X6) // r > half
	k.PCMPEQW(k.c.half, reg.X4) // r == half
	k.MOVOU(reg.X5, reg.X7)
	k.PAND(k.c.w1, reg.X7)
	k.PCMPEQW(k.c.w1, reg.X7) // q odd
	k.PAND(reg.X7, reg.X4)
	k.POR(reg.X6, reg.X4)
	k.PSRLW(operand.U8(15), reg.X4)
	k.PADDW(reg.X4, reg.X5)            // q += round up
	k.PMINSW(mem(reg.RDI, 32), reg.X5) // clamp
	k.PCMPGTW(mem(reg.RDI, 16), reg.X2)
	k.PANDN(reg.X5, reg.X2) // zero when d > dmax
	k.PXOR(reg.X6, reg.X6)
	k.PCMPEQW(reg.X6, reg.X1)
	k.PANDN(reg.X2, reg.X1) // zero when x == 0
	k.MOVOU(reg.X1, reg.X2)
	k.PCMPEQW(reg.X6, reg.X2) // X2: code is zero
	k.PSRAW(operand.U8(15), reg.X0)
	k.PANDN(reg.X0, reg.X2)
	k.PAND(mem(reg.RDI, 48), reg.X2) // sign bit where negative and non-zero
	k.POR(reg.X2, reg.X1)
	k.MOVOU(reg.X1, reg.X0)
}

// sse2 writes bfpFaceSSE2: eight lanes at a time.
func (k bfp16) sse2() {
	k.Text("bfpFaceSSE2", faceSig)
	k.faceArgs()
	k.XORQ(reg.RCX, reg.RCX)
	k.XORQ(reg.R10, reg.R10)
	k.MOVQ(operand.U32(16), reg.R11)
	k.TESTQ(reg.RBX, reg.RBX)
	k.JZ(label("loop"))
	k.MOVQ(operand.U32(8), reg.R11)

	k.Label("loop")
	k.MOVOU(mem(reg.RSI, 0), reg.X8)
	k.MOVOU(mem(reg.RSI, 16), reg.X9)
	k.MOVOU(k.c.abs, reg.X10)
	k.MOVOU(reg.X10, reg.X11)
	k.PAND(reg.X8, reg.X10)
	k.PAND(reg.X9, reg.X11)
	k.PMAXSW(reg.X11, reg.X10)
	for _, n := range []int{8, 4, 2} {
		k.MOVOU(reg.X10, reg.X11)
		k.PSRLDQ(operand.U8(n), reg.X11)
		k.PMAXSW(reg.X11, reg.X10)
	}
	k.MOVQ(reg.X10, reg.RAX)
	k.ANDQ(operand.U32(0x7fff), reg.RAX)
	k.SHRQ(operand.U8(7), reg.RAX)
	k.MOVB(reg.AL, idx(reg.R8, reg.RCX, 0))
	k.CMPQ(reg.RAX, operand.U8(8))
	k.JB(label("fsmall"))
	k.MOVQ(reg.RAX, reg.X15)
	k.PSHUFLW(operand.U8(0), reg.X15, reg.X15)
	k.PSHUFD(operand.U8(0), reg.X15, reg.X15)
	k.MOVOU(reg.X8, reg.X0)
	k.codes()
	k.MOVOU(reg.X0, reg.X8)
	k.MOVOU(reg.X9, reg.X0)
	k.codes()
	k.TESTQ(reg.RBX, reg.RBX)
	k.JNZ(label("ffour"))
	k.PACKUSWB(reg.X0, reg.X8)
	k.MOVOU(reg.X8, mem(reg.RDX, 0))
	k.JMP(label("fnext"))

	k.Label("ffour")
	for _, x := range []reg.Register{reg.X8, reg.X0} {
		k.MOVOU(x, reg.X1)
		k.PSRLL(operand.U8(12), reg.X1)
		k.POR(reg.X1, x)
		k.PAND(k.c.lodw, x)
	}
	k.PACKSSLW(reg.X0, reg.X8)
	k.PACKUSWB(reg.X8, reg.X8)
	k.MOVQ(reg.X8, mem(reg.RDX, 0))
	k.JMP(label("fnext"))

	k.Label("fsmall")
	k.TESTQ(reg.RAX, reg.RAX)
	k.JNZ(label("fflag"))
	k.PXOR(reg.X0, reg.X0) // e = 0: zeros and denormals, codes 0
	k.TESTQ(reg.RBX, reg.RBX)
	k.JNZ(label("fzero4"))
	k.MOVOU(reg.X0, mem(reg.RDX, 0))
	k.JMP(label("fnext"))

	k.Label("fzero4")
	k.MOVQ(reg.X0, mem(reg.RDX, 0))
	k.JMP(label("fnext"))

	k.Label("fflag")
	k.BTSQ(reg.RCX, reg.R10)

	k.Label("fnext")
	k.ADDQ(reg.R9, reg.RSI)
	k.ADDQ(reg.R11, reg.RDX)
	k.INCQ(reg.RCX)
	k.CMPQ(reg.RCX, reg.R12)
	k.JB(label("loop"))
	k.MOVL(reg.R10L, k.Ret(0))
	k.RET()
}

// avx2 writes bfpFaceAVX2: bfpFaceSSE2 with a face row in one 16-lane AVX2
// register; the shift by s = d + base (1..8 wherever the code is kept) is
// a multiplication by 2^(16-s), keeping the high half (exact: the low 8
// bits of the significand word are zero).
func (k bfp16) avx2() {
	k.Text("bfpFaceAVX2", faceSig)
	k.faceArgs()
	k.VPBROADCASTW(mem(reg.RDI, 0), reg.Y10)  // base
	k.VPBROADCASTW(mem(reg.RDI, 16), reg.Y11) // dmax
	k.VPBROADCASTW(mem(reg.RDI, 32), reg.Y12) // limit
	k.VPBROADCASTW(mem(reg.RDI, 48), reg.Y13) // sign bit
	k.VMOVDQU(k.a.abs, reg.Y14)
	k.VMOVDQU(k.a.pow, reg.Y9)
	k.XORQ(reg.RCX, reg.RCX)
	k.XORQ(reg.R10, reg.R10)
	k.MOVQ(operand.U32(16), reg.R11)
	k.TESTQ(reg.RBX, reg.RBX)
	k.JZ(label("aloop"))
	k.MOVQ(operand.U32(8), reg.R11)

	k.Label("aloop")
	k.VMOVDQU(mem(reg.RSI, 0), reg.Y0)
	k.VPAND(reg.Y14, reg.Y0, reg.Y1) // |h|
	k.VEXTRACTI128(operand.U8(1), reg.Y1, reg.X2)
	k.VPMAXSW(reg.X2, reg.X1, reg.X2)
	for _, n := range []int{8, 4, 2} {
		k.VPSRLDQ(operand.U8(n), reg.X2, reg.X3)
		k.VPMAXSW(reg.X3, reg.X2, reg.X2)
	}
	k.VMOVD(reg.X2, reg.EAX)
	k.ANDL(operand.U32(0x7fff), reg.EAX)
	k.SHRL(operand.U8(7), reg.EAX)
	k.MOVB(reg.AL, idx(reg.R8, reg.RCX, 0))
	k.CMPL(reg.EAX, operand.U8(8))
	k.JB(label("asmall"))
	k.VMOVD(reg.EAX, reg.X15)
	k.VPBROADCASTW(reg.X15, reg.Y15)        // e
	k.VPSRLW(operand.U8(7), reg.Y1, reg.Y1) // x
	k.VPSUBW(reg.Y1, reg.Y15, reg.Y2)       // d = e - x
	k.VPADDW(reg.Y10, reg.Y2, reg.Y3)       // s = d + base
	k.VPSLLW(operand.U8(8), reg.Y3, reg.Y3)
	k.VPOR(k.a.half, reg.Y3, reg.Y3)  // byte indices: 0x80 (zero) low, s high
	k.VPSHUFB(reg.Y3, reg.Y9, reg.Y3) // 2^(16-s)
	k.VPSLLW(operand.U8(8), reg.Y0, reg.Y4)
	k.VPAND(k.a.mant, reg.Y4, reg.Y4)
	k.VPOR(k.a.one, reg.Y4, reg.Y4)         // v = significand with its one, << 8
	k.VPMULHUW(reg.Y3, reg.Y4, reg.Y4)      // v >> s
	k.VPSRLW(operand.U8(8), reg.Y4, reg.Y5) // q
	k.VPAND(k.a.lo, reg.Y4, reg.Y4)         // r
	k.VPCMPGTW(k.a.half, reg.Y4, reg.Y6)    // r > half
	k.VPCMPEQW(k.a.half, reg.Y4, reg.Y4)    // r == half
	k.VPAND(reg.Y5, reg.Y4, reg.Y4)         // ... and q odd (bit 0)
	k.VPOR(reg.Y6, reg.Y4, reg.Y4)
	k.VPAND(k.a.w1, reg.Y4, reg.Y4)
	k.VPADDW(reg.Y4, reg.Y5, reg.Y5)    // q += round up
	k.VPMINSW(reg.Y12, reg.Y5, reg.Y5)  // clamp
	k.VPCMPGTW(reg.Y11, reg.Y2, reg.Y2) // d > dmax
	k.VPANDN(reg.Y5, reg.Y2, reg.Y5)
	k.VPXOR(reg.Y6, reg.Y6, reg.Y6)
	k.VPCMPEQW(reg.Y6, reg.Y1, reg.Y7) // x == 0
	k.VPANDN(reg.Y5, reg.Y7, reg.Y5)
	k.VPCMPEQW(reg.Y6, reg.Y5, reg.Y7)       // code is zero
	k.VPSRAW(operand.U8(15), reg.Y0, reg.Y8) // negative
	k.VPANDN(reg.Y8, reg.Y7, reg.Y8)
	k.VPAND(reg.Y13, reg.Y8, reg.Y8)
	k.VPOR(reg.Y8, reg.Y5, reg.Y0)
	k.TESTQ(reg.RBX, reg.RBX)
	k.JNZ(label("afour"))
	k.VEXTRACTI128(operand.U8(1), reg.Y0, reg.X1)
	k.VPACKUSWB(reg.X1, reg.X0, reg.X0)
	k.VMOVDQU(reg.X0, mem(reg.RDX, 0))
	k.JMP(label("anext"))

	k.Label("afour")
	k.VPSRLD(operand.U8(12), reg.Y0, reg.Y1)
	k.VPOR(reg.Y1, reg.Y0, reg.Y0)
	k.VPAND(k.a.lodw, reg.Y0, reg.Y0)
	k.VEXTRACTI128(operand.U8(1), reg.Y0, reg.X1)
	k.VPACKSSDW(reg.X1, reg.X0, reg.X0)
	k.VPACKUSWB(reg.X0, reg.X0, reg.X0)
	k.VMOVQ(reg.X0, mem(reg.RDX, 0))
	k.JMP(label("anext"))

	k.Label("asmall")
	k.TESTL(reg.EAX, reg.EAX)
	k.JNZ(label("aflag"))
	k.VPXOR(reg.X0, reg.X0, reg.X0) // e = 0: zeros and denormals, codes 0
	k.TESTQ(reg.RBX, reg.RBX)
	k.JNZ(label("azero4"))
	k.VMOVDQU(reg.X0, mem(reg.RDX, 0))
	k.JMP(label("anext"))

	k.Label("azero4")
	k.VMOVQ(reg.X0, mem(reg.RDX, 0))
	k.JMP(label("anext"))

	k.Label("aflag")
	k.BTSQ(reg.RCX, reg.R10)

	k.Label("anext")
	k.ADDQ(reg.R9, reg.RSI)
	k.ADDQ(reg.R11, reg.RDX)
	k.INCQ(reg.RCX)
	k.CMPQ(reg.RCX, reg.R12)
	k.JB(label("aloop"))
	k.VZEROUPPER()
	k.MOVL(reg.R10L, k.Ret(0))
	k.RET()
}

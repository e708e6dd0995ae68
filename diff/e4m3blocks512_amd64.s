//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// Exact statistics of F8_E4M3 code pairs, block after block, in 512-bit
// vectors (e4m3BlocksAVX512; the Go side is e4m3run_amd64.go, the
// references e4m3RunGo and e4m3BlocksGo in e4m3exact.go, the AVX2 kernel
// e4m3run_amd64.s). The sums are those of the AVX2 kernel and of the Go
// loop bit for bit: every partial sum is exact (e4m3exact.go), so the
// order and the number of lanes do not matter.
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

DATA e5k<>+0(SB)/8, $0x0100000000000000
DATA e5k<>+8(SB)/8, $0x0302000000000000
DATA e5k<>+16(SB)/8, $0x0504000000000000
DATA e5k<>+24(SB)/8, $0x0706000000000000
DATA e5k<>+32(SB)/8, $0x0908000000000000
DATA e5k<>+40(SB)/8, $0x0b0a000000000000
DATA e5k<>+48(SB)/8, $0x0d0c000000000000
DATA e5k<>+56(SB)/8, $0x0f0e000000000000
DATA e5k<>+64(SB)/8, $0x1110000000000000
DATA e5k<>+72(SB)/8, $0x1312000000000000
DATA e5k<>+80(SB)/8, $0x1514000000000000
DATA e5k<>+88(SB)/8, $0x1716000000000000
DATA e5k<>+96(SB)/8, $0x1918000000000000
DATA e5k<>+104(SB)/8, $0x1b1a000000000000
DATA e5k<>+112(SB)/8, $0x1d1c000000000000
DATA e5k<>+120(SB)/8, $0x1f1e000000000000
DATA e5k<>+128(SB)/8, $0x2120000000000000
DATA e5k<>+136(SB)/8, $0x2322000000000000
DATA e5k<>+144(SB)/8, $0x2524000000000000
DATA e5k<>+152(SB)/8, $0x2726000000000000
DATA e5k<>+160(SB)/8, $0x2928000000000000
DATA e5k<>+168(SB)/8, $0x2b2a000000000000
DATA e5k<>+176(SB)/8, $0x2d2c000000000000
DATA e5k<>+184(SB)/8, $0x2f2e000000000000
DATA e5k<>+192(SB)/8, $0x3130000000000000
DATA e5k<>+200(SB)/8, $0x3332000000000000
DATA e5k<>+208(SB)/8, $0x3534000000000000
DATA e5k<>+216(SB)/8, $0x3736000000000000
DATA e5k<>+224(SB)/8, $0x3938000000000000
DATA e5k<>+232(SB)/8, $0x3b3a000000000000
DATA e5k<>+240(SB)/8, $0x3d3c000000000000
DATA e5k<>+248(SB)/8, $0x3f3e000000000000
GLOBL e5k<>(SB), RODATA|NOPTR, $256

// Registers: Z0, Z1 the codes of b and f, then scratch with Z2-Z5, Z7
// (the words of the decode), Z9 (B), Z11 (F), Z13; Z6, Z12 s_b, s_f
// broadcast (scaled loop); Z26/Z27 bb, Z28/Z29 ff, Z30/Z31 bf, Z8/Z10 the
// maximum; Z16/Z17 the lo table, Z18/Z19 the hi table, Z20-Z23 the VPERMB
// indexes, Z24 0x80 bytes, Z25 0x7f bytes; K7 the top two bytes of each
// qword. SI, DI point at the end of the block's codes, DX is minus the
// pairs left; R8 #(z or eq), R9 #eq, R11 #z (scaled loop only).

// DECODE5 loads, counts and decodes the 64 pairs at SI, DI into the words
// Z2/Z4 (b/f: codes 0-7 of each 128-bit lane) and Z3/Z5 (codes 8-15);
// the z mask is left in K2.
#define DECODE5 \
	VMOVDQU8 (SI)(DX*1), Z0; \
	VMOVDQU8 (DI)(DX*1), Z1; \
	VPCMPEQB Z1, Z0, K1;            /* eq */ \
	VPORQ Z1, Z0, Z2; \
	VPTESTNMB Z25, Z2, K2;          /* z */ \
	KORQ K1, K2, K3; \
	KMOVQ K1, AX; \
	KMOVQ K3, BX; \
	POPCNTQ AX, AX; \
	ADDQ AX, R9; \
	POPCNTQ BX, BX; \
	ADDQ BX, R8; \
	VMOVDQA64 Z0, Z2; \
	VPTERNLOGD $0x78, Z24, Z1, Z2;  /* b ^ (f & 0x80): σ in bit 7 */ \
	VMOVDQA64 Z2, Z3; \
	VPERMI2B Z17, Z16, Z3;          /* lo_b */ \
	VMOVDQA64 Z2, Z4; \
	VPERMI2B Z19, Z18, Z4;          /* |hi_b| */ \
	VPTERNLOGD $0xf8, Z24, Z2, Z4;  /* hi_b | σ */ \
	VMOVDQA64 Z1, Z5; \
	VPERMI2B Z17, Z16, Z5;          /* lo_f */ \
	VPERMI2B Z19, Z18, Z1;          /* hi_f */ \
	VPUNPCKLBW Z4, Z3, Z2; \
	VPUNPCKHBW Z4, Z3, Z3; \
	VPUNPCKLBW Z1, Z5, Z4; \
	VPUNPCKHBW Z1, Z5, Z5

// SUMS5 adds B = Z9, F = Z11 into the accumulators of set S (0 or 1).
#define SUMS5(BB, FF, BF) \
	VFMADD231PD Z9, Z9, BB; \
	VFMADD231PD Z11, Z11, FF; \
	VFMADD231PD Z11, Z9, BF

#define UNIT5(BB, FF, BF, MX) \
	SUMS5(BB, FF, BF); \
	VSUBPD Z9, Z11, Z13; \
	VRANGEPD $0x0b, Z13, MX, MX

#define SCALED5(BB, FF, BF, MX) \
	SUMS5(BB, FF, BF); \
	VMULPD Z6, Z9, Z13; \
	VFMSUB231PD Z12, Z11, Z13; \
	VRANGEPD $0x0b, Z13, MX, MX

// VEC5 moves word vector t (index IDX) of WB, WF to the float64 B, F.
#define VEC5(WB, WF, IDX) \
	VPERMB.Z WB, IDX, K7, Z9; \
	VPERMB.Z WF, IDX, K7, Z11

// WORDS5 runs STEP over the four float64 vectors of the words WB, WF,
// alternating the accumulator sets.
#define WORDS5(WB, WF, STEP) \
	VEC5(WB, WF, Z20); \
	STEP(Z26, Z28, Z30, Z8); \
	VEC5(WB, WF, Z21); \
	STEP(Z27, Z29, Z31, Z10); \
	VEC5(WB, WF, Z22); \
	STEP(Z26, Z28, Z30, Z8); \
	VEC5(WB, WF, Z23); \
	STEP(Z27, Z29, Z31, Z10)

// The add section of the kernel (before next:) adds the sums of the
// block just done (X0 = [bb, ff], X2 = bf, X3 = mx, BX changed, R8
// zeroSign; R10 its e4m3Block) into the partial at AX, as
// partial.addE4M3 does: each product of a block factor with a sum rounded
// once (VMULSD then VADDSD, never fused), the maximum by VMAXSD (no NaN
// gets there, every value is ≥ +0), and Σ(f−b)² as k.bb·(ff + bb − 2bf)
// for one scale, else as e4m3SumSq: the 128-bit integer mff·A + mbb·B −
// (±cross2)·C (A, B, C the sums in units of 2^-18), rounded to nearest
// even with a sticky bit, times 2^n and the block's unit. It clobbers AX,
// BX, CX, DX, R8, R9, R11 and X4-X6.

// func e4m3BlocksAVX512(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Sums, tab *[256]byte, p *partial) int
//
// e4m3BlocksAVX2 for bn a positive multiple of 64: block j runs the unit
// loop when k[j] is e4m3Same, the scaled one with k[j].kb, kf when it is
// e4m3Diff, and overwrites out[j] with its sums like e4m3BlocksGo; the
// kernel returns at the first block that is e4m3Generic or holds a NaN
// code, with the number of blocks done. With p not nil it also adds each
// block done into *p as partial.addE4M3 does, in order, with the same
// operations (the add section). R10 points at k[j], R12 at out[j], R13 counts the
// blocks done.
TEXT ·e4m3BlocksAVX512(SB), NOSPLIT, $0-72
	MOVQ b+0(FP), SI
	MOVQ f+8(FP), DI
	MOVQ k+24(FP), R10
	MOVQ out+40(FP), R12
	MOVQ tab+48(FP), AX
	XORQ R13, R13
	VMOVDQU64 0(AX), Z16
	VMOVDQU64 64(AX), Z17
	VMOVDQU64 128(AX), Z18
	VMOVDQU64 192(AX), Z19
	VMOVDQU64 e5k<>+0(SB), Z20
	VMOVDQU64 e5k<>+64(SB), Z21
	VMOVDQU64 e5k<>+128(SB), Z22
	VMOVDQU64 e5k<>+192(SB), Z23
	MOVL $0x80, AX
	VPBROADCASTB AX, Z24
	MOVL $0x7f, AX
	VPBROADCASTB AX, Z25
	MOVQ $0xc0c0c0c0c0c0c0c0, AX
	KMOVQ AX, K7

block:
	CMPQ R13, nk+32(FP)
	JEQ ret
	MOVQ bn+16(FP), DX
	ADDQ DX, SI
	ADDQ DX, DI
	NEGQ DX
	VPXORQ Z26, Z26, Z26
	VPXORQ Z27, Z27, Z27
	VPXORQ Z28, Z28, Z28
	VPXORQ Z29, Z29, Z29
	VPXORQ Z30, Z30, Z30
	VPXORQ Z31, Z31, Z31
	VPXORQ Z8, Z8, Z8
	VPXORQ Z10, Z10, Z10
	XORQ R8, R8
	XORQ R9, R9
	XORQ R11, R11
	MOVBLZX e4m3Block_class(R10), AX
	CMPQ AX, $const_e4m3Same
	JEQ unit
	CMPQ AX, $const_e4m3Diff
	JNE ret                     // e4m3Generic

	VBROADCASTSD e4m3Block_kb(R10), Z6
	VBROADCASTSD e4m3Block_kf(R10), Z12
scaled:
	DECODE5
	KMOVQ K2, AX
	POPCNTQ AX, AX
	ADDQ AX, R11
	WORDS5(Z2, Z4, SCALED5)
	WORDS5(Z3, Z5, SCALED5)
	ADDQ $64, DX
	JNZ scaled
	MOVQ R11, CX                // scales differ: every pair but two zeros changed
	JMP sums

unit:
	DECODE5
	WORDS5(Z2, Z4, UNIT5)
	WORDS5(Z3, Z5, UNIT5)
	ADDQ $64, DX
	JNZ unit
	MOVQ R8, CX                 // one scale: the pairs of different codes changed

sums:
	// CX holds the pairs that did not change.
	VADDPD Z27, Z26, Z26
	VADDPD Z29, Z28, Z28
	VADDPD Z31, Z30, Z30
	VRANGEPD $0x0b, Z10, Z8, Z8
	VEXTRACTF64X4 $1, Z26, Y0
	VADDPD Y26, Y0, Y0          // bb
	VEXTRACTF64X4 $1, Z28, Y1
	VADDPD Y28, Y1, Y1          // ff
	VEXTRACTF64X4 $1, Z30, Y2
	VADDPD Y30, Y2, Y2          // bf
	VEXTRACTF64X4 $1, Z8, Y3
	VMAXPD Y8, Y3, Y3           // max
	VHADDPD Y1, Y0, Y0          // bb01 ff01 bb23 ff23
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0           // bb ff
	VEXTRACTF128 $1, Y2, X1
	VADDPD X1, X2, X2
	VPERMILPD $1, X2, X1
	VADDSD X1, X2, X2           // bf
	VEXTRACTF128 $1, Y3, X1
	VMAXPD X1, X3, X3
	VPERMILPD $1, X3, X1
	VMAXSD X1, X3, X3           // max
	VPERMILPD $1, X0, X1
	VADDSD X1, X0, X1
	VUCOMISD X1, X1
	JPS ret                     // a NaN code
	VMOVSD X0, e4m3Sums_bb(R12)
	VMOVHPD X0, e4m3Sums_ff(R12)
	VMOVSD X2, e4m3Sums_bf(R12)
	VMOVSD X3, e4m3Sums_mx(R12)
	MOVQ bn+16(FP), BX
	SUBQ CX, BX
	MOVQ BX, e4m3Sums_changed(R12)
	SUBQ R9, R8                 // #(z and not eq)
	MOVQ R8, e4m3Sums_zeroSign(R12)
	MOVQ p+56(FP), AX
	TESTQ AX, AX
	JZ next
	ADDQ BX, partial_changed(AX)
	ADDQ R8, partial_zeroSign(AX)
	VMULSD e4m3Block_bb(R10), X0, X4
	VADDSD partial_normB(AX), X4, X4
	VMOVSD X4, partial_normB(AX)
	VPERMILPD $1, X0, X5        // ff
	VMULSD e4m3Block_ff(R10), X5, X4
	VADDSD partial_normF(AX), X4, X4
	VMOVSD X4, partial_normF(AX)
	VMULSD e4m3Block_bf(R10), X2, X4
	VADDSD partial_dot(AX), X4, X4
	VMOVSD X4, partial_dot(AX)
	VMULSD e4m3Block_mxs(R10), X3, X4
	VMAXSD partial_maxAbs(AX), X4, X4
	VMOVSD X4, partial_maxAbs(AX)
	MOVBLZX e4m3Block_class(R10), BX
	CMPQ BX, $const_e4m3Same
	JNE add5diff
	VADDSD X0, X5, X4           // ff + bb
	VADDSD X2, X2, X6           // 2·bf
	VSUBSD X6, X4, X4
	VMULSD e4m3Block_bb(R10), X4, X4
	JMP add5ss
add5diff:
	MOVQ $0x4110000000000000, BX // 2^18
	VMOVQ BX, X6
	VMULSD X6, X5, X4
	VCVTTSD2SIQ X4, R8           // A = Σv_f²
	VMULSD X6, X0, X4
	VCVTTSD2SIQ X4, R9           // B = Σv_b²
	VMULSD X6, X2, X4
	VCVTTSD2SIQ X4, R11          // C = Σv_b·v_f
	MOVQ e4m3Block_mff(R10), AX
	MULQ R8
	MOVQ AX, R8
	MOVQ DX, CX                 // t = CX:R8 = mff·A
	MOVQ e4m3Block_mbb(R10), AX
	MULQ R9
	ADDQ AX, R8
	ADCQ DX, CX                 // + mbb·B
	MOVQ e4m3Block_cross2(R10), AX
	MOVBLZX e4m3Block_crossNeg(R10), BX
	NEGQ BX
	XORQ BX, AX
	SUBQ BX, AX                 // ±cross2, the sign of mb·mf
	IMULQ R11                   // DX:AX = ±cross2·C, signed
	SUBQ AX, R8
	SBBQ DX, CX                 // t ≥ 0: a sum of squares
	TESTQ CX, CX
	JNZ add5wide
	VCVTUSI2SDQ R8, X4, X4
	JMP add5unit
add5wide:
	BSRQ CX, R9                 // n − 1, n the bits of hi
	MOVQ CX, BX
	MOVQ $63, CX
	SUBQ R9, CX                 // 64 − n
	SHLQ CX, R8, BX             // m = hi<<(64−n) | lo>>n
	SHLQ CX, R8                 // the bits of lo below m
	XORQ DX, DX
	TESTQ R8, R8
	SETNE DL
	ORQ DX, BX                  // sticky
	VCVTUSI2SDQ BX, X4, X4
	LEAQ 1024(R9), BX
	SHLQ $52, BX
	VMOVQ BX, X6                // 2^n
	VMULSD X6, X4, X4
add5unit:
	VMULSD e4m3Block_unit(R10), X4, X4
	MOVQ p+56(FP), AX
add5ss:
	VADDSD partial_sumSqDiff(AX), X4, X4
	VMOVSD X4, partial_sumSqDiff(AX)
next:
	ADDQ $e4m3Block__size, R10
	ADDQ $e4m3Sums__size, R12
	INCQ R13
	JMP block

ret:
	MOVQ R13, ret+64(FP)
	VZEROUPPER
	RET

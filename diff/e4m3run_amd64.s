//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// Exact statistics of F8_E4M3 code pairs, block after block
// (e4m3BlocksAVX2; the Go side is e4m3run_amd64.go, the references
// e4m3RunGo and e4m3BlocksGo in e4m3exact.go).
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
// 2^-1) below 2^51, so any order gives the exact sum, scaled by 2^-16 at
// the end. The maximum of |F − B| (scales 1; see UNIT) or |F·s_f − B·s_b|
// (VMULPD, VFMSUB231PD: exact for the scales the caller allows) is scaled
// by 2^-8.
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
// block adds about 55 instructions around its loop (setup, NaN check,
// reductions, stores): a few ns in blocks of 128 pairs.

DATA e4k<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f    // idx limit
DATA e4k<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA e4k<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA e4k<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA e4k<>+32(SB)/8, $0x8080808080808080   // sign bit
DATA e4k<>+40(SB)/8, $0x8080808080808080
DATA e4k<>+48(SB)/8, $0x8080808080808080
DATA e4k<>+56(SB)/8, $0x8080808080808080
DATA e4k<>+64(SB)/8, $0x00f200ec00de0000   // T2: 0 . de . ec . f2 . | f8 . fa . fc . fe 00 (both lanes)
DATA e4k<>+72(SB)/8, $0x00fe00fc00fa00f8
DATA e4k<>+80(SB)/8, $0x00f200ec00de0000
DATA e4k<>+88(SB)/8, $0x00fe00fc00fa00f8
DATA e4k<>+96(SB)/8, $0x003f003f003f0000   // H: 0 . 63 . 63 . 63 . | 64 . 64 . 64 . 64 64
DATA e4k<>+104(SB)/8, $0x4040004000400040
DATA e4k<>+112(SB)/8, $0x003f003f003f0000
DATA e4k<>+120(SB)/8, $0x4040004000400040
DATA e4k<>+128(SB)/8, $0x0100808080808080  // word 0 of each qword to its top
DATA e4k<>+136(SB)/8, $0x0908808080808080
DATA e4k<>+144(SB)/8, $0x0100808080808080
DATA e4k<>+152(SB)/8, $0x0908808080808080
DATA e4k<>+160(SB)/8, $0x0302808080808080  // word 1
DATA e4k<>+168(SB)/8, $0x0b0a808080808080
DATA e4k<>+176(SB)/8, $0x0302808080808080
DATA e4k<>+184(SB)/8, $0x0b0a808080808080
DATA e4k<>+192(SB)/8, $0x0504808080808080  // word 2
DATA e4k<>+200(SB)/8, $0x0d0c808080808080
DATA e4k<>+208(SB)/8, $0x0504808080808080
DATA e4k<>+216(SB)/8, $0x0d0c808080808080
DATA e4k<>+224(SB)/8, $0xffff000000000000  // word 3: already on top
DATA e4k<>+232(SB)/8, $0xffff000000000000
DATA e4k<>+240(SB)/8, $0xffff000000000000
DATA e4k<>+248(SB)/8, $0xffff000000000000
DATA e4k<>+256(SB)/8, $0x7fffffffffffffff  // float64 magnitude
DATA e4k<>+264(SB)/8, $0x7fffffffffffffff
DATA e4k<>+272(SB)/8, $0x7fffffffffffffff
DATA e4k<>+280(SB)/8, $0x7fffffffffffffff
DATA e4k<>+288(SB)/8, $0xfefefefefefefefe  // c2 of a NaN code
DATA e4k<>+296(SB)/8, $0xfefefefefefefefe
DATA e4k<>+304(SB)/8, $0xfefefefefefefefe
DATA e4k<>+312(SB)/8, $0xfefefefefefefefe
DATA e4k<>+320(SB)/8, $0
DATA e4k<>+328(SB)/8, $0
DATA e4k<>+336(SB)/8, $0
DATA e4k<>+344(SB)/8, $0
DATA e4k<>+352(SB)/8, $0x7fffffff7fffffff  // float32-style magnitude of dwords
DATA e4k<>+360(SB)/8, $0x7fffffff7fffffff
DATA e4k<>+368(SB)/8, $0x7fffffff7fffffff
DATA e4k<>+376(SB)/8, $0x7fffffff7fffffff
DATA e4k<>+384(SB)/8, $0x3ef0000000000000  // 2^-16
DATA e4k<>+392(SB)/8, $0x3f70000000000000  // 2^-8
DATA e4k<>+400(SB)/8, $0x3ef0000000000000  // 2^-16
DATA e4k<>+408(SB)/8, $0x3ef0000000000000  // 2^-16
GLOBL e4k<>(SB), RODATA|NOPTR, $416

#define K15 e4k<>+0(SB)
#define SIGN e4k<>+32(SB)
#define W0 e4k<>+128(SB)
#define W1 e4k<>+160(SB)
#define W2 e4k<>+192(SB)
#define W3 e4k<>+224(SB)
#define ABS e4k<>+256(SB)
#define NANC2 e4k<>+288(SB)
#define ZERO e4k<>+320(SB)
#define ABS32 e4k<>+352(SB)

// Registers: Y0-Y5 scratch; Y6 bb, Y8 ff, Y10 bf (one accumulator each:
// two were not faster); Y7 scratch of the unit loop, the float64
// magnitude mask in the scaled one, whose Y9, Y11 hold s_b, s_f
// broadcast; Y12 the maximum (float64; in the unit loop packed high
// dwords, see UNIT); Y13 the running byte max of max(c2_b, c2_f); Y14
// T2, Y15 H. SI, DI point at the end of the block's codes, DX is minus
// the pairs left; R8 #(z or eq), R9 #eq, R11 #z (scaled loop only).

// DECODE decodes the 32 pairs at SI, DI into the words Y3/Y0 (b/f, codes
// 0-7 and 16-23) and Y4/Y2 (8-15 and 24-31) and counts them.
#define DECODE \
	VMOVDQU (SI)(DX*1), Y0; \
	VMOVDQU (DI)(DX*1), Y1; \
	VPCMPEQB Y1, Y0, Y2; \
	VPMOVMSKB Y2, AX;         /* eq */ \
	VPXOR Y1, Y0, Y2; \
	VPAND SIGN, Y2, Y2;       /* σ */ \
	VPADDB Y0, Y0, Y0;        /* c2_b */ \
	VPADDB Y1, Y1, Y1;        /* c2_f */ \
	VPMAXUB Y1, Y0, Y3; \
	VPMAXUB Y3, Y13, Y13; \
	VPCMPEQB ZERO, Y3, Y3; \
	VPMOVMSKB Y3, BX;         /* z */ \
	VPMINUB K15, Y0, Y3;      /* idx_b */ \
	VPSHUFB Y3, Y14, Y4; \
	VPADDB Y0, Y4, Y4;        /* lo_b */ \
	VPSHUFB Y3, Y15, Y0; \
	VPOR Y2, Y0, Y0;          /* hi_b */ \
	VPMINUB K15, Y1, Y3;      /* idx_f */ \
	VPSHUFB Y3, Y14, Y2; \
	VPADDB Y1, Y2, Y2;        /* lo_f */ \
	VPSHUFB Y3, Y15, Y1;      /* hi_f */ \
	VPUNPCKLBW Y0, Y4, Y3; \
	VPUNPCKHBW Y0, Y4, Y4; \
	VPUNPCKLBW Y1, Y2, Y0; \
	VPUNPCKHBW Y1, Y2, Y2; \
	POPCNTL AX, CX; \
	ADDQ CX, R9; \
	ORL BX, AX; \
	POPCNTL AX, AX; \
	ADDQ AX, R8

// COUNTZ counts z (BX after DECODE) into R11.
#define COUNTZ \
	POPCNTL BX, BX; \
	ADDQ BX, R11

// SUMS adds B = Y1, F = Y5 into the accumulator set (BB, FF, BF).
#define SUMS(BB, FF, BF) \
	VFMADD231PD Y1, Y1, BB; \
	VFMADD231PD Y5, Y5, FF; \
	VFMADD231PD Y5, Y1, BF

// UNIT: max |F − B|. F − B is a multiple of 2^-1 below 2^18: its high
// dword holds it whole (the low one is zero), so UNIT0 keeps it in Y7 and
// UNIT1 packs the high dwords of two vectors (VSHUFPS) and keeps their
// largest magnitude in Y12 by unsigned dword compares.
#define UNIT0 \
	SUMS(Y6, Y8, Y10); \
	VSUBPD Y1, Y5, Y7

#define UNIT1 \
	SUMS(Y6, Y8, Y10); \
	VSUBPD Y1, Y5, Y5; \
	VSHUFPS $0xdd, Y5, Y7, Y5; \
	VPAND ABS32, Y5, Y5; \
	VPMAXUD Y5, Y12, Y12

// SCALED: max |F·s_f − B·s_b| in Y12 (float64).
#define SCALED0 \
	SUMS(Y6, Y8, Y10); \
	VMULPD Y9, Y1, Y1; \
	VFMSUB231PD Y11, Y5, Y1; \
	VANDPD Y7, Y1, Y1; \
	VMAXPD Y1, Y12, Y12

#define SCALED1 SCALED0

// WORDS runs STEP0, STEP1 alternately over the four float64 vectors of
// the words WB, WF.
#define WORDS(WB, WF, STEP0, STEP1) \
	VPSHUFB W0, WB, Y1; \
	VPSHUFB W0, WF, Y5; \
	STEP0; \
	VPSHUFB W1, WB, Y1; \
	VPSHUFB W1, WF, Y5; \
	STEP1; \
	VPSHUFB W2, WB, Y1; \
	VPSHUFB W2, WF, Y5; \
	STEP0; \
	VPAND W3, WB, Y1; \
	VPAND W3, WF, Y5; \
	STEP1

// func e4m3BlocksAVX2(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Sums) int
//
// Block j (of nk, bn pairs each, bn a positive multiple of 32) runs the
// unit loop when k[j] is e4m3Same, the scaled one with k[j].kb, kf when
// it is e4m3Diff, and overwrites out[j] with its sums like e4m3BlocksGo;
// the kernel returns at the first block that is e4m3Generic or holds a
// NaN code, with the number of blocks done. Besides the loops' registers
// (above), R10 points at k[j], R12 at out[j], R13 counts the blocks done;
// Y14, Y15 are loaded once.
TEXT ·e4m3BlocksAVX2(SB), NOSPLIT, $0-56
	MOVQ b+0(FP), SI
	MOVQ f+8(FP), DI
	MOVQ k+24(FP), R10
	MOVQ out+40(FP), R12
	XORQ R13, R13
	VMOVDQU e4k<>+64(SB), Y14
	VMOVDQU e4k<>+96(SB), Y15

block:
	CMPQ R13, nk+32(FP)
	JEQ ret
	MOVQ bn+16(FP), DX
	ADDQ DX, SI
	ADDQ DX, DI
	NEGQ DX
	VPXOR Y6, Y6, Y6
	VPXOR Y8, Y8, Y8
	VPXOR Y10, Y10, Y10
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	XORQ R8, R8
	XORQ R9, R9
	XORQ R11, R11
	MOVBLZX e4m3Block_class(R10), AX
	CMPQ AX, $const_e4m3Same
	JEQ unit
	CMPQ AX, $const_e4m3Diff
	JNE ret                     // e4m3Generic

	VBROADCASTSD e4m3Block_kb(R10), Y9
	VBROADCASTSD e4m3Block_kf(R10), Y11
	VMOVDQU ABS, Y7
scaled:
	DECODE
	COUNTZ
	WORDS(Y3, Y0, SCALED0, SCALED1)
	WORDS(Y4, Y2, SCALED0, SCALED1)
	ADDQ $32, DX
	JNZ scaled
	VPCMPEQB NANC2, Y13, Y13
	VPMOVMSKB Y13, AX
	TESTL AX, AX
	JNZ ret
	VEXTRACTF128 $1, Y12, X4    // max |F·s_f − B·s_b|
	VMAXPD X4, X12, X4
	VPERMILPD $1, X4, X5
	VMAXPD X5, X4, X4
	MOVQ R11, CX                // scales differ: every pair but two zeros changed
	JMP sums

unit:
	DECODE
	WORDS(Y3, Y0, UNIT0, UNIT1)
	WORDS(Y4, Y2, UNIT0, UNIT1)
	ADDQ $32, DX
	JNZ unit
	VPCMPEQB NANC2, Y13, Y13
	VPMOVMSKB Y13, AX
	TESTL AX, AX
	JNZ ret
	VEXTRACTI128 $1, Y12, X4    // high dwords of max |F − B|
	VPMAXUD X4, X12, X4
	VPSHUFD $0x4e, X4, X5
	VPMAXUD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPMAXUD X5, X4, X4
	VPSLLQ $32, X4, X4          // as float64
	MOVQ R8, CX                 // one scale: the pairs of different codes changed

sums:
	// X4 holds the maximum (·2^8 like the values), CX the pairs that
	// did not change.
	VHADDPD Y8, Y6, Y0          // bb01 ff01 bb23 ff23
	VEXTRACTF128 $1, Y0, X1
	VADDPD X1, X0, X0           // bb ff
	VEXTRACTF128 $1, Y10, X2
	VADDPD X2, X10, X2
	VPERMILPD $1, X2, X3
	VADDSD X3, X2, X2           // bf
	VUNPCKLPD X4, X2, X2        // bf max
	VMULPD e4k<>+400(SB), X0, X0 // ·2^-16 (exact)
	VMULPD e4k<>+384(SB), X2, X2 // ·2^-16, ·2^-8
	VMOVSD X0, e4m3Sums_bb(R12)
	VMOVHPD X0, e4m3Sums_ff(R12)
	VMOVSD X2, e4m3Sums_bf(R12)
	VMOVHPD X2, e4m3Sums_mx(R12)
	MOVQ bn+16(FP), BX
	SUBQ CX, BX
	MOVQ BX, e4m3Sums_changed(R12)
	SUBQ R9, R8                 // #(z and not eq)
	MOVQ R8, e4m3Sums_zeroSign(R12)
	ADDQ $e4m3Block__size, R10
	ADDQ $e4m3Sums__size, R12
	INCQ R13
	JMP block

ret:
	MOVQ R13, ret+48(FP)
	VZEROUPPER
	RET

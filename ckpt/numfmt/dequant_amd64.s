//go:build amd64 && !purego

#include "textflag.h"

// Scaled F8_E4M3 decode (decodeE4M3AVX2; the Go side is dequant_amd64.go).
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

DATA dec8<>+0(SB)/8, $0x7f7f7f7f7f7f7f7f   // magnitude mask
DATA dec8<>+8(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA dec8<>+16(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA dec8<>+24(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA dec8<>+32(SB)/8, $0x0808080808080808  // T index limit; the sign bit shifted right by 4
DATA dec8<>+40(SB)/8, $0x0808080808080808
DATA dec8<>+48(SB)/8, $0x0808080808080808
DATA dec8<>+56(SB)/8, $0x0808080808080808
DATA dec8<>+64(SB)/8, $0x7f7e7d7c79766f00  // T: 0 111 118 121 124 125 126 127
DATA dec8<>+72(SB)/8, $0x8080808080808080  //    128 ...
DATA dec8<>+80(SB)/8, $0x7f7e7d7c79766f00  // (both lanes)
DATA dec8<>+88(SB)/8, $0x8080808080808080
DATA dec8<>+96(SB)/8, $0x0000000200000000  // VPERMD: dwords 0 2 4 6 1 3 5 7
DATA dec8<>+104(SB)/8, $0x0000000600000004
DATA dec8<>+112(SB)/8, $0x0000000300000001
DATA dec8<>+120(SB)/8, $0x0000000700000005
GLOBL dec8<>(SB), RODATA|NOPTR, $128

// DECODE32 decodes the 32 codes at SI into the float32 products of
// elements 0-7 (Y6), 8-15 (Y7), 16-23 (Y8) and 24-31 (Y4), ORing the NaN
// codes' bytes into Y9; the constants are in Y10-Y15 (SETUP). The codes
// permuted (Y0); m = c & 0x7f (Y1); m = 0x7f marks a NaN; the sign bit at
// bit 3 of each byte (Y3); m' = m + T[min(m, 8)] (Y1); the words
// sign<<11 | m', shifted to sign<<15 | m'<<4 (Y4, Y5); the dwords
// sign<<31 | m'<<20, multiplied by s2.
#define DECODE32 \
	VPERMD (SI), Y10, Y0; \
	VPAND Y13, Y0, Y1; \
	VPCMPEQB Y13, Y1, Y2; \
	VPOR Y2, Y9, Y9; \
	VPSRLW $4, Y0, Y3; \
	VPAND Y12, Y3, Y3; \
	VPMINUB Y12, Y1, Y2; \
	VPSHUFB Y2, Y11, Y2; \
	VPADDB Y2, Y1, Y1; \
	VPUNPCKLBW Y3, Y1, Y4; \
	VPUNPCKHBW Y3, Y1, Y5; \
	VPSLLW $4, Y4, Y4; \
	VPSLLW $4, Y5, Y5; \
	VPUNPCKLWD Y4, Y15, Y6; \
	VPUNPCKHWD Y4, Y15, Y7; \
	VPUNPCKLWD Y5, Y15, Y8; \
	VPUNPCKHWD Y5, Y15, Y4; \
	VMULPS Y14, Y6, Y6; \
	VMULPS Y14, Y7, Y7; \
	VMULPS Y14, Y8, Y8; \
	VMULPS Y14, Y4, Y4

// SETUP loads the arguments (dst+0, src+8, n+16, s2+24) and the constants
// of DECODE32, and clears the NaN codes seen (Y9).
#define SETUP \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	VBROADCASTSS s2+24(FP), Y14; \
	VPXOR Y15, Y15, Y15; \
	VMOVDQU dec8<>+0(SB), Y13; \
	VMOVDQU dec8<>+32(SB), Y12; \
	VMOVDQU dec8<>+64(SB), Y11; \
	VMOVDQU dec8<>+96(SB), Y10; \
	VPXOR Y9, Y9, Y9

// DONE reports whether a NaN code was seen and returns.
#define DONE \
	VPMOVMSKB Y9, AX; \
	TESTL AX, AX; \
	SETNE nan+32(FP); \
	VZEROUPPER; \
	RET

// STORE32 stores the 32 float32 products of DECODE32 at DI.
#define STORE32 \
	VMOVUPS Y6, 0(DI); \
	VMOVUPS Y7, 32(DI); \
	VMOVUPS Y8, 64(DI); \
	VMOVUPS Y4, 96(DI)

// func decodeE4M3AVX2(dst *float32, src *byte, n int, s2 float32) (nan bool)
//
// n is a positive multiple of 32; s2 = s·2^104.
TEXT ·decodeE4M3AVX2(SB), NOSPLIT, $0-33
	SETUP
loop:
	DECODE32
	STORE32
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ loop
	DONE

// func dequantE4M3F32AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)
//
// decodeE4M3AVX2 into bytes (the little-endian float32 output of extract).
TEXT ·dequantE4M3F32AVX2(SB), NOSPLIT, $0-33
	SETUP
loopf:
	DECODE32
	STORE32
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JNZ loopf
	DONE

DATA rne<>+0(SB)/4, $0x00007fff   // round to nearest even: bias
DATA rne<>+4(SB)/4, $0x00000001   // and the lowest kept bit
GLOBL rne<>(SB), RODATA|NOPTR, $8

// RNE16 rounds the float32 bits of y to their top 16 bits, nearest even
// (no NaN comes here); t is scratch.
#define RNE16(y, t) \
	VPSRLD $16, y, t; \
	VPAND Y3, t, t; \
	VPADDD Y2, y, y; \
	VPADDD t, y, y; \
	VPSRLD $16, y, y

// func dequantE4M3BF16AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)
//
// The products of decodeE4M3AVX2 rounded to bfloat16, nearest even: no
// product of a non-NaN code is NaN or overflows (|s| < 2^24), so the
// rounding needs no NaN case. n is a positive multiple of 32.
TEXT ·dequantE4M3BF16AVX2(SB), NOSPLIT, $0-33
	SETUP
loopb:
	DECODE32
	VPBROADCASTD rne<>+0(SB), Y2
	VPBROADCASTD rne<>+4(SB), Y3
	RNE16(Y6, Y0)
	RNE16(Y7, Y1)
	RNE16(Y8, Y5)
	RNE16(Y4, Y0)
	VPACKUSDW Y7, Y6, Y6      // 0-3 8-11 | 4-7 12-15
	VPERMQ $0xd8, Y6, Y6
	VPACKUSDW Y4, Y8, Y8
	VPERMQ $0xd8, Y8, Y8
	VMOVDQU Y6, 0(DI)
	VMOVDQU Y8, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $32, CX
	JNZ loopb
	DONE

// func dequantE4M3F16AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)
//
// The products of decodeE4M3AVX2 rounded to IEEE half (F16C, nearest
// even, overflowing to infinity). n is a positive multiple of 32.
TEXT ·dequantE4M3F16AVX2(SB), NOSPLIT, $0-33
	SETUP
looph:
	DECODE32
	VCVTPS2PH $0, Y6, X0
	VCVTPS2PH $0, Y7, X1
	VCVTPS2PH $0, Y8, X2
	VCVTPS2PH $0, Y4, X3
	VMOVDQU X0, 0(DI)
	VMOVDQU X1, 16(DI)
	VMOVDQU X2, 32(DI)
	VMOVDQU X3, 48(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $32, CX
	JNZ looph
	DONE

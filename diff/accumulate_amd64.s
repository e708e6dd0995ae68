//go:build amd64 && !purego

#include "textflag.h"

DATA absmask64<>+0(SB)/8, $0x7fffffffffffffff
DATA absmask64<>+8(SB)/8, $0x7fffffffffffffff
DATA absmask64<>+16(SB)/8, $0x7fffffffffffffff
DATA absmask64<>+24(SB)/8, $0x7fffffffffffffff
GLOBL absmask64<>(SB), RODATA|NOPTR, $32

// The lanes (struct lanes, 8 lanes of float64 per sum) live in registers:
// ss in Y8 (lanes 0-3) and Y9 (lanes 4-7), nb in Y10/Y11, nf in Y12/Y13,
// d in Y14/Y15, and the running maximum of |f-b| in the four lanes of Y7.

// LOADLANES loads the lanes at DX.
#define LOADLANES \
	VMOVUPD 0(DX), Y8; \
	VMOVUPD 32(DX), Y9; \
	VMOVUPD 64(DX), Y10; \
	VMOVUPD 96(DX), Y11; \
	VMOVUPD 128(DX), Y12; \
	VMOVUPD 160(DX), Y13; \
	VMOVUPD 192(DX), Y14; \
	VMOVUPD 224(DX), Y15; \
	VBROADCASTSD 256(DX), Y7

// STORELANES stores the lanes at DX, the maximum of the four maxima in mx.
#define STORELANES \
	VMOVUPD Y8, 0(DX); \
	VMOVUPD Y9, 32(DX); \
	VMOVUPD Y10, 64(DX); \
	VMOVUPD Y11, 96(DX); \
	VMOVUPD Y12, 128(DX); \
	VMOVUPD Y13, 160(DX); \
	VMOVUPD Y14, 192(DX); \
	VMOVUPD Y15, 224(DX); \
	VEXTRACTF128 $1, Y7, X0; \
	VMAXPD X0, X7, X7; \
	VPERMILPD $1, X7, X0; \
	VMAXPD X0, X7, X7; \
	VMOVSD X7, 256(DX)

// STEP adds eight pairs into the lanes: x in Y0 (elements 0-3) and Y1
// (4-7), y in Y2 and Y3, all float64. e = y - x; ss += e*e, nb += x*x,
// nf += y*y, d += x*y, each one fused multiply-add; max = max(|e|, max),
// which keeps max when |e| is NaN (MAXPD returns its second operand).
#define STEP \
	VSUBPD Y0, Y2, Y4; \
	VSUBPD Y1, Y3, Y5; \
	VFMADD231PD Y4, Y4, Y8; \
	VFMADD231PD Y5, Y5, Y9; \
	VFMADD231PD Y0, Y0, Y10; \
	VFMADD231PD Y1, Y1, Y11; \
	VFMADD231PD Y2, Y2, Y12; \
	VFMADD231PD Y3, Y3, Y13; \
	VFMADD231PD Y0, Y2, Y14; \
	VFMADD231PD Y1, Y3, Y15; \
	VANDPD absmask64<>(SB), Y4, Y4; \
	VANDPD absmask64<>(SB), Y5, Y5; \
	VMAXPD Y7, Y4, Y7; \
	VMAXPD Y7, Y5, Y7

// func accumulateFMA(l *lanes, b, f *float32, n int)
TEXT ·accumulateFMA(SB), NOSPLIT, $0-32
	MOVQ l+0(FP), DX
	MOVQ b+8(FP), SI
	MOVQ f+16(FP), DI
	MOVQ n+24(FP), CX
	SHLQ $2, CX // bytes per side
	XORQ AX, AX
	LOADLANES
f32loop:
	VCVTPS2PD (SI)(AX*1), Y0
	VCVTPS2PD 16(SI)(AX*1), Y1
	VCVTPS2PD (DI)(AX*1), Y2
	VCVTPS2PD 16(DI)(AX*1), Y3
	STEP
	ADDQ $32, AX
	CMPQ AX, CX
	JNE f32loop
	STORELANES
	VZEROUPPER
	RET

// func accumulateBF16FMA(l *lanes, b, f *byte, n int)
//
// A BF16 value is the top half of a float32: interleaving the 16-bit
// words with zeros (zero low half, value high half) gives the float32.
TEXT ·accumulateBF16FMA(SB), NOSPLIT, $0-32
	MOVQ l+0(FP), DX
	MOVQ b+8(FP), SI
	MOVQ f+16(FP), DI
	MOVQ n+24(FP), CX
	SHLQ $1, CX // bytes per side
	XORQ AX, AX
	VPXOR X6, X6, X6
	LOADLANES
bf16loop:
	VPUNPCKLWD (SI)(AX*1), X6, X0 // b[0:4] as float32
	VPUNPCKHWD (SI)(AX*1), X6, X1 // b[4:8]
	VPUNPCKLWD (DI)(AX*1), X6, X2
	VPUNPCKHWD (DI)(AX*1), X6, X3
	VCVTPS2PD X0, Y0
	VCVTPS2PD X1, Y1
	VCVTPS2PD X2, Y2
	VCVTPS2PD X3, Y3
	STEP
	ADDQ $16, AX
	CMPQ AX, CX
	JNE bf16loop
	STORELANES
	VZEROUPPER
	RET

// func accumulateBF16AVX512(l *lanes, b, f *byte, n int)
//
// accumulateBF16FMA in 512-bit vectors: the eight lanes of each sum are
// the eight float64 of one register (ss Z8, nb Z10, nf Z12, d Z14; the
// maximum of |f-b| in Z7), the same operations on each lane in the same
// order, so the same bits. VPMOVZXWD and VPSLLD widen eight BF16 values
// to float32, VCVTPS2PD to float64.
TEXT ·accumulateBF16AVX512(SB), NOSPLIT, $0-32
	MOVQ l+0(FP), DX
	MOVQ b+8(FP), SI
	MOVQ f+16(FP), DI
	MOVQ n+24(FP), CX
	SHLQ $1, CX // bytes per side
	XORQ AX, AX
	VMOVUPD 0(DX), Z8
	VMOVUPD 64(DX), Z10
	VMOVUPD 128(DX), Z12
	VMOVUPD 192(DX), Z14
	VBROADCASTSD 256(DX), Z7
	VBROADCASTSD absmask64<>(SB), Z6
bf16loop512:
	VPMOVZXWD (SI)(AX*1), Y0
	VPSLLD $16, Y0, Y0
	VCVTPS2PD Y0, Z0
	VPMOVZXWD (DI)(AX*1), Y2
	VPSLLD $16, Y2, Y2
	VCVTPS2PD Y2, Z2
	VSUBPD Z0, Z2, Z4
	VFMADD231PD Z4, Z4, Z8
	VFMADD231PD Z0, Z0, Z10
	VFMADD231PD Z2, Z2, Z12
	VFMADD231PD Z0, Z2, Z14
	VANDPD Z6, Z4, Z4
	VMAXPD Z7, Z4, Z7
	ADDQ $16, AX
	CMPQ AX, CX
	JNE bf16loop512
	VMOVUPD Z8, 0(DX)
	VMOVUPD Z10, 64(DX)
	VMOVUPD Z12, 128(DX)
	VMOVUPD Z14, 192(DX)
	VEXTRACTF64X4 $1, Z7, Y0
	VMAXPD Y0, Y7, Y7
	VEXTRACTF128 $1, Y7, X0
	VMAXPD X0, X7, X7
	VPERMILPD $1, X7, X0
	VMAXPD X0, X7, X7
	VMOVSD X7, 256(DX)
	VZEROUPPER
	RET

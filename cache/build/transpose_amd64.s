//go:build amd64 && !purego

#include "textflag.h"

// func transposeRowsSSE2(dst *uint16, src *byte, stride uintptr, n uintptr)
//
// dst[j*32+k] = 16-bit value j of the row at src + k*stride, for the 32
// rows k and the n values j (n a multiple of 8): 8x8 blocks transposed in
// registers (three rounds of unpacks: 16-, 32- and 64-bit lanes).
TEXT ·transposeRowsSSE2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R9
	MOVQ n+24(FP), CX
	LEAQ (R9)(R9*2), R11 // 3*stride
	SHRQ $3, CX          // 8-value column groups
	JZ done
cols:
	MOVQ SI, R12 // rows k0..k0+7 of this column group
	MOVQ DI, R13
	MOVQ $4, DX
rows:
	LEAQ (R12)(R9*4), R14
	MOVOU (R12), X0
	MOVOU (R12)(R9*1), X1
	MOVOU (R12)(R9*2), X2
	MOVOU (R12)(R11*1), X3
	MOVOU (R14), X4
	MOVOU (R14)(R9*1), X5
	MOVOU (R14)(R9*2), X6
	MOVOU (R14)(R11*1), X7
	MOVOU X0, X8
	PUNPCKHWL X1, X8
	PUNPCKLWL X1, X0
	MOVOU X2, X9
	PUNPCKHWL X3, X9
	PUNPCKLWL X3, X2
	MOVOU X4, X10
	PUNPCKHWL X5, X10
	PUNPCKLWL X5, X4
	MOVOU X6, X11
	PUNPCKHWL X7, X11
	PUNPCKLWL X7, X6
	MOVOU X0, X1
	PUNPCKHLQ X2, X1
	PUNPCKLLQ X2, X0
	MOVOU X8, X3
	PUNPCKHLQ X9, X3
	PUNPCKLLQ X9, X8
	MOVOU X4, X5
	PUNPCKHLQ X6, X5
	PUNPCKLLQ X6, X4
	MOVOU X10, X7
	PUNPCKHLQ X11, X7
	PUNPCKLLQ X11, X10
	MOVOU X0, X12
	PUNPCKHQDQ X4, X12
	PUNPCKLQDQ X4, X0
	MOVOU X1, X13
	PUNPCKHQDQ X5, X13
	PUNPCKLQDQ X5, X1
	MOVOU X8, X14
	PUNPCKHQDQ X10, X14
	PUNPCKLQDQ X10, X8
	MOVOU X3, X15
	PUNPCKHQDQ X7, X15
	PUNPCKLQDQ X7, X3
	MOVOU X0, 0(R13)
	MOVOU X12, 64(R13)
	MOVOU X1, 128(R13)
	MOVOU X13, 192(R13)
	MOVOU X8, 256(R13)
	MOVOU X14, 320(R13)
	MOVOU X3, 384(R13)
	MOVOU X15, 448(R13)
	LEAQ (R14)(R9*4), R12 // next 8 rows
	ADDQ $16, R13         // rows k0+8.. of the output
	DECQ DX
	JNZ rows
	ADDQ $16, SI  // next 8 values
	ADDQ $512, DI // 8 output rows of 32
	DECQ CX
	JNZ cols
done:
	RET

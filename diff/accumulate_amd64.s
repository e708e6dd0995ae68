//go:build amd64 && !purego

#include "textflag.h"

DATA absmask<>+0(SB)/8, $0x7fffffffffffffff
DATA absmask<>+8(SB)/8, $0x7fffffffffffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $16

// func accumulateSSE2(b, f *float32, n int, mx float64, out *[10]float64) bool
TEXT ·accumulateSSE2(SB), NOSPLIT, $0-41
	MOVQ b+0(FP), SI
	MOVQ f+8(FP), DI
	MOVQ n+16(FP), CX
	MOVSD mx+24(FP), X8
	MOVLHPS X8, X8          // X8: running maxima (both lanes start at mx)
	MOVQ out+32(FP), DX
	MOVUPD absmask<>(SB), X9
	XORPD X10, X10          // ss
	XORPD X11, X11          // nb
	XORPD X12, X12          // nf
	XORPD X13, X13          // d
	XORPD X14, X14          // NaN flags
loop:
	MOVSD (SI), X0          // two float32 of b
	CVTPS2PD X0, X0         // x0, x1
	MOVSD (DI), X1          // two float32 of f
	CVTPS2PD X1, X1         // y0, y1
	MOVAPD X1, X2
	SUBPD X0, X2            // e = y - x
	MOVAPD X2, X3
	ANDPD X9, X3            // |e|
	MOVAPD X3, X4
	MAXPD X8, X4            // X4 = max(|e|, mx); NaN |e| gives mx
	MOVAPD X4, X8
	MOVAPD X2, X5
	CMPPD X2, X5, $3        // unordered: e is NaN
	ORPD X5, X14
	MULPD X2, X2            // e*e
	ADDPD X2, X10
	MOVAPD X0, X6
	MULPD X0, X6            // x*x
	ADDPD X6, X11
	MOVAPD X1, X7
	MULPD X1, X7            // y*y
	ADDPD X7, X12
	MULPD X1, X0            // x*y
	ADDPD X0, X13
	ADDQ $8, SI
	ADDQ $8, DI
	DECQ CX
	JNZ loop
	MOVUPD X10, 0(DX)
	MOVUPD X11, 16(DX)
	MOVUPD X12, 32(DX)
	MOVUPD X13, 48(DX)
	MOVUPD X8, 64(DX)
	MOVMSKPD X14, AX
	TESTQ AX, AX
	SETNE ret+40(FP)
	RET

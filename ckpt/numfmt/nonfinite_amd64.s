//go:build amd64 && !purego

#include "textflag.h"

DATA nan7f<>+0(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA nan7f<>+8(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA nan7f<>+16(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA nan7f<>+24(SB)/8, $0x7f7f7f7f7f7f7f7f
GLOBL nan7f<>(SB), RODATA|NOPTR, $32

// func cleanE4M3AVX2(p *byte, n int) int
//
// Per 128 bytes: the low seven bits of every code (VPAND), compared with
// 0x7f (VPCMPEQB: 0xff where a code is a NaN), the four results ORed and
// tested once.
TEXT ·cleanE4M3AVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVDQU nan7f<>(SB), Y7
	XORQ AX, AX
loop:
	VPAND (SI)(AX*1), Y7, Y0
	VPAND 32(SI)(AX*1), Y7, Y1
	VPAND 64(SI)(AX*1), Y7, Y2
	VPAND 96(SI)(AX*1), Y7, Y3
	VPCMPEQB Y7, Y0, Y0
	VPCMPEQB Y7, Y1, Y1
	VPCMPEQB Y7, Y2, Y2
	VPCMPEQB Y7, Y3, Y3
	VPOR Y1, Y0, Y0
	VPOR Y3, Y2, Y2
	VPOR Y2, Y0, Y0
	VPTEST Y0, Y0
	JNZ done
	ADDQ $128, AX
	CMPQ AX, CX
	JLT loop
done:
	VZEROUPPER
	MOVQ AX, ret+16(FP)
	RET

//go:build amd64 && !purego

#include "textflag.h"

// func rawSameAVX512(a, b *byte, n int, esize int) int
//
// The number of elements of esize bytes (1, 2, 4 or 8) that are equal
// in a and b, over n bytes (a positive multiple of 64): a VPCMPEQ of the
// element width per 64 bytes into a mask register, POPCNT of the mask.
TEXT ·rawSameAVX512(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), DX
	MOVQ esize+24(FP), CX
	ADDQ DX, SI
	ADDQ DX, DI
	NEGQ DX
	XORQ R8, R8
	CMPQ CX, $1
	JEQ bytes
	CMPQ CX, $2
	JEQ words
	CMPQ CX, $4
	JEQ dwords

qwords:
	VMOVDQU64 (SI)(DX*1), Z0
	VPCMPEQQ (DI)(DX*1), Z0, K1
	KMOVB K1, AX
	POPCNTL AX, AX
	ADDQ AX, R8
	ADDQ $64, DX
	JNZ qwords
	JMP ret

dwords:
	VMOVDQU64 (SI)(DX*1), Z0
	VPCMPEQD (DI)(DX*1), Z0, K1
	KMOVW K1, AX
	POPCNTL AX, AX
	ADDQ AX, R8
	ADDQ $64, DX
	JNZ dwords
	JMP ret

words:
	VMOVDQU64 (SI)(DX*1), Z0
	VPCMPEQW (DI)(DX*1), Z0, K1
	KMOVD K1, AX
	POPCNTL AX, AX
	ADDQ AX, R8
	ADDQ $64, DX
	JNZ words
	JMP ret

bytes:
	VMOVDQU64 (SI)(DX*1), Z0
	VPCMPEQB (DI)(DX*1), Z0, K1
	KMOVQ K1, AX
	POPCNTQ AX, AX
	ADDQ AX, R8
	ADDQ $64, DX
	JNZ bytes

ret:
	MOVQ R8, ret+32(FP)
	VZEROUPPER
	RET

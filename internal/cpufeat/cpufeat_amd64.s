//go:build amd64 && !purego

#include "textflag.h"

// func hasAVX2() bool
TEXT ·hasAVX2(SB), NOSPLIT, $0-1
	MOVB $0, ret+0(FP)
	XORL AX, AX
	CPUID
	CMPL AX, $7
	JB nope
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, R8
	ANDL $0x18000000, R8 // OSXSAVE and AVX
	CMPL R8, $0x18000000
	JNE nope
	XORL CX, CX
	XGETBV
	ANDL $6, AX // XMM and YMM state enabled by the OS
	CMPL AX, $6
	JNE nope
	MOVL $7, AX
	XORL CX, CX
	CPUID
	BTL $5, BX // AVX2
	JCC nope
	MOVB $1, ret+0(FP)
nope:
	RET

// func hasFMA() bool
TEXT ·hasFMA(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $12, CX // FMA
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

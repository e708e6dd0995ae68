//go:build amd64 && !purego

#include "textflag.h"

DATA lo7<>+0(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA lo7<>+8(SB)/8, $0x7f7f7f7f7f7f7f7f
GLOBL lo7<>(SB), RODATA|NOPTR, $16

// One float group: X8 = bF[off:off+4], X9 = fF[off:off+4]; leaves in dst
// the mask of sameValue: equal (±0 included), or both NaN.
#define SAMEVAL(off, dst) \
	MOVUPS off(DX), dst; \
	MOVUPS off(R8), X9; \
	MOVAPS dst, X10; \
	CMPPS X9, X10, $0;  /* bF == fF */ \
	CMPPS dst, dst, $3; /* bF is NaN */ \
	CMPPS X9, X9, $3;   /* fF is NaN */ \
	ANDPS X9, dst; \
	ORPS X10, dst

// func countFP8SSE2(a, b *byte, bF, fF *float32, n int, nanAbove byte) (kept, zeroSign int)
//
// n is a multiple of 16 and at most 255*16: the byte counters below count
// one per block of 16 and must not wrap.
TEXT ·countFP8SSE2(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ bF+16(FP), DX
	MOVQ fF+24(FP), R8
	MOVQ n+32(FP), CX
	MOVBLZX nanAbove+40(FP), AX
	MOVQ AX, X14
	PUNPCKLBW X14, X14
	PSHUFLW $0, X14, X14
	PSHUFD $0, X14, X14     // X14: nanAbove in every byte
	MOVOU lo7<>(SB), X13    // X13: 0x7f in every byte
	PXOR X15, X15           // X15: zero
	PXOR X11, X11           // X11: per-byte count of unchanged elements
	PXOR X12, X12           // X12: per-byte count of ±0 sign flips
	SHRQ $4, CX
	JZ done
loop:
	MOVOU (SI), X0          // codes a
	MOVOU (DI), X1          // codes b
	MOVO X0, X2
	PCMPEQB X1, X2          // X2: a == b
	MOVO X0, X3
	POR X1, X3
	PAND X13, X3
	PCMPEQB X15, X3         // X3: both codes are ±0
	MOVO X0, X4
	PAND X13, X4
	PCMPGTB X14, X4         // X4: a is NaN
	MOVO X1, X5
	PAND X13, X5
	PCMPGTB X14, X5         // X5: b is NaN
	PAND X5, X4             // X4: both NaN
	MOVO X2, X6
	PANDN X3, X6            // X6: a != b and both ±0: a sign flip
	POR X3, X2
	POR X4, X2              // X2: same canonical code
	SAMEVAL(0, X0)
	SAMEVAL(16, X1)
	SAMEVAL(32, X3)
	SAMEVAL(48, X4)
	PACKSSLW X1, X0
	PACKSSLW X4, X3
	PACKSSWB X3, X0         // X0: same value, one byte per element in order
	PAND X2, X0             // X0: unchanged
	PSUBB X0, X11
	PSUBB X6, X12
	ADDQ $16, SI
	ADDQ $16, DI
	ADDQ $64, DX
	ADDQ $64, R8
	DECQ CX
	JNZ loop
done:
	PSADBW X15, X11
	PSADBW X15, X12
	PSHUFD $0x4e, X11, X0
	PADDQ X0, X11
	PSHUFD $0x4e, X12, X1
	PADDQ X1, X12
	MOVQ X11, AX
	MOVQ AX, kept+48(FP)
	MOVQ X12, AX
	MOVQ AX, zeroSign+56(FP)
	RET

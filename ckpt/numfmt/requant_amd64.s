//go:build amd64 && !purego

#include "textflag.h"

// Re-quantisation kernels of requantBlock (the Go side is requant_amd64.go).
//
// ENCODE turns the 8 float32 x at (SI) into the codes ckpt.EncodeE4M3(x/s),
// or ckpt.EncodeE4M3(x·s) when R8 is not zero, as dwords, with the
// operations of the Go function on each lane:
//   u = x/s (VDIVPS: the float32 quotient of the Go loop) or x·s (VMULPS:
//   the float32 product; R8 is the same for every iteration, so that the
//   branch is always predicted), a = u &^ sign;
//   subnormal codes (a < 2^-6): a·512 (exact) converted to an integer
//   with the MXCSR rounding, nearest even, as math.RoundToEven;
//   the others: a is first clamped: VMINPS(448, a) gives 448 for
//   448 <= a <= inf and keeps a NaN (MINPS returns its second operand
//   when one is NaN), then an integer minimum with the bits of 480
//   turns a NaN into 480, whose code is 0x7f, while 448 gives 0x7e;
//   then (a + 0x7ffff + (a>>20)&1) >> 20 - 120<<3 as in EncodeE4M3,
//   the rebias folded into the added constant (the wrapped sums of the
//   subnormal lanes are not selected);
//   the sign: bit 31 of u (an integer compare with 0) as bit 7.
// Out: Y1 the code's low seven bits, Y0 the code; Y2-Y4 are clobbered.
// Constants: Y7 0x80, Y9 0, Y8 the bits of 2^-6, Y10 1, Y11 the bits of 480,
// Y12 448.0, Y13 512.0, Y14 0x7fffffff, Y15 s; rqk<> the added constant.
#define ENCODE \
	VMOVUPS (SI), Y0; \
	CMPQ R8, $0; \
	JNE 3(PC); \
	VDIVPS Y15, Y0, Y0;       /* u = x/s */ \
	JMP 2(PC); \
	VMULPS Y15, Y0, Y0;       /* u = x·s */ \
	VANDPS Y14, Y0, Y1;       /* a = |u| */ \
	VPCMPGTD Y0, Y9, Y0;      /* u < 0 as an integer: the sign */ \
	VPAND Y7, Y0, Y0;         /* sign<<7 */ \
	VMULPS Y13, Y1, Y2; \
	VCVTPS2DQ Y2, Y2;         /* subnormal code: RoundToEven(a*512) */ \
	VMINPS Y1, Y12, Y1;       /* 448 < a ? 448 : a (NaN stays) */ \
	VPMINSD Y11, Y1, Y1;      /* NaN -> 480 */ \
	VPCMPGTD Y1, Y8, Y3;      /* a < 2^-6 */ \
	VPSRLD $20, Y1, Y4; \
	VPAND Y10, Y4, Y4;        /* (a>>20)&1 */ \
	VPADDD Y4, Y1, Y1; \
	VPADDD rqk<>(SB), Y1, Y1; /* + 0x7ffff - 120<<23 */ \
	VPSRLD $20, Y1, Y1;       /* normal code */ \
	VBLENDVPS Y3, Y2, Y1, Y1; /* the subnormal code where a < 2^-6 */ \
	VPOR Y1, Y0, Y0

DATA rqc<>+0(SB)/4, $0x80
DATA rqc<>+4(SB)/4, $0x3c800000  // 2^-6
DATA rqc<>+8(SB)/4, $1
DATA rqc<>+12(SB)/4, $0x43f00000 // 480
DATA rqc<>+16(SB)/4, $0x43e00000 // 448
DATA rqc<>+20(SB)/4, $0x44000000 // 512
DATA rqc<>+24(SB)/4, $0x7fffffff
GLOBL rqc<>(SB), RODATA|NOPTR, $28

DATA rqk<>+0(SB)/8, $0xc407ffffc407ffff  // 0x7ffff - 0x3c000000 (mod 2^32)
DATA rqk<>+8(SB)/8, $0xc407ffffc407ffff
DATA rqk<>+16(SB)/8, $0xc407ffffc407ffff
DATA rqk<>+24(SB)/8, $0xc407ffffc407ffff
GLOBL rqk<>(SB), RODATA|NOPTR, $32

DATA rq7f<>+0(SB)/8, $0x0000007f0000007f
DATA rq7f<>+8(SB)/8, $0x0000007f0000007f
DATA rq7f<>+16(SB)/8, $0x0000007f0000007f
DATA rq7f<>+24(SB)/8, $0x0000007f0000007f
GLOBL rq7f<>(SB), RODATA|NOPTR, $32

// CONSTS loads the constants of ENCODE; s is the argument at 24(FP).
#define CONSTS \
	VBROADCASTSS s+24(FP), Y15; \
	VPBROADCASTD rqc<>+0(SB), Y7; \
	VPBROADCASTD rqc<>+4(SB), Y8; \
	VPBROADCASTD rqc<>+8(SB), Y10; \
	VPBROADCASTD rqc<>+12(SB), Y11; \
	VPBROADCASTD rqc<>+16(SB), Y12; \
	VPBROADCASTD rqc<>+20(SB), Y13; \
	VPBROADCASTD rqc<>+24(SB), Y14; \
	VPXOR Y9, Y9, Y9

// func requantAVX2(w *float32, codes *byte, n int, s float32, mul bool) (same, zeroSign int)
//
// n is a positive multiple of 8 below 2^31. same counts the i < n whose
// code EncodeE4M3(w[i]/s) (EncodeE4M3(w[i]·s) when mul) decodes to the
// value of codes[i] (equal, ±0, or both NaN), zeroSign those that differ
// only in the sign of zero.
TEXT ·requantAVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ codes+8(FP), DI
	MOVQ n+16(FP), CX
	MOVBQZX mul+28(FP), R8
	CONSTS
	VPXOR Y5, Y5, Y5          // same, per lane
	VPXOR Y6, Y6, Y6          // zeroSign, per lane
loop:
	ENCODE
	VPMOVZXBD (DI), Y2        // the stored codes
	VPXOR Y2, Y0, Y0          // d = code ^ stored
	VPCMPEQD Y9, Y0, Y2       // equal
	VPCMPEQD Y7, Y0, Y0       // only the sign differs
	VPCMPEQD Y9, Y1, Y3       // the code is ±0
	VPCMPEQD rq7f<>(SB), Y1, Y1 // the code is NaN
	VPOR Y3, Y1, Y1
	VPAND Y0, Y1, Y1          // ±0 against ∓0, NaN against NaN
	VPAND Y0, Y3, Y3          // ±0 against ∓0
	VPOR Y2, Y1, Y1           // same value
	VPSUBD Y1, Y5, Y5
	VPSUBD Y3, Y6, Y6
	ADDQ $32, SI
	ADDQ $8, DI
	SUBQ $8, CX
	JNZ loop
	VEXTRACTI128 $1, Y5, X0
	VPADDD X0, X5, X5
	VEXTRACTI128 $1, Y6, X0
	VPADDD X0, X6, X6
	VPSHUFD $0x4e, X5, X0
	VPADDD X0, X5, X5
	VPSHUFD $0x4e, X6, X0
	VPADDD X0, X6, X6
	VPSHUFD $0xb1, X5, X0
	VPADDD X0, X5, X5
	VPSHUFD $0xb1, X6, X0
	VPADDD X0, X6, X6
	VMOVD X5, AX
	MOVQ AX, same+32(FP)
	VMOVD X6, AX
	MOVQ AX, zeroSign+40(FP)
	VZEROUPPER
	RET

// func encodeE4M3AVX2(dst *uint32, src *float32, n int, s float32, mul bool)
//
// dst[i] = EncodeE4M3(src[i]/s) (src[i]·s when mul) for i < n, a positive
// multiple of 8: the ENCODE of requantAVX2 on its own, for its test.
TEXT ·encodeE4M3AVX2(SB), NOSPLIT, $0-29
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVBQZX mul+28(FP), R8
	CONSTS
enc:
	ENCODE
	VMOVDQU Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ enc
	VZEROUPPER
	RET

// func absMaxAVX2(w *float32, n int) float32
//
// The largest |w[i]| for i < n, a positive multiple of 32, ignoring NaN
// (MAXPS returns its second operand, the running maximum, when the first
// is NaN), as the Go loop's x > amax; 0 when there is none.
TEXT ·absMaxAVX2(SB), NOSPLIT, $0-20
	MOVQ w+0(FP), SI
	MOVQ n+8(FP), CX
	VPBROADCASTD rqc<>+24(SB), Y4
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
amax:
	VANDPS 0(SI), Y4, Y5
	VANDPS 32(SI), Y4, Y6
	VANDPS 64(SI), Y4, Y7
	VANDPS 96(SI), Y4, Y8
	VMAXPS Y0, Y5, Y0         // x > m ? x : m
	VMAXPS Y1, Y6, Y1
	VMAXPS Y2, Y7, Y2
	VMAXPS Y3, Y8, Y3
	ADDQ $128, SI
	SUBQ $32, CX
	JNZ amax
	VMAXPS Y1, Y0, Y0
	VMAXPS Y3, Y2, Y2
	VMAXPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VMAXPS X1, X0, X0
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

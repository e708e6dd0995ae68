//go:build amd64 && !purego

#include "textflag.h"

// func stripesSSE2(sum *[8]uint64, p *byte, key *uint64, n uintptr)
//
// For each of the n stripes of 64 bytes at p (stripe i keyed by the eight
// words at key+8i), lane j (v, word k): sum[j] += lo32(v^k) * hi32(v^k)
// and sum[j^1] += v; two lanes per register.
TEXT ·stripesSSE2(SB), NOSPLIT, $0-32
	MOVQ sum+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ key+16(FP), DX
	MOVQ n+24(FP), CX
	MOVOU 0(DI), X0
	MOVOU 16(DI), X1
	MOVOU 32(DI), X2
	MOVOU 48(DI), X3
	TESTQ CX, CX
	JZ done
loop:
	MOVOU 0(SI), X4
	MOVOU 0(DX), X5
	PXOR X4, X5
	PSHUFD $0x4e, X4, X4
	PADDQ X4, X0
	MOVO X5, X6
	PSRLQ $32, X6
	PMULULQ X6, X5
	PADDQ X5, X0
	MOVOU 16(SI), X4
	MOVOU 16(DX), X5
	PXOR X4, X5
	PSHUFD $0x4e, X4, X4
	PADDQ X4, X1
	MOVO X5, X6
	PSRLQ $32, X6
	PMULULQ X6, X5
	PADDQ X5, X1
	MOVOU 32(SI), X4
	MOVOU 32(DX), X5
	PXOR X4, X5
	PSHUFD $0x4e, X4, X4
	PADDQ X4, X2
	MOVO X5, X6
	PSRLQ $32, X6
	PMULULQ X6, X5
	PADDQ X5, X2
	MOVOU 48(SI), X4
	MOVOU 48(DX), X5
	PXOR X4, X5
	PSHUFD $0x4e, X4, X4
	PADDQ X4, X3
	MOVO X5, X6
	PSRLQ $32, X6
	PMULULQ X6, X5
	PADDQ X5, X3
	ADDQ $64, SI
	ADDQ $8, DX
	DECQ CX
	JNZ loop
done:
	MOVOU X0, 0(DI)
	MOVOU X1, 16(DI)
	MOVOU X2, 32(DI)
	MOVOU X3, 48(DI)
	RET

// func stripesAVX2(sum *[8]uint64, p *byte, key *uint64, n uintptr)
//
// stripesSSE2 with four lanes per register, two stripes per iteration:
// the products and the data words of even and odd stripes are summed
// apart (Y0-Y1, Y2-Y3, Y10-Y11, Y12-Y13) and added at the end.
TEXT ·stripesAVX2(SB), NOSPLIT, $0-32
	MOVQ sum+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ key+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVDQU 0(DI), Y0
	VMOVDQU 32(DI), Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	CMPQ CX, $2
	JB avxone
avxloop:
	VMOVDQU 0(SI), Y4
	VMOVDQU 32(SI), Y5
	VMOVDQU 64(SI), Y14
	VMOVDQU 96(SI), Y15
	VPXOR 0(DX), Y4, Y6
	VPXOR 32(DX), Y5, Y7
	VPXOR 8(DX), Y14, Y8
	VPXOR 40(DX), Y15, Y9
	VPSHUFD $0x4e, Y4, Y4
	VPSHUFD $0x4e, Y5, Y5
	VPSHUFD $0x4e, Y14, Y14
	VPSHUFD $0x4e, Y15, Y15
	VPADDQ Y4, Y2, Y2
	VPADDQ Y5, Y3, Y3
	VPADDQ Y14, Y12, Y12
	VPADDQ Y15, Y13, Y13
	VPSRLQ $32, Y6, Y4
	VPSRLQ $32, Y7, Y5
	VPSRLQ $32, Y8, Y14
	VPSRLQ $32, Y9, Y15
	VPMULUDQ Y4, Y6, Y6
	VPMULUDQ Y5, Y7, Y7
	VPMULUDQ Y14, Y8, Y8
	VPMULUDQ Y15, Y9, Y9
	VPADDQ Y6, Y0, Y0
	VPADDQ Y7, Y1, Y1
	VPADDQ Y8, Y10, Y10
	VPADDQ Y9, Y11, Y11
	ADDQ $128, SI
	ADDQ $16, DX
	SUBQ $2, CX
	CMPQ CX, $2
	JAE avxloop
avxone:
	TESTQ CX, CX
	JZ avxdone
	VMOVDQU 0(SI), Y4
	VMOVDQU 32(SI), Y5
	VPXOR 0(DX), Y4, Y6
	VPXOR 32(DX), Y5, Y7
	VPSHUFD $0x4e, Y4, Y4
	VPSHUFD $0x4e, Y5, Y5
	VPADDQ Y4, Y2, Y2
	VPADDQ Y5, Y3, Y3
	VPSRLQ $32, Y6, Y4
	VPSRLQ $32, Y7, Y5
	VPMULUDQ Y4, Y6, Y6
	VPMULUDQ Y5, Y7, Y7
	VPADDQ Y6, Y0, Y0
	VPADDQ Y7, Y1, Y1
avxdone:
	VPADDQ Y2, Y0, Y0
	VPADDQ Y3, Y1, Y1
	VPADDQ Y10, Y0, Y0
	VPADDQ Y11, Y1, Y1
	VPADDQ Y12, Y0, Y0
	VPADDQ Y13, Y1, Y1
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VZEROUPPER
	RET

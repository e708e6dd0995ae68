//go:build amd64 && !purego

#include "textflag.h"

DATA bfpc<>+0(SB)/8, $0x7fff7fff7fff7fff   // abs mask
DATA bfpc<>+8(SB)/8, $0x7fff7fff7fff7fff
DATA bfpc<>+16(SB)/8, $0x7f007f007f007f00  // significand << 8
DATA bfpc<>+24(SB)/8, $0x7f007f007f007f00
DATA bfpc<>+32(SB)/8, $0x8000800080008000  // implicit one << 8
DATA bfpc<>+40(SB)/8, $0x8000800080008000
DATA bfpc<>+48(SB)/8, $0x0001000100010001  // 1
DATA bfpc<>+56(SB)/8, $0x0001000100010001
DATA bfpc<>+64(SB)/8, $0x0002000200020002  // 2
DATA bfpc<>+72(SB)/8, $0x0002000200020002
DATA bfpc<>+80(SB)/8, $0x0004000400040004  // 4
DATA bfpc<>+88(SB)/8, $0x0004000400040004
DATA bfpc<>+96(SB)/8, $0x0008000800080008  // 8
DATA bfpc<>+104(SB)/8, $0x0008000800080008
DATA bfpc<>+112(SB)/8, $0x00ff00ff00ff00ff // low byte
DATA bfpc<>+120(SB)/8, $0x00ff00ff00ff00ff
DATA bfpc<>+128(SB)/8, $0x0080008000800080 // half
DATA bfpc<>+136(SB)/8, $0x0080008000800080
DATA bfpc<>+144(SB)/8, $0x000000ff000000ff // low byte of dwords
DATA bfpc<>+152(SB)/8, $0x000000ff000000ff
GLOBL bfpc<>(SB), RODATA|NOPTR, $160

// CODES computes the codes of the 8 values in X0 (bits) into X0 (16-bit
// lanes). X15: shared exponent in every lane; params at DI: +0 shift base,
// +16 largest d with a non-zero code, +32 magnitude limit, +48 sign bit.
// Clobbers X1-X7.
#define CODES \
	MOVOU bfpc<>+0(SB), X1; PAND X0, X1;           /* X1 = h & 0x7fff */ \
	PSRLW $7, X1;                                  /* x */ \
	MOVOU X15, X2; PSUBW X1, X2;                   /* d = e - x */ \
	MOVOU X2, X3; PADDW 0(DI), X3;                 /* s = d + base */ \
	MOVOU X0, X4; PSLLW $8, X4; PAND bfpc<>+16(SB), X4; POR bfpc<>+32(SB), X4; /* v = mant8 << 8 */ \
	MOVOU X3, X5; PAND bfpc<>+48(SB), X5; PCMPEQW bfpc<>+48(SB), X5; MOVOU X4, X6; PSRLW $1, X6; PAND X5, X6; PANDN X4, X5; POR X6, X5; MOVOU X5, X4; \
	MOVOU X3, X5; PAND bfpc<>+64(SB), X5; PCMPEQW bfpc<>+64(SB), X5; MOVOU X4, X6; PSRLW $2, X6; PAND X5, X6; PANDN X4, X5; POR X6, X5; MOVOU X5, X4; \
	MOVOU X3, X5; PAND bfpc<>+80(SB), X5; PCMPEQW bfpc<>+80(SB), X5; MOVOU X4, X6; PSRLW $4, X6; PAND X5, X6; PANDN X4, X5; POR X6, X5; MOVOU X5, X4; \
	MOVOU X3, X5; PAND bfpc<>+96(SB), X5; PCMPEQW bfpc<>+96(SB), X5; MOVOU X4, X6; PSRLW $8, X6; PAND X5, X6; PANDN X4, X5; POR X6, X5; MOVOU X5, X4; \
	MOVOU X4, X5; PSRLW $8, X5;                    /* q */ \
	PAND bfpc<>+112(SB), X4;                       /* r */ \
	MOVOU X4, X6; PCMPGTW bfpc<>+128(SB), X6;      /* r > half */ \
	PCMPEQW bfpc<>+128(SB), X4;                    /* r == half */ \
	MOVOU X5, X7; PAND bfpc<>+48(SB), X7; PCMPEQW bfpc<>+48(SB), X7; /* q odd */ \
	PAND X7, X4; POR X6, X4; PSRLW $15, X4; PADDW X4, X5; /* q += round up */ \
	PMINSW 32(DI), X5;                             /* clamp */ \
	PCMPGTW 16(DI), X2; PANDN X5, X2;              /* zero when d > dmax */ \
	PXOR X6, X6; PCMPEQW X6, X1; PANDN X2, X1;      /* zero when x == 0 */ \
	MOVOU X1, X2; PCMPEQW X6, X2;                  /* X2: code is zero */ \
	PSRAW $15, X0; PANDN X0, X2; PAND 48(DI), X2;   /* sign bit where negative and non-zero */ \
	POR X2, X1; MOVOU X1, X0

// FACEARGS loads the arguments of the face kernels: SI src, R9 stride,
// R8 exps, DX out, DI params, BX nibbles, R12 rows.
#define FACEARGS \
	MOVQ src+0(FP), SI; MOVQ stride+8(FP), R9; MOVQ exps+16(FP), R8; MOVQ out+24(FP), DX; \
	MOVQ p+32(FP), DI; MOVBLZX nibbles+40(FP), BX; MOVQ rows+48(FP), R12

// func bfpFaceSSE2(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) (small uint32)
//
// rows (1..16) face rows: row k is the 16 values at src + k*stride bytes;
// its shared exponent goes to exps[k] and its codes to out + k*16 (k*8
// with nibbles). A row of exponent 0 (zeros and denormals only) gets
// codes 0; rows whose exponent is between 1 and minTableExp-1 are left
// unwritten and flagged in bit k of small.
TEXT ·bfpFaceSSE2(SB), NOSPLIT, $0-60
	FACEARGS
	XORQ CX, CX
	XORQ R10, R10
	MOVQ $16, R11
	TESTQ BX, BX
	JZ loop
	MOVQ $8, R11
loop:
	MOVOU 0(SI), X8
	MOVOU 16(SI), X9
	MOVOU bfpc<>+0(SB), X10
	MOVOU X10, X11
	PAND X8, X10
	PAND X9, X11
	PMAXSW X11, X10
	MOVOU X10, X11
	PSRLDQ $8, X11
	PMAXSW X11, X10
	MOVOU X10, X11
	PSRLDQ $4, X11
	PMAXSW X11, X10
	MOVOU X10, X11
	PSRLDQ $2, X11
	PMAXSW X11, X10
	MOVQ X10, AX
	ANDQ $0x7fff, AX
	SHRQ $7, AX
	MOVB AX, (R8)(CX*1)
	CMPQ AX, $8
	JB fsmall
	MOVQ AX, X15
	PSHUFLW $0, X15, X15
	PSHUFD $0, X15, X15
	MOVOU X8, X0
	CODES
	MOVOU X0, X8
	MOVOU X9, X0
	CODES
	TESTQ BX, BX
	JNZ ffour
	PACKUSWB X0, X8
	MOVOU X8, 0(DX)
	JMP fnext
ffour:
	MOVOU X8, X1
	PSRLL $12, X1
	POR X1, X8
	PAND bfpc<>+144(SB), X8
	MOVOU X0, X1
	PSRLL $12, X1
	POR X1, X0
	PAND bfpc<>+144(SB), X0
	PACKSSLW X0, X8
	PACKUSWB X8, X8
	MOVQ X8, 0(DX)
	JMP fnext
fsmall:
	TESTQ AX, AX
	JNZ fflag
	PXOR X0, X0                    // e = 0: zeros and denormals, codes 0
	TESTQ BX, BX
	JNZ fzero4
	MOVOU X0, 0(DX)
	JMP fnext
fzero4:
	MOVQ X0, 0(DX)
	JMP fnext
fflag:
	BTSQ CX, R10
fnext:
	ADDQ R9, SI
	ADDQ R11, DX
	INCQ CX
	CMPQ CX, R12
	JB loop
	MOVL R10, small+56(FP)
	RET

DATA avxc<>+0(SB)/8, $0x7fff7fff7fff7fff   // abs mask
DATA avxc<>+8(SB)/8, $0x7fff7fff7fff7fff
DATA avxc<>+16(SB)/8, $0x7fff7fff7fff7fff
DATA avxc<>+24(SB)/8, $0x7fff7fff7fff7fff
DATA avxc<>+32(SB)/8, $0x7f007f007f007f00  // significand << 8
DATA avxc<>+40(SB)/8, $0x7f007f007f007f00
DATA avxc<>+48(SB)/8, $0x7f007f007f007f00
DATA avxc<>+56(SB)/8, $0x7f007f007f007f00
DATA avxc<>+64(SB)/8, $0x8000800080008000  // implicit one << 8
DATA avxc<>+72(SB)/8, $0x8000800080008000
DATA avxc<>+80(SB)/8, $0x8000800080008000
DATA avxc<>+88(SB)/8, $0x8000800080008000
DATA avxc<>+96(SB)/8, $0x00ff00ff00ff00ff  // low byte
DATA avxc<>+104(SB)/8, $0x00ff00ff00ff00ff
DATA avxc<>+112(SB)/8, $0x00ff00ff00ff00ff
DATA avxc<>+120(SB)/8, $0x00ff00ff00ff00ff
DATA avxc<>+128(SB)/8, $0x0080008000800080 // half; also the byte index 0x80 (zero) under a shift count
DATA avxc<>+136(SB)/8, $0x0080008000800080
DATA avxc<>+144(SB)/8, $0x0080008000800080
DATA avxc<>+152(SB)/8, $0x0080008000800080
DATA avxc<>+160(SB)/8, $0x0001000100010001 // 1
DATA avxc<>+168(SB)/8, $0x0001000100010001
DATA avxc<>+176(SB)/8, $0x0001000100010001
DATA avxc<>+184(SB)/8, $0x0001000100010001
DATA avxc<>+192(SB)/8, $0x000000ff000000ff // low byte of dwords
DATA avxc<>+200(SB)/8, $0x000000ff000000ff
DATA avxc<>+208(SB)/8, $0x000000ff000000ff
DATA avxc<>+216(SB)/8, $0x000000ff000000ff
// high byte of 2^(16-s) for a shift s in 1..8 (byte s), zero elsewhere;
// both 128-bit lanes (VPSHUFB looks up within a lane)
DATA avxc<>+224(SB)/8, $0x0204081020408000
DATA avxc<>+232(SB)/8, $0x0000000000000001
DATA avxc<>+240(SB)/8, $0x0204081020408000
DATA avxc<>+248(SB)/8, $0x0000000000000001
GLOBL avxc<>(SB), RODATA|NOPTR, $256

// func bfpFaceAVX2(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) (small uint32)
//
// bfpFaceSSE2 with a face row in one 16-lane AVX2 register; the shift by
// s = d + base (1..8 wherever the code is kept) is a multiplication by
// 2^(16-s), keeping the high half (exact: the low 8 bits of the
// significand word are zero).
TEXT ·bfpFaceAVX2(SB), NOSPLIT, $0-60
	FACEARGS
	VPBROADCASTW 0(DI), Y10  // base
	VPBROADCASTW 16(DI), Y11 // dmax
	VPBROADCASTW 32(DI), Y12 // limit
	VPBROADCASTW 48(DI), Y13 // sign bit
	VMOVDQU avxc<>+0(SB), Y14
	VMOVDQU avxc<>+224(SB), Y9
	XORQ CX, CX
	XORQ R10, R10
	MOVQ $16, R11
	TESTQ BX, BX
	JZ aloop
	MOVQ $8, R11
aloop:
	VMOVDQU 0(SI), Y0
	VPAND Y14, Y0, Y1            // |h|
	VEXTRACTI128 $1, Y1, X2
	VPMAXSW X2, X1, X2
	VPSRLDQ $8, X2, X3
	VPMAXSW X3, X2, X2
	VPSRLDQ $4, X2, X3
	VPMAXSW X3, X2, X2
	VPSRLDQ $2, X2, X3
	VPMAXSW X3, X2, X2
	VMOVD X2, AX
	ANDL $0x7fff, AX
	SHRL $7, AX
	MOVB AX, (R8)(CX*1)
	CMPL AX, $8
	JB asmall
	VMOVD AX, X15
	VPBROADCASTW X15, Y15        // e
	VPSRLW $7, Y1, Y1            // x
	VPSUBW Y1, Y15, Y2           // d = e - x
	VPADDW Y10, Y2, Y3           // s = d + base
	VPSLLW $8, Y3, Y3
	VPOR avxc<>+128(SB), Y3, Y3  // byte indices: 0x80 (zero) low, s high
	VPSHUFB Y3, Y9, Y3           // 2^(16-s)
	VPSLLW $8, Y0, Y4
	VPAND avxc<>+32(SB), Y4, Y4
	VPOR avxc<>+64(SB), Y4, Y4   // v = significand with its one, << 8
	VPMULHUW Y3, Y4, Y4          // v >> s
	VPSRLW $8, Y4, Y5            // q
	VPAND avxc<>+96(SB), Y4, Y4  // r
	VPCMPGTW avxc<>+128(SB), Y4, Y6 // r > half
	VPCMPEQW avxc<>+128(SB), Y4, Y4 // r == half
	VPAND Y5, Y4, Y4             // ... and q odd (bit 0)
	VPOR Y6, Y4, Y4
	VPAND avxc<>+160(SB), Y4, Y4
	VPADDW Y4, Y5, Y5            // q += round up
	VPMINSW Y12, Y5, Y5          // clamp
	VPCMPGTW Y11, Y2, Y2         // d > dmax
	VPANDN Y5, Y2, Y5
	VPXOR Y6, Y6, Y6
	VPCMPEQW Y6, Y1, Y7          // x == 0
	VPANDN Y5, Y7, Y5
	VPCMPEQW Y6, Y5, Y7          // code is zero
	VPSRAW $15, Y0, Y8           // negative
	VPANDN Y8, Y7, Y8
	VPAND Y13, Y8, Y8
	VPOR Y8, Y5, Y0
	TESTQ BX, BX
	JNZ afour
	VEXTRACTI128 $1, Y0, X1
	VPACKUSWB X1, X0, X0
	VMOVDQU X0, 0(DX)
	JMP anext
afour:
	VPSRLD $12, Y0, Y1
	VPOR Y1, Y0, Y0
	VPAND avxc<>+192(SB), Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPACKSSDW X1, X0, X0
	VPACKUSWB X0, X0, X0
	VMOVQ X0, 0(DX)
	JMP anext
asmall:
	TESTL AX, AX
	JNZ aflag
	VPXOR X0, X0, X0               // e = 0: zeros and denormals, codes 0
	TESTQ BX, BX
	JNZ azero4
	VMOVDQU X0, 0(DX)
	JMP anext
azero4:
	VMOVQ X0, 0(DX)
	JMP anext
aflag:
	BTSQ CX, R10
anext:
	ADDQ R9, SI
	ADDQ R11, DX
	INCQ CX
	CMPQ CX, R12
	JB aloop
	VZEROUPPER
	MOVL R10, small+56(FP)
	RET

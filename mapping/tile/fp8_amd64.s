//go:build amd64 && !purego

#include "textflag.h"

// Transposed BFLOAT8_B / BFLOAT4_B tiles straight from F8_E4M3 codes
// (fp8TilesAVX2; the Go side is in fp8.go and fp8_amd64.go).
//
// A tile is done in two halves: half h (0, 1) is source rows 16h..16h+15,
// i.e. face h (source columns 0..15, the low 128-bit lane of a 32-byte row)
// and face h+2 (columns 16..31, the high lane). In a half, byte lane i of a
// lane is face row i and source row t is position t in that face row, so
// per-face-row quantities (the shared exponent) are per-lane vectors and
// need no horizontal reduction:
//
//  1. M = bytewise max over the 16 rows of m = code & 0x7f. A lane of M
//     equal to 0x7f means a NaN code: stop. h(M) has the face row's largest
//     exponent field e (|h| is non-decreasing in m for a positive scale).
//  2. 0 < e < minTableExp (8) or e = 255: stop. Otherwise store the 32
//     exponents and build, per dword lane, S = s·2^104 · 2^(k-e) with
//     k = 133 (BFLOAT8_B) or 129 (BFLOAT4_B). A face row with e = 0 (all
//     codes zero, a zero scale, or products that round to bfloat16 zeros
//     or subnormals) has all codes 0 (bfpCode of a zero exponent field),
//     as S = 0 gives them (p = 0).
//  3. For each row: decode m to the float32 v = e4m3(m)·2^-104, a normal
//     number for every code (DECODE), then p = v·S: the float32 product
//     e4m3(m)·s, rounded once, times 2^(k-e). Scaling by a power of two
//     commutes with rounding while the product is a normal number; where
//     the table's product is subnormal (below 2^-126) the code is 0 either
//     way, p being at most 2^(k-126-e) <= 1/2. (S is a normal number too:
//     e fixes s·e4m3(M) to within a factor 2 of 2^(e-127), so S lies
//     between about 2^100 and 2^120.) Then c = p·(2^16+1) and
//     h = c - p·2^16 (one FMA, exact): p rounded to bfloat16, ties to even,
//     except that a p that rounds up to a power of two 2^(x+1) gives the
//     bfloat16 below it, 2^(x+1)·(1-2^-8) (TestBF16ByFMA checks both for
//     every float32 significand). That changes no code: in code units the
//     two are 2^j and 2^j - 2^(j-8) with j <= 7 (BFLOAT8_B) or 3
//     (BFLOAT4_B), which round to the same integer (128 and 127.5 both to
//     128, then clamped; 1/2 and less both to 0). VCVTPS2DQ rounds h to the
//     nearest even integer: RNE(|h|·2^(k-e)), the code magnitude of bfpCode
//     (at most 128). The codes are packed back to bytes with signed
//     saturation (128 becomes 127), clamped to 7 for BFLOAT4_B, given their
//     sign where non-zero, and stored to the 512-byte scratch buffer.
//  4. The 16×16 bytes per lane are transposed (unpack ladder) so that each
//     face row's 16 codes are contiguous (for BFLOAT4_B, rows 2t and 2t+1
//     are first merged into nibbles and an 8×16 block is transposed).
//
// DECODE: m' = m + T[min(m, 8)] (VPSHUFB) puts every code's value, as
// float32 bits m'<<20, at e4m3(m)·2^-104: T[8] = 128 adds 16 to the
// exponent of the normal codes (m >= 8), T[1..7] place the subnormal codes
// (m·2^-9) as normal floats, T[0] = 0 keeps zero. m' <= 254.

// Constants: 32-byte vectors, then dwords for VPBROADCASTD.
DATA fp8c<>+0(SB)/8, $0x7f7f7f7f7f7f7f7f   // 0x7f bytes: magnitude mask, "non-zero" adder
DATA fp8c<>+8(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA fp8c<>+16(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA fp8c<>+24(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA fp8c<>+32(SB)/8, $0x8080808080808080  // 0x80 bytes: BFLOAT8_B sign bit
DATA fp8c<>+40(SB)/8, $0x8080808080808080
DATA fp8c<>+48(SB)/8, $0x8080808080808080
DATA fp8c<>+56(SB)/8, $0x8080808080808080
DATA fp8c<>+64(SB)/8, $0x0808080808080808  // 0x08 bytes: BFLOAT4_B sign bit, minTableExp, T index limit
DATA fp8c<>+72(SB)/8, $0x0808080808080808
DATA fp8c<>+80(SB)/8, $0x0808080808080808
DATA fp8c<>+88(SB)/8, $0x0808080808080808
DATA fp8c<>+96(SB)/8, $0x0707070707070707  // 0x07 bytes: BFLOAT4_B limit
DATA fp8c<>+104(SB)/8, $0x0707070707070707
DATA fp8c<>+112(SB)/8, $0x0707070707070707
DATA fp8c<>+120(SB)/8, $0x0707070707070707
DATA fp8c<>+128(SB)/8, $0xf6f6f6f6f6f6f6f6 // 246 = 254 - minTableExp bytes
DATA fp8c<>+136(SB)/8, $0xf6f6f6f6f6f6f6f6
DATA fp8c<>+144(SB)/8, $0xf6f6f6f6f6f6f6f6
DATA fp8c<>+152(SB)/8, $0xf6f6f6f6f6f6f6f6
DATA fp8c<>+160(SB)/8, $0x7f7e7d7c79766f00 // T: 0 111 118 121 124 125 126 127
DATA fp8c<>+168(SB)/8, $0x8080808080808080 //    128 ...
DATA fp8c<>+176(SB)/8, $0x7f7e7d7c79766f00 // (both lanes: VPSHUFB looks up within a lane)
DATA fp8c<>+184(SB)/8, $0x8080808080808080
DATA fp8c<>+192(SB)/8, $0x4780000047800000 // 2^16 (float32)
DATA fp8c<>+200(SB)/8, $0x4780000047800000
DATA fp8c<>+208(SB)/8, $0x4780000047800000
DATA fp8c<>+216(SB)/8, $0x4780000047800000
DATA fp8c<>+224(SB)/4, $0x73800000         // 2^104 (float32)
DATA fp8c<>+228(SB)/4, $0x00000001         // bit 0
DATA fp8c<>+232(SB)/4, $0x00007fff         // rounding bias
DATA fp8c<>+236(SB)/4, $0x47800080         // 2^16+1 (float32)
DATA fp8c<>+240(SB)/4, $0x82000000         // (133+127)<<23 mod 2^32 (BFLOAT8_B)
DATA fp8c<>+244(SB)/4, $0x80000000         // (129+127)<<23 (BFLOAT4_B)
GLOBL fp8c<>(SB), RODATA|NOPTR, $248

// The scale s may be any value 0 <= s < 256 (bits below those of 256):
// s·2^104 is exact, and with s = 0 every face row has e = 0.

// Registers held across a tile:
//   DI dst of the tile, SI first code of the tile, R9 stride, R10 &scales[q],
//   CX q, R11 n, R8 scratch buffer, BX BFLOAT4_B flag, R12 tile bytes,
//   DX half (0, 1), R13 row pointer, AX exponent/face pointer or row offset
//   Y15 zero, Y14 s·2^104 in every lane, Y13 2^16+1 (float32), Y12 0x7f
//   bytes, Y8-Y11 S of the byte groups 0-3, 4-7, 8-11, 12-15 of each lane.

// DECODE turns the magnitudes m in y (bytes) into m' (see above); t is a
// temporary.
#define DECODE(y, t) \
	VPMINUB fp8c<>+64(SB), y, t;   /* min(m, 8) */ \
	VPSHUFB t, Y3, t;              /* T[min(m, 8)], Y3 = T */ \
	VPADDB t, y, y

// WIDEN spreads the 32 bytes m' in src into four vectors of dwords m'<<20
// (float32 e4m3(m)·2^-104) in the order of the unpacks: d0 holds bytes 0-3
// of each lane, d1 bytes 4-7, d2 bytes 8-11, d3 bytes 12-15 (VPACKSSDW
// d1,d0 / d3,d2 and a byte pack restore the byte order). Clobbers Y2, Y3.
#define WIDEN(src, d0, d1, d2, d3) \
	VPUNPCKLBW Y15, src, Y2;       /* words m', bytes 0-7 */ \
	VPUNPCKHBW Y15, src, Y3;       /* words m', bytes 8-15 */ \
	VPSLLW $4, Y2, Y2;             \
	VPSLLW $4, Y3, Y3;             \
	VPUNPCKLWD Y2, Y15, d0;        /* dwords m'<<20 */ \
	VPUNPCKHWD Y2, Y15, d1;        \
	VPUNPCKLWD Y3, Y15, d2;        \
	VPUNPCKHWD Y3, Y15, d3

// CODE turns the floats v in d into code magnitudes RNE(bf16(v·S)) as
// int32, with S the scales of these lanes; t is a temporary.
#define CODE(d, S, t) \
	VMULPS S, d, d;                /* p = e4m3(m)·s·2^(k-e), one rounding */ \
	VMULPS Y13, d, t;              /* c = p·(2^16+1) */ \
	VFNMADD231PS fp8c<>+192(SB), d, t; /* c - p·2^16 = bf16(p) */ \
	VCVTPS2DQ t, d

// EXPF turns the floats v in d into the exponent field of
// h = bf16(v·s·2^104) (as the tables round it: the integer way, which is
// right for subnormal products too); Y1 holds the rounding bias 0x7fff, Y0
// dwords 1, t is a temporary.
#define EXPF(d, t) \
	VMULPS Y14, d, d;              \
	VPSRLD $16, d, t;              \
	VPAND Y0, t, t;                \
	VPADDD Y1, d, d;               \
	VPADDD t, d, d;                \
	VPSRLD $23, d, d

// ROWQ computes the code magnitudes of the row at R13 into Y4 (bytes in
// source column order, at most 127); the raw codes stay in Y0.
#define ROWQ \
	VMOVDQU (R13), Y0;             \
	VMOVDQU fp8c<>+160(SB), Y3;    /* T */ \
	VPAND Y12, Y0, Y1;             /* m = code & 0x7f */ \
	DECODE(Y1, Y2);                \
	WIDEN(Y1, Y4, Y5, Y6, Y7);     \
	CODE(Y4, Y8, Y1);              \
	CODE(Y5, Y9, Y2);              \
	CODE(Y6, Y10, Y3);             \
	CODE(Y7, Y11, Y1);             \
	VPACKSSDW Y5, Y4, Y4;          \
	VPACKSSDW Y7, Y6, Y6;          \
	VPACKSSWB Y6, Y4, Y4           /* bytes, 128 saturated to 127 */

// SIGN8 clamps nothing (the byte pack did) and sets bit 7 of the
// BFLOAT8_B codes in Y4 where the code is not zero and the source code in
// Y0 is negative.
#define SIGN8 \
	VPADDB Y12, Y4, Y1;            /* bit 7 set iff the code is not zero */ \
	VPAND Y0, Y1, Y1;              /* and the source is negative */ \
	VPAND fp8c<>+32(SB), Y1, Y1;   \
	VPOR Y1, Y4, Y4

// SIGN4 clamps the BFLOAT4_B codes in Y4 to 7 and sets their bit 3 where
// the code is not zero and the source code in Y0 is negative.
#define SIGN4 \
	VPMINUB fp8c<>+96(SB), Y4, Y4; \
	VPADDB Y12, Y4, Y1;            /* bit 7 set iff the code is not zero */ \
	VPAND Y0, Y1, Y1;              /* and the source is negative */ \
	VPSRLW $4, Y1, Y1;             /* bit 7 to bit 3 (within each byte) */ \
	VPAND fp8c<>+64(SB), Y1, Y1;   \
	VPOR Y1, Y4, Y4

// ROWS2 encodes the rows at R13 and R13+R9 into the scratch buffer at
// AX and AX+32 (sign: SIGN8 or SIGN4) and steps R13 two rows on.
#define ROWS2(sign) \
	ROWQ;                          \
	sign;                          \
	VMOVDQU Y4, (R8)(AX*1);        \
	ADDQ R9, R13;                  \
	ROWQ;                          \
	sign;                          \
	VMOVDQU Y4, 32(R8)(AX*1);      \
	ADDQ R9, R13

// MAXROW folds the magnitudes of the row at R13 into Y0 and steps to the
// next row.
#define MAXROW \
	VPAND (R13), Y12, Y1;          \
	VPMAXUB Y1, Y0, Y0;            \
	ADDQ R9, R13

// STORE8 stores face row i of both faces of a half (BFLOAT8_B): the low
// lane to AX+off (face h), the high lane 512 bytes on (face h+2).
#define STORE8(y, x, off) \
	VMOVDQU x, off(AX);            \
	VEXTRACTI128 $1, y, off+512(AX)

// STORE4 stores face rows 2j and 2j+1 of both faces (BFLOAT4_B): the low
// lane to AX+off, the high lane 256 bytes on.
#define STORE4(y, x, off) \
	VMOVDQU x, off(AX);            \
	VEXTRACTI128 $1, y, off+256(AX)

// TRANS8 transposes half of the 16×16 byte blocks in the scratch buffer
// (rows Q_t at 32t): with unpack = VPUNPCKLBW the face rows 0-7 of each
// lane, with VPUNPCKHBW face rows 8-15 (off = 128), to AX + off + 16i.
#define TRANS8(unpack, off) \
	VMOVDQU 0(R8), Y0;   unpack 32(R8), Y0, Y0;    /* Y0: words (Q0,Q1)[i] */ \
	VMOVDQU 64(R8), Y1;  unpack 96(R8), Y1, Y1;    /* (Q2,Q3) */ \
	VMOVDQU 128(R8), Y2; unpack 160(R8), Y2, Y2;   \
	VMOVDQU 192(R8), Y3; unpack 224(R8), Y3, Y3;   \
	VMOVDQU 256(R8), Y4; unpack 288(R8), Y4, Y4;   \
	VMOVDQU 320(R8), Y5; unpack 352(R8), Y5, Y5;   \
	VMOVDQU 384(R8), Y6; unpack 416(R8), Y6, Y6;   \
	VMOVDQU 448(R8), Y7; unpack 480(R8), Y7, Y7;   /* (Q14,Q15) */ \
	VPUNPCKLWD Y1, Y0, Y8;  VPUNPCKHWD Y1, Y0, Y1;  /* Y8 rows 0-3, Y1 rows 4-7: t 0-3 */ \
	VPUNPCKLWD Y3, Y2, Y9;  VPUNPCKHWD Y3, Y2, Y3;  /* t 4-7 */ \
	VPUNPCKLWD Y5, Y4, Y10; VPUNPCKHWD Y5, Y4, Y5;  /* t 8-11 */ \
	VPUNPCKLWD Y7, Y6, Y11; VPUNPCKHWD Y7, Y6, Y7;  /* t 12-15 */ \
	VPUNPCKLDQ Y9, Y8, Y0;   VPUNPCKHDQ Y9, Y8, Y8;   /* Y0 rows 0,1 / Y8 rows 2,3: t 0-7 */ \
	VPUNPCKLDQ Y11, Y10, Y2; VPUNPCKHDQ Y11, Y10, Y10; /* Y2 rows 0,1 / Y10 rows 2,3: t 8-15 */ \
	VPUNPCKLDQ Y3, Y1, Y4;   VPUNPCKHDQ Y3, Y1, Y1;   /* Y4 rows 4,5 / Y1 rows 6,7: t 0-7 */ \
	VPUNPCKLDQ Y7, Y5, Y6;   VPUNPCKHDQ Y7, Y5, Y5;   /* Y6 rows 4,5 / Y5 rows 6,7: t 8-15 */ \
	VPUNPCKLQDQ Y2, Y0, Y9;   STORE8(Y9, X9, off+0);   \
	VPUNPCKHQDQ Y2, Y0, Y11;  STORE8(Y11, X11, off+16); \
	VPUNPCKLQDQ Y10, Y8, Y3;  STORE8(Y3, X3, off+32);  \
	VPUNPCKHQDQ Y10, Y8, Y7;  STORE8(Y7, X7, off+48);  \
	VPUNPCKLQDQ Y6, Y4, Y9;   STORE8(Y9, X9, off+64);  \
	VPUNPCKHQDQ Y6, Y4, Y11;  STORE8(Y11, X11, off+80); \
	VPUNPCKLQDQ Y5, Y1, Y3;   STORE8(Y3, X3, off+96);  \
	VPUNPCKHQDQ Y5, Y1, Y7;   STORE8(Y7, X7, off+112)

// TRANS4 finishes the BFLOAT4_B transpose of 8 face rows of each lane,
// given words (P0,P1), (P2,P3), (P4,P5), (P6,P7) of those rows in a, b, c,
// d: dwords P0-P3 and P4-P7 of the first 4 rows go to lo1 and lo2, of the
// last 4 to a and c; the face rows (8 bytes P0-P7 each), two per 16 bytes,
// are stored at AX+off, +16, +32, +48 (STORE4) through Y9 and Y11.
#define TRANS4(a, b, c, d, lo1, lo2, off) \
	VPUNPCKLWD b, a, lo1;          \
	VPUNPCKHWD b, a, a;            \
	VPUNPCKLWD d, c, lo2;          \
	VPUNPCKHWD d, c, c;            \
	VPUNPCKLDQ lo2, lo1, Y9;  STORE4(Y9, X9, off+0);   /* rows 0, 1 */ \
	VPUNPCKHDQ lo2, lo1, Y11; STORE4(Y11, X11, off+16); /* rows 2, 3 */ \
	VPUNPCKLDQ c, a, Y9;      STORE4(Y9, X9, off+32);  /* rows 4, 5 */ \
	VPUNPCKHDQ c, a, Y11;     STORE4(Y11, X11, off+48)  /* rows 6, 7 */

// PAIR4 merges scratch rows 2t (low nibbles) and 2t+1 (high nibbles) into
// y; a and b are their byte offsets.
#define PAIR4(a, b, y) \
	VMOVDQU b(R8), y;              \
	VPSLLW $4, y, y;               /* codes < 16: nothing crosses a byte */ \
	VPOR a(R8), y, y

// func fp8TilesAVX2(dst *byte, src *byte, stride uintptr, scales *float32, n uintptr, buf *[512]byte, bfp4 bool) uintptr
TEXT ·fp8TilesAVX2(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R9
	MOVQ scales+24(FP), R10
	MOVQ n+32(FP), R11
	MOVQ buf+40(FP), R8
	MOVBQZX bfp4+48(FP), BX
	MOVQ $1088, R12                // BFP8TileBytes
	TESTQ BX, BX
	JZ consts
	MOVQ $576, R12                 // BFP4TileBytes
consts:
	VPXOR Y15, Y15, Y15
	VBROADCASTSS fp8c<>+236(SB), Y13
	VMOVDQU fp8c<>+0(SB), Y12
	XORQ CX, CX
	CMPQ CX, R11
	JAE done

tile:
	VBROADCASTSS (R10), Y14
	VBROADCASTSS fp8c<>+224(SB), Y1
	VMULPS Y1, Y14, Y14            // s·2^104, exact for 0 < s < 256
	XORQ DX, DX

half:
	// R13 = first source row of the half.
	MOVQ R9, R13
	SHLQ $4, R13
	IMULQ DX, R13
	ADDQ SI, R13

	// 1. Largest magnitude of each face row; NaN check.
	VPXOR Y0, Y0, Y0
	MAXROW; MAXROW; MAXROW; MAXROW
	MAXROW; MAXROW; MAXROW; MAXROW
	MAXROW; MAXROW; MAXROW; MAXROW
	MAXROW; MAXROW; MAXROW; MAXROW
	VPCMPEQB Y12, Y0, Y1           // magnitude 0x7f: a NaN code
	VPMOVMSKB Y1, AX
	TESTL AX, AX
	JNZ stop

	// 2. Shared exponents e = exponent field of h(M).
	VMOVDQU fp8c<>+160(SB), Y3
	DECODE(Y0, Y1)
	WIDEN(Y0, Y4, Y5, Y6, Y7)
	VPBROADCASTD fp8c<>+228(SB), Y0
	VPBROADCASTD fp8c<>+232(SB), Y1
	EXPF(Y4, Y2)
	EXPF(Y5, Y3)
	EXPF(Y6, Y2)
	EXPF(Y7, Y3)
	VPACKSSDW Y5, Y4, Y0           // keep Y4-Y7 (dwords) for S
	VPACKSSDW Y7, Y6, Y1
	VPACKUSWB Y1, Y0, Y0           // Y0: e of face row i in byte i (per lane)
	VPSUBB fp8c<>+64(SB), Y0, Y1   // e - 8: in [0, 246] iff 8 <= e <= 254
	VPMINUB fp8c<>+128(SB), Y1, Y2
	VPCMPEQB Y1, Y2, Y2
	VPCMPEQB Y15, Y0, Y3           // or e = 0: every code of the row is 0
	VPOR Y3, Y2, Y2
	VPMOVMSKB Y2, AX
	CMPL AX, $0xffffffff
	JNE stop
	MOVQ DX, AX
	SHLQ $4, AX
	ADDQ DI, AX                    // AX = exponents of face h
	VMOVDQU X0, 0(AX)
	VEXTRACTI128 $1, Y0, 32(AX)    // face h+2
	VPBROADCASTD fp8c<>+240(SB), Y1
	TESTQ BX, BX
	JZ svec
	VPBROADCASTD fp8c<>+244(SB), Y1
svec:
	VPCMPEQD Y15, Y4, Y2           // e = 0
	VPSLLD $23, Y4, Y4
	VPSUBD Y4, Y1, Y4              // 2^(k-e): (k+127-e)<<23, 6 <= k+127-e <= 252
	VMULPS Y14, Y4, Y8             // S = s·2^104·2^(k-e), exact (a normal number)
	VPANDN Y8, Y2, Y8              // S = 0 where e = 0: codes 0
	VPCMPEQD Y15, Y5, Y2
	VPSLLD $23, Y5, Y5
	VPSUBD Y5, Y1, Y5
	VMULPS Y14, Y5, Y9
	VPANDN Y9, Y2, Y9
	VPCMPEQD Y15, Y6, Y2
	VPSLLD $23, Y6, Y6
	VPSUBD Y6, Y1, Y6
	VMULPS Y14, Y6, Y10
	VPANDN Y10, Y2, Y10
	VPCMPEQD Y15, Y7, Y2
	VPSLLD $23, Y7, Y7
	VPSUBD Y7, Y1, Y7
	VMULPS Y14, Y7, Y11
	VPANDN Y11, Y2, Y11

	// 3. Codes of the 16 rows into the scratch buffer (AX: byte offset).
	MOVQ R9, R13
	SHLQ $4, R13
	IMULQ DX, R13
	ADDQ SI, R13
	XORQ AX, AX
	TESTQ BX, BX
	JNZ rows4

rows8:
	ROWS2(SIGN8)
	ADDQ $64, AX
	CMPQ AX, $512
	JB rows8

	// 4. Transpose into the faces: AX = face h codes, face h+2 512 on.
	MOVQ DX, AX
	SHLQ $8, AX
	LEAQ 64(DI)(AX*1), AX
	TRANS8(VPUNPCKLBW, 0)
	TRANS8(VPUNPCKHBW, 128)
	JMP nexthalf

rows4:
	ROWS2(SIGN4)
	ADDQ $64, AX
	CMPQ AX, $512
	JB rows4

	// 4. Nibbles P_t = Q_2t | Q_2t+1<<4, then an 8×16 transpose: each
	// output vector lane holds face rows 2j and 2j+1 (8 bytes each).
	MOVQ DX, AX
	SHLQ $7, AX
	LEAQ 64(DI)(AX*1), AX          // AX = face h codes, face h+2 256 on
	PAIR4(0, 32, Y0)
	PAIR4(64, 96, Y1)
	PAIR4(128, 160, Y2)
	PAIR4(192, 224, Y3)
	PAIR4(256, 288, Y4)
	PAIR4(320, 352, Y5)
	PAIR4(384, 416, Y6)
	PAIR4(448, 480, Y7)
	VPUNPCKLBW Y1, Y0, Y8          // rows 0-7: words (P0,P1)[i]
	VPUNPCKHBW Y1, Y0, Y1          // rows 8-15
	VPUNPCKLBW Y3, Y2, Y9          // (P2,P3)
	VPUNPCKHBW Y3, Y2, Y3
	VPUNPCKLBW Y5, Y4, Y10         // (P4,P5)
	VPUNPCKHBW Y5, Y4, Y5
	VPUNPCKLBW Y7, Y6, Y11         // (P6,P7)
	VPUNPCKHBW Y7, Y6, Y7
	TRANS4(Y8, Y9, Y10, Y11, Y0, Y2, 0) // rows 0-7
	TRANS4(Y1, Y3, Y5, Y7, Y4, Y6, 64)  // rows 8-15

nexthalf:
	INCQ DX
	CMPQ DX, $2
	JB half
	ADDQ R12, DI
	ADDQ $32, SI
	ADDQ $4, R10
	INCQ CX
	CMPQ CX, R11
	JB tile

done:
stop:
	VZEROUPPER
	MOVQ CX, ret+56(FP)
	RET

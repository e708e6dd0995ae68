package main

import (
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// fp8_amd64.s: transposed BFLOAT8_B / BFLOAT4_B tiles straight from F8_E4M3
// codes (fp8TilesAVX2; the Go side is in fp8.go and fp8_amd64.go).
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
//     number for every code (decode), then p = v·S: the float32 product
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
// decode: m' = m + T[min(m, 8)] (VPSHUFB) puts every code's value, as
// float32 bits m'<<20, at e4m3(m)·2^-104: T[8] = 128 adds 16 to the
// exponent of the normal codes (m >= 8), T[1..7] place the subnormal codes
// (m·2^-9) as normal floats, T[0] = 0 keeps zero. m' <= 254.
//
// The scale s may be any value 0 <= s < 256 (bits below those of 256):
// s·2^104 is exact, and with s = 0 every face row has e = 0.
//
// Registers held across a tile:
//
//	DI dst of the tile, SI first code of the tile, R9 stride, R10 &scales[q],
//	CX q, R11 n, R8 scratch buffer, BX BFLOAT4_B flag, R12 tile bytes,
//	DX half (0, 1), R13 row pointer, AX exponent/face pointer or row offset
//	Y15 zero, Y14 s·2^104 in every lane, Y13 2^16+1 (float32), Y12 0x7f
//	bytes, Y8-Y11 S of the byte groups 0-3, 4-7, 8-11, 12-15 of each lane.

// fp8Consts are the addresses of fp8_amd64.s's constants (the data symbol
// fp8c): 32-byte vectors, then dwords for VPBROADCASTD.
type fp8Consts struct {
	mask7f  operand.Mem // 0x7f bytes: magnitude mask, "non-zero" adder
	sign8   operand.Mem // 0x80 bytes: BFLOAT8_B sign bit
	b08     operand.Mem // 0x08 bytes: BFLOAT4_B sign bit, minTableExp, T index limit
	lim4    operand.Mem // 0x07 bytes: BFLOAT4_B limit
	b246    operand.Mem // 246 = 254 - minTableExp bytes
	tab     operand.Mem // T: 0 111 118 121 124 125 126 127 128 ..., both lanes (VPSHUFB looks up within a lane)
	f2p16   operand.Mem // 2^16 (float32)
	f2p104  operand.Mem // 2^104 (float32)
	bit0    operand.Mem // bit 0
	bias    operand.Mem // rounding bias
	f2p16p1 operand.Mem // 2^16+1 (float32)
	k8      operand.Mem // (133+127)<<23 mod 2^32 (BFLOAT8_B)
	k4      operand.Mem // (129+127)<<23 (BFLOAT4_B)
}

// fp8 builds fp8_amd64.s.
type fp8 struct {
	gen
	c fp8Consts
}

func fp8File(g gen) {
	t := g.newTable("fp8c")
	k := fp8{gen: g, c: fp8Consts{
		mask7f:  t.add(qwords(0x7f7f7f7f7f7f7f7f, 4)...),
		sign8:   t.add(qwords(0x8080808080808080, 4)...),
		b08:     t.add(qwords(0x0808080808080808, 4)...),
		lim4:    t.add(qwords(0x0707070707070707, 4)...),
		b246:    t.add(qwords(0xf6f6f6f6f6f6f6f6, 4)...),
		tab:     t.add(operand.U64(0x7f7e7d7c79766f00), operand.U64(0x8080808080808080), operand.U64(0x7f7e7d7c79766f00), operand.U64(0x8080808080808080)),
		f2p16:   t.add(qwords(0x4780000047800000, 4)...),
		f2p104:  t.add(operand.U32(0x73800000)),
		bit0:    t.add(operand.U32(0x00000001)),
		bias:    t.add(operand.U32(0x00007fff)),
		f2p16p1: t.add(operand.U32(0x47800080)),
		k8:      t.add(operand.U32(0x82000000)),
		k4:      t.add(operand.U32(0x80000000)),
	}}
	k.tiles()
}

// decode turns the magnitudes m in y (bytes) into m' (see above); t is a
// temporary, Y3 holds T.
func (k fp8) decode(y, t reg.Register) {
	k.VPMINUB(k.c.b08, y, t) // min(m, 8)
	k.VPSHUFB(t, reg.Y3, t)  // T[min(m, 8)]
	k.VPADDB(t, y, y)
}

// widen spreads the 32 bytes m' in src into four vectors of dwords m'<<20
// (float32 e4m3(m)·2^-104) in the order of the unpacks: d0 holds bytes 0-3
// of each lane, d1 bytes 4-7, d2 bytes 8-11, d3 bytes 12-15 (VPACKSSDW
// d1,d0 / d3,d2 and a byte pack restore the byte order). Clobbers Y2, Y3.
func (k fp8) widen(src, d0, d1, d2, d3 reg.Register) {
	k.VPUNPCKLBW(reg.Y15, src, reg.Y2) // words m', bytes 0-7
	k.VPUNPCKHBW(reg.Y15, src, reg.Y3) // words m', bytes 8-15
	k.VPSLLW(operand.U8(4), reg.Y2, reg.Y2)
	k.VPSLLW(operand.U8(4), reg.Y3, reg.Y3)
	k.VPUNPCKLWD(reg.Y2, reg.Y15, d0) // dwords m'<<20
	k.VPUNPCKHWD(reg.Y2, reg.Y15, d1)
	k.VPUNPCKLWD(reg.Y3, reg.Y15, d2)
	k.VPUNPCKHWD(reg.Y3, reg.Y15, d3)
}

// code turns the floats v in d into code magnitudes RNE(bf16(v·S)) as
// int32, with S the scales of these lanes; t is a temporary.
func (k fp8) code(d, s, t reg.Register) {
	k.VMULPS(s, d, d)               // p = e4m3(m)·s·2^(k-e), one rounding
	k.VMULPS(reg.Y13, d, t)         // c = p·(2^16+1)
	k.VFNMADD231PS(k.c.f2p16, d, t) // c - p·2^16 = bf16(p)
	k.VCVTPS2DQ(t, d)
}

// expf turns the floats v in d into the exponent field of
// h = bf16(v·s·2^104) (as the tables round it: the integer way, which is
// right for subnormal products too); Y1 holds the rounding bias 0x7fff, Y0
// dwords 1, t is a temporary.
func (k fp8) expf(d, t reg.Register) {
	k.VMULPS(reg.Y14, d, d)
	k.VPSRLD(operand.U8(16), d, t)
	k.VPAND(reg.Y0, t, t)
	k.VPADDD(reg.Y1, d, d)
	k.VPADDD(t, d, d)
	k.VPSRLD(operand.U8(23), d, d)
}

// rowq computes the code magnitudes of the row at R13 into Y4 (bytes in
// source column order, at most 127); the raw codes stay in Y0.
func (k fp8) rowq() {
	k.VMOVDQU(mem(reg.R13, 0), reg.Y0)
	k.VMOVDQU(k.c.tab, reg.Y3)
	k.VPAND(reg.Y12, reg.Y0, reg.Y1) // m = code & 0x7f
	k.decode(reg.Y1, reg.Y2)
	k.widen(reg.Y1, reg.Y4, reg.Y5, reg.Y6, reg.Y7)
	k.code(reg.Y4, reg.Y8, reg.Y1)
	k.code(reg.Y5, reg.Y9, reg.Y2)
	k.code(reg.Y6, reg.Y10, reg.Y3)
	k.code(reg.Y7, reg.Y11, reg.Y1)
	k.VPACKSSDW(reg.Y5, reg.Y4, reg.Y4)
	k.VPACKSSDW(reg.Y7, reg.Y6, reg.Y6)
	k.VPACKSSWB(reg.Y6, reg.Y4, reg.Y4) // bytes, 128 saturated to 127
}

// sign8 clamps nothing (the byte pack did) and sets bit 7 of the BFLOAT8_B
// codes in Y4 where the code is not zero and the source code in Y0 is
// negative.
func (k fp8) sign8() {
	k.VPADDB(reg.Y12, reg.Y4, reg.Y1) // bit 7 set iff the code is not zero
	k.VPAND(reg.Y0, reg.Y1, reg.Y1)   // and the source is negative
	k.VPAND(k.c.sign8, reg.Y1, reg.Y1)
	k.VPOR(reg.Y1, reg.Y4, reg.Y4)
}

// sign4 clamps the BFLOAT4_B codes in Y4 to 7 and sets their bit 3 where
// the code is not zero and the source code in Y0 is negative.
func (k fp8) sign4() {
	k.VPMINUB(k.c.lim4, reg.Y4, reg.Y4)
	k.VPADDB(reg.Y12, reg.Y4, reg.Y1)       // bit 7 set iff the code is not zero
	k.VPAND(reg.Y0, reg.Y1, reg.Y1)         // and the source is negative
	k.VPSRLW(operand.U8(4), reg.Y1, reg.Y1) // bit 7 to bit 3 (within each byte)
	k.VPAND(k.c.b08, reg.Y1, reg.Y1)
	k.VPOR(reg.Y1, reg.Y4, reg.Y4)
}

// rows2 encodes the rows at R13 and R13+R9 into the scratch buffer at AX
// and AX+32 (sign: sign8 or sign4) and steps R13 two rows on.
func (k fp8) rows2(sign func()) {
	k.rowq()
	sign()
	k.VMOVDQU(reg.Y4, idx(reg.R8, reg.RAX, 0))
	k.ADDQ(reg.R9, reg.R13)
	k.rowq()
	sign()
	k.VMOVDQU(reg.Y4, idx(reg.R8, reg.RAX, 32))
	k.ADDQ(reg.R9, reg.R13)
}

// maxrow folds the magnitudes of the row at R13 into Y0 and steps to the
// next row.
func (k fp8) maxrow() {
	k.VPAND(mem(reg.R13, 0), reg.Y12, reg.Y1)
	k.VPMAXUB(reg.Y1, reg.Y0, reg.Y0)
	k.ADDQ(reg.R9, reg.R13)
}

// store stores face row i of both faces of a half: the low lane of y to
// AX+off, the high lane hi bytes on (512 for BFLOAT8_B: face h+2; 256 for
// BFLOAT4_B, where a 16-byte lane holds face rows 2j and 2j+1).
func (k fp8) store(y reg.Register, off, hi int) {
	k.VMOVDQU(y.(reg.VecPhysical).AsX(), mem(reg.RAX, off))
	k.VEXTRACTI128(operand.U8(1), y, mem(reg.RAX, off+hi))
}

// trans8 transposes half of the 16×16 byte blocks in the scratch buffer
// (rows Q_t at 32t): with unpack = VPUNPCKLBW the face rows 0-7 of each
// lane, with VPUNPCKHBW face rows 8-15 (off = 128), to AX + off + 16i.
func (k fp8) trans8(unpack func(...operand.Op), off int) {
	for i := 0; i < 8; i++ { // Y_i: words (Q_2i,Q_2i+1)[i]
		k.VMOVDQU(mem(reg.R8, 64*i), ymm(i))
		unpack(mem(reg.R8, 64*i+32), ymm(i), ymm(i))
	}
	k.VPUNPCKLWD(reg.Y1, reg.Y0, reg.Y8) // Y8 rows 0-3, Y1 rows 4-7: t 0-3
	k.VPUNPCKHWD(reg.Y1, reg.Y0, reg.Y1)
	k.VPUNPCKLWD(reg.Y3, reg.Y2, reg.Y9) // t 4-7
	k.VPUNPCKHWD(reg.Y3, reg.Y2, reg.Y3)
	k.VPUNPCKLWD(reg.Y5, reg.Y4, reg.Y10) // t 8-11
	k.VPUNPCKHWD(reg.Y5, reg.Y4, reg.Y5)
	k.VPUNPCKLWD(reg.Y7, reg.Y6, reg.Y11) // t 12-15
	k.VPUNPCKHWD(reg.Y7, reg.Y6, reg.Y7)
	k.VPUNPCKLDQ(reg.Y9, reg.Y8, reg.Y0) // Y0 rows 0,1 / Y8 rows 2,3: t 0-7
	k.VPUNPCKHDQ(reg.Y9, reg.Y8, reg.Y8)
	k.VPUNPCKLDQ(reg.Y11, reg.Y10, reg.Y2) // Y2 rows 0,1 / Y10 rows 2,3: t 8-15
	k.VPUNPCKHDQ(reg.Y11, reg.Y10, reg.Y10)
	k.VPUNPCKLDQ(reg.Y3, reg.Y1, reg.Y4) // Y4 rows 4,5 / Y1 rows 6,7: t 0-7
	k.VPUNPCKHDQ(reg.Y3, reg.Y1, reg.Y1)
	k.VPUNPCKLDQ(reg.Y7, reg.Y5, reg.Y6) // Y6 rows 4,5 / Y5 rows 6,7: t 8-15
	k.VPUNPCKHDQ(reg.Y7, reg.Y5, reg.Y5)
	k.VPUNPCKLQDQ(reg.Y2, reg.Y0, reg.Y9)
	k.store(reg.Y9, off+0, 512)
	k.VPUNPCKHQDQ(reg.Y2, reg.Y0, reg.Y11)
	k.store(reg.Y11, off+16, 512)
	k.VPUNPCKLQDQ(reg.Y10, reg.Y8, reg.Y3)
	k.store(reg.Y3, off+32, 512)
	k.VPUNPCKHQDQ(reg.Y10, reg.Y8, reg.Y7)
	k.store(reg.Y7, off+48, 512)
	k.VPUNPCKLQDQ(reg.Y6, reg.Y4, reg.Y9)
	k.store(reg.Y9, off+64, 512)
	k.VPUNPCKHQDQ(reg.Y6, reg.Y4, reg.Y11)
	k.store(reg.Y11, off+80, 512)
	k.VPUNPCKLQDQ(reg.Y5, reg.Y1, reg.Y3)
	k.store(reg.Y3, off+96, 512)
	k.VPUNPCKHQDQ(reg.Y5, reg.Y1, reg.Y7)
	k.store(reg.Y7, off+112, 512)
}

// trans4 finishes the BFLOAT4_B transpose of 8 face rows of each lane,
// given words (P0,P1), (P2,P3), (P4,P5), (P6,P7) of those rows in a, b, c,
// d: dwords P0-P3 and P4-P7 of the first 4 rows go to lo1 and lo2, of the
// last 4 to a and c; the face rows (8 bytes P0-P7 each), two per 16 bytes,
// are stored at AX+off, +16, +32, +48 through Y9 and Y11.
func (k fp8) trans4(a, b, c, d, lo1, lo2 reg.Register, off int) {
	k.VPUNPCKLWD(b, a, lo1)
	k.VPUNPCKHWD(b, a, a)
	k.VPUNPCKLWD(d, c, lo2)
	k.VPUNPCKHWD(d, c, c)
	k.VPUNPCKLDQ(lo2, lo1, reg.Y9) // rows 0, 1
	k.store(reg.Y9, off+0, 256)
	k.VPUNPCKHDQ(lo2, lo1, reg.Y11) // rows 2, 3
	k.store(reg.Y11, off+16, 256)
	k.VPUNPCKLDQ(c, a, reg.Y9) // rows 4, 5
	k.store(reg.Y9, off+32, 256)
	k.VPUNPCKHDQ(c, a, reg.Y11) // rows 6, 7
	k.store(reg.Y11, off+48, 256)
}

// pair4 merges scratch rows 2t (low nibbles) and 2t+1 (high nibbles) into
// y; a and b are their byte offsets.
func (k fp8) pair4(a, b int, y reg.Register) {
	k.VMOVDQU(mem(reg.R8, b), y)
	k.VPSLLW(operand.U8(4), y, y) // codes < 16: nothing crosses a byte
	k.VPOR(mem(reg.R8, a), y, y)
}

// tiles writes fp8TilesAVX2 (declared in fp8_amd64.go).
func (k fp8) tiles() {
	k.Text("fp8TilesAVX2", "func(dst *byte, src *byte, stride uintptr, scales *float32, n uintptr, buf *[512]byte, bfp4 bool) uintptr")
	k.MOVQ(k.Arg("dst"), reg.RDI)
	k.MOVQ(k.Arg("src"), reg.RSI)
	k.MOVQ(k.Arg("stride"), reg.R9)
	k.MOVQ(k.Arg("scales"), reg.R10)
	k.MOVQ(k.Arg("n"), reg.R11)
	k.MOVQ(k.Arg("buf"), reg.R8)
	k.MOVBQZX(k.Arg("bfp4"), reg.RBX)
	k.MOVQ(operand.U32(1088), reg.R12) // BFP8TileBytes
	k.TESTQ(reg.RBX, reg.RBX)
	k.JZ(label("consts"))
	k.MOVQ(operand.U32(576), reg.R12) // BFP4TileBytes

	k.Label("consts")
	k.VPXOR(reg.Y15, reg.Y15, reg.Y15)
	k.VBROADCASTSS(k.c.f2p16p1, reg.Y13)
	k.VMOVDQU(k.c.mask7f, reg.Y12)
	k.XORQ(reg.RCX, reg.RCX)
	k.CMPQ(reg.RCX, reg.R11)
	k.JAE(label("done"))

	k.Label("tile")
	k.VBROADCASTSS(mem(reg.R10, 0), reg.Y14)
	k.VBROADCASTSS(k.c.f2p104, reg.Y1)
	k.VMULPS(reg.Y1, reg.Y14, reg.Y14) // s·2^104, exact for 0 < s < 256
	k.XORQ(reg.RDX, reg.RDX)

	k.Label("half")
	k.Comment("R13 = first source row of the half.")
	k.firstRow()

	k.Comment("1. Largest magnitude of each face row; NaN check.")
	k.VPXOR(reg.Y0, reg.Y0, reg.Y0)
	for i := 0; i < 16; i++ {
		k.maxrow()
	}
	k.VPCMPEQB(reg.Y12, reg.Y0, reg.Y1) // magnitude 0x7f: a NaN code
	k.VPMOVMSKB(reg.Y1, reg.EAX)
	k.TESTL(reg.EAX, reg.EAX)
	k.JNZ(label("stop"))

	k.Comment("2. Shared exponents e = exponent field of h(M).")
	k.VMOVDQU(k.c.tab, reg.Y3)
	k.decode(reg.Y0, reg.Y1)
	k.widen(reg.Y0, reg.Y4, reg.Y5, reg.Y6, reg.Y7)
	k.VPBROADCASTD(k.c.bit0, reg.Y0)
	k.VPBROADCASTD(k.c.bias, reg.Y1)
	k.expf(reg.Y4, reg.Y2)
	k.expf(reg.Y5, reg.Y3)
	k.expf(reg.Y6, reg.Y2)
	k.expf(reg.Y7, reg.Y3)
	k.VPACKSSDW(reg.Y5, reg.Y4, reg.Y0) // keep Y4-Y7 (dwords) for S
	k.VPACKSSDW(reg.Y7, reg.Y6, reg.Y1)
	k.VPACKUSWB(reg.Y1, reg.Y0, reg.Y0) // Y0: e of face row i in byte i (per lane)
	k.VPSUBB(k.c.b08, reg.Y0, reg.Y1)   // e - 8: in [0, 246] iff 8 <= e <= 254
	k.VPMINUB(k.c.b246, reg.Y1, reg.Y2)
	k.VPCMPEQB(reg.Y1, reg.Y2, reg.Y2)
	k.VPCMPEQB(reg.Y15, reg.Y0, reg.Y3) // or e = 0: every code of the row is 0
	k.VPOR(reg.Y3, reg.Y2, reg.Y2)
	k.VPMOVMSKB(reg.Y2, reg.EAX)
	k.CMPL(reg.EAX, operand.U32(0xffffffff))
	k.JNE(label("stop"))
	k.MOVQ(reg.RDX, reg.RAX)
	k.SHLQ(operand.U8(4), reg.RAX)
	k.ADDQ(reg.RDI, reg.RAX) // AX = exponents of face h
	k.VMOVDQU(reg.X0, mem(reg.RAX, 0))
	k.VEXTRACTI128(operand.U8(1), reg.Y0, mem(reg.RAX, 32)) // face h+2
	k.VPBROADCASTD(k.c.k8, reg.Y1)
	k.TESTQ(reg.RBX, reg.RBX)
	k.JZ(label("svec"))
	k.VPBROADCASTD(k.c.k4, reg.Y1)

	k.Label("svec")
	// S = s·2^104·2^(k-e) per group, from the exponents in Y4-Y7 into Y8-Y11.
	for i, e := range []reg.Register{reg.Y4, reg.Y5, reg.Y6, reg.Y7} {
		s := ymm(8 + i)
		k.VPCMPEQD(reg.Y15, e, reg.Y2) // e = 0
		k.VPSLLD(operand.U8(23), e, e)
		k.VPSUBD(e, reg.Y1, e)  // 2^(k-e): (k+127-e)<<23, 6 <= k+127-e <= 252
		k.VMULPS(reg.Y14, e, s) // S = s·2^104·2^(k-e), exact (a normal number)
		k.VPANDN(s, reg.Y2, s)  // S = 0 where e = 0: codes 0
	}

	k.Comment("3. Codes of the 16 rows into the scratch buffer (AX: byte offset).")
	k.firstRow()
	k.XORQ(reg.RAX, reg.RAX)
	k.TESTQ(reg.RBX, reg.RBX)
	k.JNZ(label("rows4"))

	k.Label("rows8")
	k.rows2(k.sign8)
	k.ADDQ(operand.U8(64), reg.RAX)
	k.CMPQ(reg.RAX, operand.U32(512))
	k.JB(label("rows8"))

	k.Comment("4. Transpose into the faces: AX = face h codes, face h+2 512 on.")
	k.MOVQ(reg.RDX, reg.RAX)
	k.SHLQ(operand.U8(8), reg.RAX)
	k.LEAQ(idx(reg.RDI, reg.RAX, 64), reg.RAX)
	k.trans8(k.VPUNPCKLBW, 0)
	k.trans8(k.VPUNPCKHBW, 128)
	k.JMP(label("nexthalf"))

	k.Label("rows4")
	k.rows2(k.sign4)
	k.ADDQ(operand.U8(64), reg.RAX)
	k.CMPQ(reg.RAX, operand.U32(512))
	k.JB(label("rows4"))

	k.Comment(
		"4. Nibbles P_t = Q_2t | Q_2t+1<<4, then an 8×16 transpose: each",
		"output vector lane holds face rows 2j and 2j+1 (8 bytes each).",
	)
	k.MOVQ(reg.RDX, reg.RAX)
	k.SHLQ(operand.U8(7), reg.RAX)
	k.LEAQ(idx(reg.RDI, reg.RAX, 64), reg.RAX) // AX = face h codes, face h+2 256 on
	for i := 0; i < 8; i++ {
		k.pair4(64*i, 64*i+32, ymm(i))
	}
	k.VPUNPCKLBW(reg.Y1, reg.Y0, reg.Y8) // rows 0-7: words (P0,P1)[i]
	k.VPUNPCKHBW(reg.Y1, reg.Y0, reg.Y1) // rows 8-15
	k.VPUNPCKLBW(reg.Y3, reg.Y2, reg.Y9) // (P2,P3)
	k.VPUNPCKHBW(reg.Y3, reg.Y2, reg.Y3)
	k.VPUNPCKLBW(reg.Y5, reg.Y4, reg.Y10) // (P4,P5)
	k.VPUNPCKHBW(reg.Y5, reg.Y4, reg.Y5)
	k.VPUNPCKLBW(reg.Y7, reg.Y6, reg.Y11) // (P6,P7)
	k.VPUNPCKHBW(reg.Y7, reg.Y6, reg.Y7)
	k.trans4(reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y0, reg.Y2, 0) // rows 0-7
	k.trans4(reg.Y1, reg.Y3, reg.Y5, reg.Y7, reg.Y4, reg.Y6, 64)  // rows 8-15

	k.Label("nexthalf")
	k.INCQ(reg.RDX)
	k.CMPQ(reg.RDX, operand.U8(2))
	k.JB(label("half"))
	k.ADDQ(reg.R12, reg.RDI)
	k.ADDQ(operand.U8(32), reg.RSI)
	k.ADDQ(operand.U8(4), reg.R10)
	k.INCQ(reg.RCX)
	k.CMPQ(reg.RCX, reg.R11)
	k.JB(label("tile"))

	k.Label("done")
	k.Label("stop")
	k.VZEROUPPER()
	k.MOVQ(reg.RCX, k.Ret(0))
	k.RET()
}

// firstRow sets R13 to the first source row of half DX: SI + 16·DX·R9.
func (k fp8) firstRow() {
	k.MOVQ(reg.R9, reg.R13)
	k.SHLQ(operand.U8(4), reg.R13)
	k.IMULQ(reg.RDX, reg.R13)
	k.ADDQ(reg.RSI, reg.R13)
}

// ymm is the register Y<i>.
func ymm(i int) reg.Register {
	return []reg.Register{
		reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15,
	}[i]
}

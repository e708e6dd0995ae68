//go:build amd64 && !purego

package tile

// bfpParams are the per-format constants of bfpFaceRowSSE2, each in the
// eight 16-bit lanes of a vector.
type bfpParams struct {
	base, dmax, limit, sign [8]uint16
}

var (
	bfp8Params = bfpParams{base: splat(1), dmax: splat(7), limit: splat(127), sign: splat(0x80)}
	bfp4Params = bfpParams{base: splat(5), dmax: splat(3), limit: splat(7), sign: splat(0x08)}
)

func splat(v uint16) (a [8]uint16) {
	for i := range a {
		a[i] = v
	}
	return a
}

// bfpFaceRowSSE2 encodes a face row of bfloat16 bits with SSE2 (part of
// every amd64 CPU): the codes RNE(significand / 2^(d+base)), clamped, zero
// for d > dmax or a zero exponent, the sign where the code is not zero —
// the codes of the tables (TestFaceRowSSE2MatchesGo checks every value
// under every shared exponent). It writes 16 BFLOAT8_B codes, or with
// nibbles 8 bytes of BFLOAT4_B codes, and returns the shared exponent; ok
// is false, and nothing is written, when the exponent is below
// minTableExp.
//
//go:noescape
func bfpFaceRowSSE2(src *[FaceDim]uint16, out *byte, p *bfpParams, nibbles bool) (e uint32, ok bool)

func bfp8FaceRowBF16(out *[FaceDim]byte, src *[FaceDim]uint16) byte {
	if e, ok := bfpFaceRowSSE2(src, &out[0], &bfp8Params, false); ok {
		return byte(e)
	}
	return bfp8FaceRowBF16Go(out, src)
}

func bfp4FaceRowBF16(out *[FaceDim / 2]byte, src *[FaceDim]uint16) byte {
	if e, ok := bfpFaceRowSSE2(src, &out[0], &bfp4Params, true); ok {
		return byte(e)
	}
	return bfp4FaceRowBF16Go(out, src)
}

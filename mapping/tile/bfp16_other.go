//go:build !amd64 || purego

package tile

func bfp8FaceRowBF16(out *[FaceDim]byte, src *[FaceDim]uint16) byte {
	return bfp8FaceRowBF16Go(out, src)
}

func bfp4FaceRowBF16(out *[FaceDim / 2]byte, src *[FaceDim]uint16) byte {
	return bfp4FaceRowBF16Go(out, src)
}

// encodeFaceBF16 encodes face f (0..3) of a BFLOAT8_B or BFLOAT4_B tile
// from src, the face's first value in rows of stride values.
func encodeFaceBF16(dt DType, tile []byte, f int, src []uint16, stride int) {
	for k := range FaceDim {
		EncodeFaceRowBF16(dt, tile, f*FaceDim+k, (*[FaceDim]uint16)(src[k*stride:]))
	}
}

//go:build !amd64 || purego

package tile

func bfp8FaceRowBF16(out *[FaceDim]byte, src *[FaceDim]uint16) byte {
	return bfp8FaceRowBF16Go(out, src)
}

func bfp4FaceRowBF16(out *[FaceDim / 2]byte, src *[FaceDim]uint16) byte {
	return bfp4FaceRowBF16Go(out, src)
}

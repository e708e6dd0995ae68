package tile

// Tile geometry.
const (
	TileDim   = 32                // tile height and width
	FaceDim   = 16                // face height and width
	TileElems = TileDim * TileDim // values per tile
	FaceRows  = 64                // face rows per tile (4 faces x 16 rows)
)

// FaceRowOrigin returns the (row, col) inside a tile where face row r starts.
func FaceRowOrigin(r int) (row, col int) {
	face := r / FaceDim
	return (face/2)*FaceDim + r%FaceDim, (face % 2) * FaceDim
}

// TiledLen returns the number of values of the tilized [h, w] matrix, i.e.
// RoundUp(h,32)*RoundUp(w,32).
func TiledLen(h, w int) int {
	return RoundUp(h, TileDim) * RoundUp(w, TileDim)
}

// Tilize writes the row-major [h, w] matrix src into dst in TILE order,
// padding with zeros to multiples of 32 in both dims. dst must hold
// TiledLen(h, w) values and src h*w values; Tilize panics otherwise (a
// programming error, like an out-of-range slice index).
func Tilize[T float32 | uint16](dst, src []T, h, w int) {
	if h <= 0 || w <= 0 {
		return
	}
	hp, wp := RoundUp(h, TileDim), RoundUp(w, TileDim)
	_ = dst[hp*wp-1]
	_ = src[h*w-1]
	i := 0
	for tr := 0; tr < hp; tr += TileDim {
		for tc := 0; tc < wp; tc += TileDim {
			for r := 0; r < FaceRows; r++ {
				fr, fc := FaceRowOrigin(r)
				row, col := tr+fr, tc+fc
				out := dst[i : i+FaceDim]
				i += FaceDim
				n := 0
				if row < h {
					n = min(FaceDim, max(0, w-col))
				}
				if n > 0 {
					copy(out, src[row*w+col:row*w+col+n])
				}
				clear(out[n:])
			}
		}
	}
}

// Untilize is the inverse of Tilize: it reads the TILE-ordered padded matrix
// src and writes the row-major [h, w] matrix dst, dropping the padding.
func Untilize[T float32 | uint16](dst, src []T, h, w int) {
	if h <= 0 || w <= 0 {
		return
	}
	hp, wp := RoundUp(h, TileDim), RoundUp(w, TileDim)
	_ = src[hp*wp-1]
	_ = dst[h*w-1]
	i := 0
	for tr := 0; tr < hp; tr += TileDim {
		for tc := 0; tc < wp; tc += TileDim {
			for r := 0; r < FaceRows; r++ {
				fr, fc := FaceRowOrigin(r)
				row, col := tr+fr, tc+fc
				in := src[i : i+FaceDim]
				i += FaceDim
				if row >= h || col >= w {
					continue
				}
				n := min(FaceDim, w-col)
				copy(dst[row*w+col:row*w+col+n], in[:n])
			}
		}
	}
}

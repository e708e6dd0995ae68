package tile

import (
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// TestEncodeFP8TransposedPartial checks ragged tiles against the float32
// packer: the transposed, bf16-rounded values of the rows × cols codes,
// padded by PackTiles.
func TestEncodeFP8TransposedPartial(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	const stride = 40
	src := make([]byte, 32*stride)
	for i := range src {
		src[i] = byte(rng.IntN(256))
		if src[i]&0x7f == 0x7f {
			src[i] = 0x11 // no NaN: PackTiles' float32 route keeps NaN payloads
		}
	}
	for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B} {
		for _, rc := range [][2]int{{32, 32}, {1, 1}, {31, 32}, {32, 17}, {5, 30}, {16, 16}} {
			rows, cols := rc[0], rc[1]
			scale := float32(0.0123)
			// Logical (transposed) matrix: cols rows of rows values.
			vals := make([]float32, cols*rows)
			for k := range rows {
				for i := range cols {
					vals[i*rows+k] = numfmt.RoundBF16(numfmt.DecodeE4M3(src[k*stride+i])*scale, numfmt.TTNaN)
				}
			}
			want := make([]byte, dt.TileBytes())
			_, err := PackTiles(dt, want, vals, cols, rows)
			require.NoError(t, err)
			got := make([]byte, dt.TileBytes())
			encodeFP8TransposedPartial(dt, got, src, stride, rows, cols, scale)
			require.Equal(t, want, got, "%v %dx%d", dt, rows, cols)
			if rows == 32 && cols == 32 {
				full := make([]byte, dt.TileBytes())
				EncodeFP8Transposed(dt, full, src, stride, []float32{scale}, 1)
				require.Equal(t, want, full)
			}
		}
	}
}

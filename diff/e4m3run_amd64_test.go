//go:build amd64 && !purego

package diff

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE4M3Tab checks the decode table of e4m3BlocksAVX512: for every
// magnitude the two bytes are the top of the float64 value, whose other
// 48 bits are zero, and the NaN magnitude decodes to a NaN.
func TestE4M3Tab(t *testing.T) {
	t.Parallel()
	for m := range 128 {
		u := uint64(e4m3Tab[128+m])<<56 | uint64(e4m3Tab[m])<<48
		v := math.Float64frombits(u)
		if m == 0x7f {
			assert.True(t, math.IsNaN(v), "magnitude %#x", m)
			continue
		}
		require.Zero(t, math.Float64bits(e4m3Values[m])&(1<<48-1), "magnitude %#x: low bits", m)
		assert.Equal(t, math.Float64bits(e4m3Values[m]), u, "magnitude %#x", m)
	}
}

// TestRawSameAVX2 checks rawSameAVX2 against the Go loop for every element
// width, whichever kernel countRawDiff picks on this CPU: random bytes
// with single-bit changes, all equal, all different.
func TestRawSameAVX2(t *testing.T) {
	t.Parallel()
	if !useFMA {
		t.Skip("no AVX2")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, es := range []int{1, 2, 4, 8} {
		for _, n := range []int{32, 64, 96, 4096, 32 * 255, 32 * 1001} {
			for _, change := range []int{0, 1, 3, 1000} { // one byte in change changes (0: none, 1: all)
				a := make([]byte, n)
				for i := range a {
					a[i] = byte(r.IntN(256))
				}
				b := append([]byte(nil), a...)
				for i := range b {
					if change == 1 || change > 1 && r.IntN(change) == 0 {
						b[i] ^= byte(1) << r.IntN(8)
					}
				}
				want := int64(n/es) - countRawDiffGo(a, b, es)
				assert.Equal(t, want, int64(rawSameAVX2(&a[0], &b[0], n, es)), "esize %d, n %d, change %d", es, n, change)
			}
		}
	}
}

// e4m3AddBlocksWith is e4m3BlocksWith followed by r.addE4M3 of the blocks
// done; with the AVX-512 kernel, that kernel's own adding of each block
// into r (its p argument), which the tests hold to the same bits.
func e4m3AddBlocksWith(kern e4m3Kernel, b, f []byte, bn int, k []e4m3Block, out []e4m3Sums, r *partial) int {
	if kern == e4m3KernelAVX512 && bn > 0 && bn%64 == 0 && len(k) > 0 {
		n := len(k) * bn
		b, f, out = b[:n], f[:n], out[:len(k)]
		return e4m3BlocksAVX512(&b[0], &f[0], bn, &k[0], len(k), &out[0], &e4m3Tab, r)
	}
	done := e4m3BlocksWith(kern, b, f, bn, k, out)
	r.addE4M3(out[:done], k)
	return done
}

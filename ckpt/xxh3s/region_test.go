package xxh3s

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
)

// TestRegion: a Region fed the bytes of a range in pieces, in random
// order and from several goroutines, has the library's hash of the
// range; a byte written twice or never leaves it without one.
func TestRegion(t *testing.T) {
	t.Parallel()
	require.True(t, regionOK())
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 5, 240, 241, 1024, 1025, 1088, 4095, 4096, 4097, 70000, 1<<17 + 3, 300 << 10} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		want := xxh3.Hash(data)
		for _, maxPiece := range []int{1, 9, 64, 1100, 70000} {
			if maxPiece == 1 && n > 5000 {
				continue
			}
			type piece struct{ off, n int }
			var ps []piece
			for o := 0; o < n; {
				k := min(1+rng.IntN(maxPiece), n-o)
				ps = append(ps, piece{o, k})
				o += k
			}
			rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
			r := NewRegion(int64(n))
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					for i := w; i < len(ps); i += 3 {
						r.WriteAt(data[ps[i].off:ps[i].off+ps[i].n], int64(ps[i].off))
					}
				})
			}
			wg.Wait()
			got, ok := r.Sum64()
			require.True(t, ok, "n %d pieces %d", n, maxPiece)
			require.Equal(t, want, got, "n %d pieces %d", n, maxPiece)
		}
		if n < 2 {
			continue
		}
		// One byte missing, or written twice.
		r := NewRegion(int64(n))
		r.WriteAt(data[1:], 1)
		_, ok := r.Sum64()
		require.False(t, ok, "n %d missing byte", n)
		r.WriteAt(data[1:2], 1)
		_, ok = r.Sum64()
		require.False(t, ok, "n %d byte twice", n)
		r = NewRegion(int64(n))
		r.WriteAt(data, 1)
		_, ok = r.Sum64()
		require.False(t, ok, "n %d beyond the end", n)
	}
}

func BenchmarkRegion(b *testing.B) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.Run("region", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r := NewRegion(int64(len(data)))
			for o := 0; o < len(data); o += 34816 {
				r.WriteAt(data[o:min(o+34816, len(data))], int64(o))
			}
			r.Sum64()
		}
	})
	b.Run("hasher", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			h := New()
			h.Write(data)
			h.Sum64()
		}
	})
}

// TestStripes: the assembly stripes (those this CPU has) equal stripesGo.
func TestStripes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	p := make([]byte, 16*stripe)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	for n := 0; n <= 16; n++ {
		var a, b [8]uint64
		for j := range a {
			a[j] = rng.Uint64()
		}
		b = a
		stripesGo(&b, p[:n*stripe], sec.lane[:])
		for _, simd := range simdStripes {
			c := a
			simd(&c, p[:n*stripe], sec.lane[:])
			require.Equal(t, b, c, "%d stripes", n)
		}
	}
}

package xxh3s

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"
)

// TestHasherMatchesXXH3 checks that any split of a stream into Writes
// hashes as xxh3.Hash of the whole: writes of every length around the
// block boundaries, random splits, and the library's own streaming hasher.
func TestHasherMatchesXXH3(t *testing.T) {
	t.Parallel()
	require.True(t, direct, "xxh3.Hasher's layout is not the one mirrored: the in-place route is off")
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 64<<10+333)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, size := range []int{0, 1, 240, 241, 1024, 1088, 1089, 4095, 4096, 9000, len(data)} {
		want := xxh3.Hash(data[:size])
		for _, first := range []int{0, 1, 63, 64, 65, 1023, 1024, 1025, 1087, 1088, 1089, 2048, 4096} {
			first = min(first, size)
			h := New()
			h.Write(data[:first])
			h.Write(data[first:size])
			require.Equal(t, want, h.Sum64(), "size %d, first write %d", size, first)
		}
	}
	for n := 0; n < 300; n++ {
		size := rng.IntN(len(data) + 1)
		want := xxh3.Hash(data[:size])
		h, lib := New(), xxh3.New()
		for off := 0; off < size; {
			k := min(size-off, rng.IntN(3*minDirect))
			if rng.IntN(4) == 0 {
				k = min(size-off, rng.IntN(200))
			}
			h.Write(data[off : off+k])
			lib.Write(data[off : off+k])
			off += k
		}
		require.Equal(t, want, h.Sum64(), "random splits of %d bytes", size)
		require.Equal(t, lib.Sum64(), h.Sum64())
		h.Reset()
		h.WriteString(string(data[:size]))
		require.Equal(t, want, h.Sum64(), "after Reset")
	}
}

func BenchmarkWrite(b *testing.B) {
	data := make([]byte, 256<<10)
	b.Run("xxh3s", func(b *testing.B) {
		h := New()
		h.Write(data[:100])
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			h.Write(data)
		}
	})
	b.Run("xxh3.Hasher", func(b *testing.B) {
		h := xxh3.New()
		h.Write(data[:100])
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			h.Write(data)
		}
	})
}

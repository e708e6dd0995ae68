package build

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRing: the read-ahead ring never hands out overlapping or
// out-of-bounds spans, frees in any order, and gives the room back (an
// empty ring takes a span of its whole size).
func TestRing(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	g := ring{size: 1000}
	type span struct{ off, n int }
	var live []span
	allocs := 0
	for i := 0; i < 20000; i++ {
		if len(live) > 0 && (r.IntN(2) == 0 || len(live) > 8) {
			// Free about in order: one of the three oldest.
			k := r.IntN(min(3, len(live)))
			g.free(live[k].off)
			live = append(live[:k], live[k+1:]...)
			continue
		}
		n := 1 + r.IntN(400)
		off, ok := g.alloc(n)
		if !ok {
			continue
		}
		allocs++
		require.GreaterOrEqual(t, off, 0)
		require.LessOrEqual(t, off+n, g.size)
		for _, s := range live {
			require.True(t, off+n <= s.off || s.off+s.n <= off, "span [%d,%d) overlaps [%d,%d)", off, off+n, s.off, s.off+s.n)
		}
		live = append(live, span{off, n})
	}
	require.Greater(t, allocs, 5000)
	for _, s := range live {
		g.free(s.off)
	}
	off, ok := g.alloc(1000)
	require.True(t, ok)
	require.Zero(t, off)
}

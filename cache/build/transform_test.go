package build

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/stretchr/testify/require"
)

// TestRoundBF16 checks the branch-free rounding against the host
// conversion numfmt.F32ToBF16TT on edge cases (NaNs of every sign and payload
// become 0x7FC0) and a sweep of bit patterns.
func TestRoundBF16(t *testing.T) {
	t.Parallel()
	cases := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff, 0x7f7fffff, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x00008000, 0x00018000}
	for u := uint32(0); u < 1<<20; u++ {
		cases = append(cases, u*4093+u>>3)
	}
	for _, u := range cases {
		x := math.Float32frombits(u)
		want := math.Float32bits(numfmt.BF16ToF32(numfmt.F32ToBF16TT(x)))
		require.Equal(t, want, math.Float32bits(numfmt.RoundBF16(x, numfmt.TTNaN)), "bits %#08x", u)
	}
	for _, nan := range []uint32{0x7f800001, 0xffbfffff, 0xffc00000, 0x7fffffff} {
		require.Equal(t, uint32(0x7fc00000), math.Float32bits(numfmt.RoundBF16(math.Float32frombits(nan), numfmt.TTNaN)), "NaN %#08x", nan)
	}
}

// TestPackTransposed16 checks the bfloat16 transposing packer (4x4 word
// transposes for complete blocks, value by value for partial ones) against
// the float32 one on random bits, for full and ragged shapes.
func TestPackTransposed16(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range []tile.DType{tile.BFLOAT8_B, tile.BFLOAT4_B, tile.BFLOAT16} {
		for _, g := range [][4]int{{64, 96, 0, 96}, {32, 32, 3, 40}, {45, 70, 1, 71}, {7, 33, 5, 40}, {96, 64, 32, 128}} {
			m, h, col, stride := g[0], g[1], g[2], g[3]
			src16 := make([]uint16, m*stride)
			src32 := make([]float32, m*stride)
			for i := range src16 {
				h := uint16(rng.Uint32())
				if h&0x7fff > 0x7f80 {
					h = numfmt.TTNaNBF16
				}
				src16[i], src32[i] = h, math.Float32frombits(uint32(h)<<16)
			}
			n := (h + 31) / 32 * ((m + 31) / 32) * dt.TileBytes()
			got, want := make([]byte, n), make([]byte, n)
			var stage []uint64
			packTransposedTiles16(dt, got, src16, stride, col, m, h, &stage)
			packTransposedTiles(dt, want, src32, stride, col, m, h, nil)
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("%v m=%d h=%d col=%d: byte %d (tile %d) is %#x, want %#x", dt, m, h, col, i, i/dt.TileBytes(), got[i], want[i])
				}
			}
			packRowTiles16(dt, got[:(m+31)/32*tile.StripBytes(dt, h)], src16, stride, col, m, h)
			packRowTiles(dt, want[:(m+31)/32*tile.StripBytes(dt, h)], src32, stride, col, m, h, nil)
			require.True(t, bytes.Equal(want, got), "rows %v m=%d h=%d col=%d", dt, m, h, col)
		}
	}
}

// TestBF16BitsCanonicalNaN checks the rounding of the decode tables: nearest
// even like numfmt.RoundBF16 under numfmt.TTNaN, and every NaN (sign and payload dropped) 0x7FC0, as
// tt-metal's host conversion does.
func TestBF16BitsCanonicalNaN(t *testing.T) {
	t.Parallel()
	for _, u := range []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0xffffffff, 0x7fa00000} {
		require.Equal(t, uint16(numfmt.TTNaNBF16), numfmt.F32ToBF16TT(math.Float32frombits(u)), "bits %#08x", u)
	}
	for u := uint32(0); u < 1<<20; u++ {
		x := math.Float32frombits(u*4093 + u>>3)
		if x != x {
			continue
		}
		require.Equal(t, uint16(math.Float32bits(numfmt.RoundBF16(x, numfmt.TTNaN))>>16), numfmt.F32ToBF16TT(x))
	}
	// FP8 NaN codes under any scale decode to the canonical NaN.
	for _, s := range []float32{1, -2.5, 1e-30} {
		var tab [256]uint16
		tile.E4M3BF16Table(&tab, s)
		require.Equal(t, uint16(numfmt.TTNaNBF16), tab[0x7f])
		require.Equal(t, uint16(numfmt.TTNaNBF16), tab[0xff])
	}
}

// TestTransposeRowsSSE2 compares transposeRows (SSE2 on amd64) with the Go
// version on random rows of several widths and strides.
func TestTransposeRowsSSE2(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 32, 64, 160} {
		for _, extra := range []int{0, 2, 64} {
			stride := 2*n + extra
			raw := make([]byte, tile.TileDim*stride+8)
			for i := range raw {
				raw[i] = byte(rng.Uint32())
			}
			got := make([]uint64, n/tile.TileDim*tile.TileElems/4+1)
			want := make([]uint64, len(got))
			transposeRows(got, raw, stride, n)
			transposeRowsGo(want, raw, stride, n)
			require.Equal(t, want, got, "n=%d stride=%d", n, stride)
		}
	}
}

// TestGroupSources: sources that fill a common sink, directly or through
// another source, stream together; groups keep the order of their first
// member.
func TestGroupSources(t *testing.T) {
	t.Parallel()
	s1, s2, s3 := &sink{}, &sink{}, &sink{}
	src := func(name string, sinks ...*sink) *srcState {
		st := &srcState{t: &ckpt.Tensor{TensorInfo: ckpt.TensorInfo{Name: name}}}
		for _, s := range sinks {
			st.uses = append(st.uses, use{s: s})
		}
		return st
	}
	a, b, c, d, e := src("a", s1), src("b", s1, s2), src("c", s3), src("d", s2), src("e")
	names := func(groups [][]*srcState) [][]string {
		var out [][]string
		for _, g := range groups {
			var n []string
			for _, st := range g {
				n = append(n, st.t.Name)
			}
			out = append(out, n)
		}
		return out
	}
	require.Equal(t, [][]string{{"a", "b", "d"}, {"c"}, {"e"}}, names(groupSources([]*srcState{a, b, c, d, e})))
	require.Equal(t, [][]string{{"d", "a", "b"}, {"c"}}, names(groupSources([]*srcState{d, c, a, b})))
}

// TestDirect27B: on the real 27B FP8 layout at 1x2 (sparse files, headers
// only), every block-FP8 weight goes from its codes straight to tiles
// (codesOnly), and every target it feeds gets write windows, all of them
// but those that also hold tile columns of bf16 weights (the fused qkvzab
// of the linear-attention layers ends with the a and b projections, which
// the FP8 checkpoint keeps in bf16, 24 rows per device): the build's fast
// path covers the checkpoint the tool is for, not only the fixtures.
func TestDirect27B(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.WriteInventory(dir, "fp8"))
	c, plan := cachetest.OpenPlan(t, dir)
	b := &builder{c: c, plan: plan}
	for _, e := range plan.Entries {
		hdr, err := cache.HeaderFor(e)
		require.NoError(t, err)
		s, err := newSink(e, hdr, "", numfmt.NaNBF16Vector)
		require.NoError(t, err)
		b.todo = append(b.todo, s)
	}
	srcs, err := b.sources()
	require.NoError(t, err)
	fp8, mixed := 0, 0
	for _, st := range srcs {
		if !st.v.Dequantized() || st.t.DType != numfmt.F8E4M3 {
			continue
		}
		fp8++
		require.True(t, st.codesOnly, st.t.Name)
		for _, u := range st.uses {
			require.True(t, u.s.windowed, u.s.e.Target)
			const d = tile.TileDim
			wins := (u.s.rows + d - 1) / d / u.s.winCols((u.s.cols+d-1)/d, (u.s.rows+d-1)/d)
			// At most the last window of each shard is blocked.
			require.LessOrEqual(t, len(u.s.blocked), len(u.s.e.Shards), u.s.e.Target)
			if len(u.s.blocked) > 0 {
				require.Greater(t, wins, 1, u.s.e.Target)
				mixed++
			}
		}
	}
	require.Greater(t, fp8, 400, "FP8 weights of the 27B")
	require.Greater(t, mixed, 0, "the qkvzab targets hold bf16 tile columns")
}

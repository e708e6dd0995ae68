package numfmt

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func f32(b uint32) float32 { return math.Float32frombits(b) }

// TestFP8RecipeBlocks holds every recipe's scale and code operation
// against hand-computed cases: a block with amax 0.12890625 (a bf16
// value), where 0.12890625/448 (0x3996db6e) and 1/(448/0.12890625)
// (448/amax = 0x4559364e, its reciprocal 0x3996db6d) differ by one ulp
// and vLLM's reciprocal of the first (0x4559364d) is not transformers'
// multiplier; an all-zero block (each recipe's zero handling: ckpt's zero
// scale, transformers' unit scale, compressed-tensors' machine epsilon,
// DeepSeek's and vLLM's amax floors, float32(1e-4)/448 = 0x346facad and
// float32(1e-10)/448 = 0x2a7b5123, their ue8m0 powers 2^ceil(log2) = 2^-22
// and, from vLLM's floor 1e-10 of the scale, 2^-33); a subnormal amax
// 2^-140 (ckpt's scale rounds to the smallest subnormal 2^-149,
// transformers' 448/amax overflows to +Inf and stores 0, its ue8m0 form
// floors at 2^-126); amax 448 (scale 1 everywhere).
func TestFP8RecipeBlocks(t *testing.T) {
	t.Parallel()
	inf := float32(math.Inf(1))
	a := float32(0.12890625)
	cases := []struct {
		r     FP8Recipe
		amax  float32
		sd    DType
		scale float32
		k     float32
		mul   bool
		round DType
		zero  bool
	}{
		{FP8Ckpt, a, F32, f32(0x3996db6e), f32(0x3996db6e), false, "", false},
		{FP8Ckpt, a, BF16, f32(0x39970000), f32(0x39970000), false, "", false},
		{FP8Transformers, a, F32, f32(0x3996db6d), f32(0x4559364e), true, "", false},
		// amax 3: torch's 448.0/3 is (1/3 = 0x3eaaaaab)·448 = 0x43155556, not
		// the quotient 0x43155555; its reciprocal 0x3bdb6db6 is one ulp
		// below 3/448 = 0x3bdb6db7
		{FP8Transformers, 3, F32, f32(0x3bdb6db6), f32(0x43155556), true, "", false},
		{FP8Ckpt, 3, F32, f32(0x3bdb6db7), f32(0x3bdb6db7), false, "", false},
		{FP8TransformersUE8M0, a, F8E8M0, 0x1p-11, 0x1p11, true, "", false}, // log2(0x3996db6d) = -11.76
		{FP8CompressedTensors, a, F32, f32(0x3996db6e), f32(0x3996db6e), false, "", false},
		{FP8CompressedTensors, a, BF16, f32(0x39970000), f32(0x39970000), false, BF16, false},
		{FP8DeepSeek, a, F32, f32(0x3996db6e), f32(0x3996db6e), false, "", false},
		{FP8DeepSeekUE8M0, a, F32, 0x1p-11, 0x1p-11, false, "", false}, // log2(0x3996db6e) = -11.76
		{FP8VLLMBlock, a, F32, f32(0x3996db6e), f32(0x4559364d), true, "", false},
		{FP8VLLMGroup, a, F32, f32(0x3996db6e), f32(0x3996db6e), false, "", false},
		{FP8VLLMGroupUE8M0, a, F32, 0x1p-11, 0x1p-11, false, "", false},

		{FP8Ckpt, 0, F32, 0, 0, false, "", true},
		{FP8Transformers, 0, F32, 1, 1, true, "", false},
		{FP8TransformersUE8M0, 0, F8E8M0, 1, 1, true, "", false},
		{FP8CompressedTensors, 0, F32, 0x1p-23, 0x1p-23, false, "", false},
		{FP8CompressedTensors, 0, BF16, 0x1p-7, 0x1p-7, false, BF16, false},
		{FP8CompressedTensors, 0, F16, 0x1p-10, 0x1p-10, false, F16, false},
		{FP8DeepSeek, 0, F32, f32(0x346facad), f32(0x346facad), false, "", false},
		{FP8DeepSeekUE8M0, 0, F32, 0x1p-22, 0x1p-22, false, "", false},
		{FP8VLLMBlock, 0, F32, f32(0x346facad), 1 / f32(0x346facad), true, "", false},
		{FP8VLLMGroup, 0, F32, f32(0x2a7b5123), f32(0x2a7b5123), false, "", false},
		{FP8VLLMGroupUE8M0, 0, F32, 0x1p-33, 0x1p-33, false, "", false},

		{FP8Ckpt, 0x1p-140, F32, 0x1p-149, 0x1p-149, false, "", false},
		{FP8Transformers, 0x1p-140, F32, 0, inf, true, "", false},
		{FP8TransformersUE8M0, 0x1p-140, F8E8M0, 0x1p-126, 0x1p126, true, "", false},
		{FP8DeepSeek, 0x1p-140, F32, f32(0x346facad), f32(0x346facad), false, "", false},

		{FP8Ckpt, 448, F32, 1, 1, false, "", false},
		{FP8Transformers, 448, F32, 1, 1, true, "", false},
		{FP8TransformersUE8M0, 448, F8E8M0, 1, 1, true, "", false},
	}
	for _, c := range cases {
		b := c.r.Block(c.amax, c.sd)
		want := FP8Block{Scale: c.scale, K: c.k, Mul: c.mul, Round: c.round, Zero: c.zero}
		require.Equal(t, math.Float32bits(want.Scale), math.Float32bits(b.Scale), "%s amax %g %s: scale %g, want %g", c.r, c.amax, c.sd, b.Scale, want.Scale)
		require.Equal(t, math.Float32bits(want.K), math.Float32bits(b.K), "%s amax %g %s: K %g, want %g", c.r, c.amax, c.sd, b.K, want.K)
		require.Equal(t, want.Mul, b.Mul, "%s amax %g: mul", c.r, c.amax)
		require.Equal(t, want.Round, b.Round, "%s amax %g: round", c.r, c.amax)
		require.Equal(t, want.Zero, b.Zero, "%s amax %g: zero", c.r, c.amax)
	}
}

// TestFP8RecipeCodes holds the codes of hand-computed values: ties to
// even (1.0625 between 1 and 1.125 → 1, code 0x38; 1.1875 → 1.25, 0x3a)
// under a unit scale; compressed-tensors' quotient rounded to BF16 first,
// which moves 1.0625 + 2^-19 (0x3f880010) onto the tie (→ 0x38) where
// every other recipe rounds it up (0x39); the subnormal amax 2^-140, whose
// values saturate under ckpt's scale 2^-149 (2^-140/2^-149 = 512 → 448,
// 0x7e), go to ±448 under transformers' +Inf multiplier and to NaN for a
// zero (0·Inf), and to code 0 under the floors of DeepSeek and
// transformers-ue8m0; zero blocks give zero codes under every recipe.
func TestFP8RecipeCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		r    FP8Recipe
		amax float32
		sd   DType
		w    float32
		code byte
	}{
		{FP8Ckpt, 448, F32, 1.0625, 0x38},
		{FP8Ckpt, 448, F32, 1.1875, 0x3a},
		{FP8Transformers, 448, F32, 1.0625, 0x38},
		{FP8Transformers, 448, F32, -1.1875, 0xba},
		{FP8Ckpt, 448, BF16, f32(0x3f880010), 0x39},
		{FP8CompressedTensors, 448, F32, f32(0x3f880010), 0x39},
		{FP8CompressedTensors, 448, BF16, f32(0x3f880010), 0x38},
		{FP8CompressedTensors, 448, F16, f32(0x3f880010), 0x38},
		{FP8Transformers, 448, F32, f32(0x3f880010), 0x39},
		{FP8Ckpt, 0x1p-140, F32, 0x1p-140, 0x7e},
		{FP8Ckpt, 0x1p-140, F32, -0x1p-140, 0xfe},
		{FP8Transformers, 0x1p-140, F32, 0x1p-140, 0x7e},
		{FP8Transformers, 0x1p-140, F32, -0x1p-141, 0xfe},
		{FP8Transformers, 0x1p-140, F32, 0, 0x7f},
		{FP8TransformersUE8M0, 0x1p-140, F8E8M0, 0x1p-140, 0},
		{FP8DeepSeek, 0x1p-140, F32, 0x1p-140, 0},
		{FP8Ckpt, 0, F32, 0, 0},
		{FP8Transformers, 0, F32, 0, 0},
		{FP8CompressedTensors, 0, BF16, 0, 0},
		{FP8DeepSeek, 0, F32, 0, 0},
		{FP8VLLMGroup, 0, F32, 0, 0},
	}
	for _, c := range cases {
		b := c.r.Block(c.amax, c.sd)
		got := b.encode(c.w)
		if c.code&0x7f == 0x7f {
			require.Equal(t, byte(0x7f), got&0x7f, "%s amax %g: e4m3(%g) = %#x, want NaN", c.r, c.amax, c.w, got)
			continue
		}
		require.Equal(t, c.code, got, "%s amax %g %s: e4m3(%g) = %#x, want %#x", c.r, c.amax, c.sd, c.w, got, c.code)
	}
}

// TestCeilPow2 holds the ue8m0 rounding to torch's float32 log2: a power
// of two is itself; 2·(1+2^-23) has log2 1 + 1.7e-7, which rounds to the
// float32 above 1 and gives 4; 2^-10·(1+2^-23) has a log2 that rounds to
// -10 exactly (the float32 spacing near 10 is 9.5e-7) and gives 2^-10 (an
// exact ceil would give 2^-9); 2^-10·(1+2^-20) is far enough above to
// give 2^-9.
func TestCeilPow2(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		x    float32
		want float32
		e    int
	}{
		{1, 1, 0}, {0x1p-126, 0x1p-126, -126}, {0x1p127, 0x1p127, 127}, {3, 4, 2},
		{f32(0x40000001), 4, 2}, {f32(0x3a800001), 0x1p-10, -10}, {f32(0x3a800008), 0x1p-9, -9},
		{f32(0x3a7fffff), 0x1p-10, -10},
	} {
		got, e := ceilPow2(c.x)
		require.Equal(t, c.want, got, "ceilPow2(%g)", c.x)
		require.Equal(t, c.e, e, "ceilPow2(%g) exponent", c.x)
	}
	got, _ := ceilPow2(math.MaxFloat32)
	require.True(t, math.IsInf(float64(got), 1))
	got, _ = ceilPow2(0)
	require.True(t, got != got)
}

// TestFP8RecipeStores holds which scale dtypes each recipe writes.
func TestFP8RecipeStores(t *testing.T) {
	t.Parallel()
	for _, r := range FP8Recipes {
		name := r.String()
		got, ok := ParseFP8Recipe(name)
		require.True(t, ok, name)
		require.Equal(t, r, got)
		for _, sd := range []DType{F32, BF16, F16, F8E8M0} {
			for _, ct := range []bool{false, true} {
				var want bool
				switch r {
				case FP8Ckpt:
					want = sd != F8E8M0
				case FP8CompressedTensors:
					want = ct && sd != F8E8M0
				case FP8TransformersUE8M0:
					want = !ct && sd == F8E8M0
				default:
					want = !ct && sd == F32
				}
				require.Equal(t, want, r.Stores(sd, ct), "%s stores %s (compressed-tensors %v)", r, sd, ct)
			}
		}
	}
	_, ok := ParseFP8Recipe("nope")
	require.False(t, ok)
}

// TestFP8BlockMismatches checks FP8Block.Mismatches (the AVX2 kernels for
// division and multiplication) against Encode of each element, for every
// recipe, on random blocks with their own codes, flipped codes and signs
// of zero.
func TestFP8BlockMismatches(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 8))
	for k := range 200 {
		n := 1 + rng.IntN(300)
		w := make([]float32, n)
		mag := math.Ldexp(1, rng.IntN(40)-30)
		for i := range w {
			w[i] = RoundTo(BF16, float32(rng.NormFloat64()*mag))
			if rng.IntN(15) == 0 {
				w[i] = float32(math.Copysign(0, -1))
			}
		}
		if k%20 == 0 {
			clear(w)
		}
		amax := absMaxGo(w)
		for _, r := range FP8Recipes {
			sd := F32
			switch r {
			case FP8TransformersUE8M0:
				sd = F8E8M0
			case FP8CompressedTensors, FP8Ckpt:
				sd = []DType{F32, BF16, F16}[k%3]
			}
			b := r.Block(amax, sd)
			codes := make([]byte, n)
			for i, x := range w {
				codes[i] = b.encode(x)
			}
			cnt, zs := b.Mismatches(w, codes)
			require.Zero(t, cnt, "%s block %d: own codes", r, k)
			require.Zero(t, zs, "%s block %d: own codes, sign of zero", r, k)
			var wantZS int64
			for i := range codes {
				switch rng.IntN(6) {
				case 0:
					codes[i] ^= 1
				case 1:
					if codes[i]&0x7f == 0 {
						codes[i] ^= 0x80
						wantZS++
					}
				}
			}
			var wantCnt int64
			for i, x := range w {
				if same, _ := SameE4M3(b.encode(x), codes[i]); !same {
					wantCnt++
				}
			}
			cnt, zs = b.Mismatches(w, codes)
			require.Equal(t, wantCnt, cnt, "%s block %d: changed codes", r, k)
			require.Equal(t, wantZS, zs, "%s block %d: signs of zero", r, k)
		}
	}
}

// TestEncodeE8M0 holds the E8M0 encoder: every code's value back to its
// code (0xFF, NaN, to itself), and anything not a power of two in range
// (3, 0, -1, +Inf, 2^-128, NaN) to the NaN code.
func TestEncodeE8M0(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		require.Equal(t, byte(c), EncodeE8M0(E8M0ToFloat32(byte(c))), "code %#x", c)
	}
	for _, f := range []float32{3, 0, -1, float32(math.Inf(1)), 0x1p-128, float32(math.NaN()), -0x1p-3} {
		require.Equal(t, byte(e8m0NaN), EncodeE8M0(f), "%g", f)
	}
}

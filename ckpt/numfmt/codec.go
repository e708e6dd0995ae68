package numfmt

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Decode tables for the one-byte float formats; built once, never written.
var (
	e4m3Table = buildTable(DecodeE4M3)
	e5m2Table = buildTable(DecodeE5M2)
	e8m0Table = buildTable(DecodeE8M0)
)

func buildTable(f func(byte) float32) *[256]float32 {
	var t [256]float32
	for i := range t {
		t[i] = f(byte(i))
	}
	return &t
}

// DecodeE4M3 decodes an F8_E4M3 (E4M3FN) code: bias 7, no infinities,
// 0x7f and 0xff are NaN (a quiet float32 NaN with the code's sign, as
// ml_dtypes and torch decode them), largest finite 448.
func DecodeE4M3(c byte) float32 {
	sign := float32(1)
	if c&0x80 != 0 {
		sign = -1
	}
	e := int(c>>3) & 0xf
	m := float32(c & 7)
	switch {
	case e == 0xf && c&7 == 7:
		return math.Float32frombits(uint32(c&0x80)<<24 | 0x7fc00000)
	case e == 0:
		return sign * m / 8 * (1.0 / 64)
	}
	return sign * (1 + m/8) * float32(math.Ldexp(1, e-7))
}

// DecodeE5M2 decodes an F8_E5M2 code: bias 15, with infinities and NaN.
func DecodeE5M2(c byte) float32 {
	return F16ToF32(uint16(c) << 8)
}

// DecodeE8M0 decodes an F8_E8M0 code: 2^(e-127); 0xff is NaN.
func DecodeE8M0(c byte) float32 {
	if c == 0xff {
		return float32(math.NaN())
	}
	return float32(math.Ldexp(1, int(c)-127))
}

// BF16ToF32 widens a bfloat16 bit pattern exactly.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// TTNaNBF16 is the one NaN tt-metal's host conversion produces: positive,
// quiet, no payload.
const TTNaNBF16 = 0x7FC0

// NaNBF16Vector is the NaN torch's vectorised CPU kernels (AVX2, AVX-512:
// the x86 hosts that serve Tenstorrent cards) write whenever a float32 →
// bfloat16 cast or bfloat16 arithmetic produces a NaN: all bits set,
// whatever the input's sign and payload. Their scalar code
// (ATEN_CPU_CAPABILITY=default) writes TTNaNBF16, as tt-metal's host
// conversion does.
const NaNBF16Vector = 0xFFFF

// NaNPolicy says what a NaN becomes when it is rounded to bfloat16: KeepNaN
// keeps its sign and payload (made quiet), any other value is the one
// bfloat16 pattern every NaN becomes (TTNaN, VectorNaN). Every bf16
// rounding of the module is RoundBF16 or F32ToBF16NaN under a policy.
type NaNPolicy uint16

const (
	// KeepNaN keeps a NaN's sign and payload, setting the quiet bit (the
	// safetensors output's rounding, F32ToBF16).
	KeepNaN NaNPolicy = 0
	// TTNaN makes every NaN 0x7FC0, as tt-metal's host conversion and
	// torch's scalar kernels do (F32ToBF16TT).
	TTNaN NaNPolicy = TTNaNBF16
	// VectorNaN makes every NaN 0xFFFF, as torch's vectorised kernels do.
	VectorNaN NaNPolicy = NaNBF16Vector
)

// F32ToBF16NaN rounds f to bfloat16 bits, nearest even (the rounding of
// torch's .to(torch.bfloat16)), a NaN becoming what the policy nan says.
func F32ToBF16NaN(f float32, nan NaNPolicy) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		if nan == KeepNaN {
			return uint16(u>>16) | 0x40
		}
		return uint16(nan)
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// RoundBF16 is BF16ToF32(F32ToBF16NaN(x, nan)). It is written branch-free
// for finite values (the NaN case is a select) for the cache builder's
// inner loops.
func RoundBF16(x float32, nan NaNPolicy) float32 {
	u := math.Float32bits(x)
	r := (u + 0x7fff + (u>>16)&1) &^ 0xffff
	if u&0x7fffffff > 0x7f800000 {
		r = uint32(nan) << 16
		if nan == KeepNaN {
			r = (u | 0x00400000) &^ 0xffff // quiet NaN, sign and payload kept
		}
	}
	return math.Float32frombits(r)
}

// F32ToBF16 rounds to bfloat16, nearest even; NaN stays NaN (quiet, sign
// and payload kept): F32ToBF16NaN(f, KeepNaN).
func F32ToBF16(f float32) uint16 { return F32ToBF16NaN(f, KeepNaN) }

// F32ToBF16TT rounds f to bfloat16 bits as tt-metal's host conversion does
// (tt_metal/impl/data_format/bfloat16.cpp@0266e6f1,
// fp32_to_bf16_bits_round_to_nearest_even), which is also the rounding of
// torch's .to(torch.bfloat16): round to nearest with ties to even, and every
// NaN, whatever its sign and payload, becomes TTNaNBF16 (0x7FC0). The tensor
// cache uses it; safetensors output keeps NaN sign and payload (F32ToBF16).
func F32ToBF16TT(f float32) uint16 { return F32ToBF16NaN(f, TTNaN) }

// BF16Bits returns the bfloat16 bits of f when f is a bfloat16 value (NaN
// bits included: a bf16 tensor handed on as it is keeps them), and
// otherwise F32ToBF16TT(f) (tt-metal's host conversion of a float32 value).
func BF16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0xffff == 0 {
		return uint16(u >> 16)
	}
	return F32ToBF16TT(f)
}

// F16ToF32 widens an IEEE half bit pattern exactly.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h>>10) & 0x1f
	m := uint32(h & 0x3ff)
	switch {
	case e == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | m<<13)
	case e == 0:
		if m == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(m) * (1.0 / (1 << 24))
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (e+112)<<23 | m<<13)
}

// F32ToF16 rounds to IEEE half, nearest even, overflowing to infinity.
func F32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000:
		return sign | 0x7e00 | uint16(a>>13)&0x3ff
	case a >= 0x477ff000: // rounds to >= 65536
		return sign | 0x7c00
	case a < 0x38800000: // below the smallest normal half: subnormal
		// value in units of 2^-24, rounded half to even
		v := math.RoundToEven(float64(math.Float32frombits(a)) * (1 << 24))
		return sign | uint16(v)
	}
	e := a>>23 - 112
	m := a & 0x7fffff
	r := m >> 13
	rem := m & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++
		if r == 0x400 {
			r = 0
			e++
		}
	}
	return sign | uint16(e<<10) | uint16(r)
}

// E4M3MaxFinite is the largest finite F8_E4M3 value.
const E4M3MaxFinite = 448

// EncodeE4M3 rounds f to F8_E4M3 (E4M3FN), nearest even, saturating to
// ±448 (infinities included); NaN becomes the NaN code of its sign, 0x7f or
// 0xff, as in ml_dtypes and torch. The normal range is rounded with integer
// arithmetic (no branch per rounding case): it is on the inner loop of
// diff's re-quantisation check and of the fixtures' quantiser.
func EncodeE4M3(f float32) byte {
	u := math.Float32bits(f)
	sign := byte(u>>24) & 0x80
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN, sign kept
		return sign | 0x7f
	case a >= 0x43e00000: // ≥ 448
		return sign | 0x7e
	case a < 0x3c800000: // < 2^-6: subnormal codes, quantum 2^-9
		return sign | byte(math.RoundToEven(float64(math.Float32frombits(a))*512))
	}
	// Round the 23-bit mantissa to 3 bits, nearest even; a carry moves
	// into the exponent. Then rebias the exponent from 127 to 7.
	r := (a + 0x7ffff + (a>>20)&1) >> 20
	return sign | byte(r-120<<3)
}

// decodeBF16 widens the little-endian bfloat16 values of src into dst
// (len(src) = 2*len(dst)), four per 64-bit load.
func decodeBF16(src []byte, dst []float32) {
	n := len(dst)
	src = src[:2*n]
	i := 0
	for ; i+4 <= n; i += 4 {
		x := binary.LittleEndian.Uint64(src[2*i:])
		d := dst[i : i+4 : i+4]
		d[0] = math.Float32frombits(uint32(x) << 16)
		d[1] = math.Float32frombits(uint32(x>>16) << 16)
		d[2] = math.Float32frombits(uint32(x>>32) << 16)
		d[3] = math.Float32frombits(uint32(x>>48) << 16)
	}
	for ; i < n; i++ {
		dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
	}
}

// DecodeFloat32 decodes n = len(dst) elements of dtype dt from src into dst.
// Supported: BF16, F16, F32, F64, F8_E4M3, F8_E5M2, F8_E8M0.
func DecodeFloat32(dt DType, src []byte, dst []float32) error {
	n := len(dst)
	need := n * dt.Bits() / 8
	if len(src) < need {
		return fmt.Errorf("decoding %d %s values: have %d bytes, need %d", n, dt, len(src), need)
	}
	switch dt {
	case BF16:
		decodeBF16(src[:2*n], dst)
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	case F8E4M3:
		decodeTable(e4m3Table, src, dst)
	case F8E5M2:
		decodeTable(e5m2Table, src, dst)
	case F8E8M0:
		decodeTable(e8m0Table, src, dst)
	default:
		return fmt.Errorf("cannot decode dtype %s to float32", dt)
	}
	return nil
}

func decodeTable(t *[256]float32, src []byte, dst []float32) {
	src = src[:len(dst)]
	for i, c := range src {
		dst[i] = t[c]
	}
}

// EncodeFloat32 encodes float32 values into dtype dt (BF16 and F16 rounded
// to nearest even, F32 as is, F8_E4M3 saturating). dst must hold
// len(src)*dt.Bits()/8 bytes.
func EncodeFloat32(dt DType, src []float32, dst []byte) error {
	switch dt {
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
		}
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case F8E4M3:
		for i, v := range src {
			dst[i] = EncodeE4M3(v)
		}
	case F8E8M0:
		for i, v := range src {
			dst[i] = EncodeE8M0(v)
		}
	default:
		return fmt.Errorf("cannot encode float32 as %s", dt)
	}
	return nil
}

// RoundTo rounds f to the nearest value representable in dt (BF16, F16 or
// F32), as storing and reloading it would.
func RoundTo(dt DType, f float32) float32 {
	switch dt {
	case BF16:
		return BF16ToF32(F32ToBF16(f))
	case F16:
		return F16ToF32(F32ToF16(f))
	}
	return f
}

// NegExp32 is −exp(x) of a float32, computed in float64 and rounded to
// float32 (nearest even): the decay rate −exp(A_log) the qwen36 fused
// GDN decode caches in float32 (-torch.exp(A_log.float())). A NaN keeps
// its payload and has its sign flipped, as exp passes a NaN through and
// negation flips its sign; −exp(+Inf) is −Inf and −exp(−Inf) is −0.
//
// torch's float32 exp is not correctly rounded: torch 2.15.0 (the same
// under its DEFAULT, AVX2 and AVX-512 kernels) differs from the correctly
// rounded result in the last bit for about 1 % of float32 inputs (45 of
// the 65,280 finite bfloat16 values), so a value computed here can be one
// unit in the last place from the one the serving host computes.
func NegExp32(x float32) float32 {
	if x != x {
		return math.Float32frombits(math.Float32bits(x) ^ 0x80000000)
	}
	return float32(-math.Exp(float64(x)))
}

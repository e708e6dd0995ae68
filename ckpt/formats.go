package ckpt

import "github.com/ckpt-dev/ckpt/ckpt/numfmt"

// The dtypes and scalar number formats live in package numfmt; ckpt keeps
// its names for them (the same types, constants and functions), so that
// the reader's callers need not import both.

// DType is a safetensors dtype string such as "BF16" or "F8_E4M3"
// (numfmt.DType).
type DType = numfmt.DType

// The safetensors dtypes, in the reference writer's enum (alignment) order.
const (
	BOOL       = numfmt.BOOL
	F4         = numfmt.F4
	F6E2M3     = numfmt.F6E2M3
	F6E3M2     = numfmt.F6E3M2
	U8         = numfmt.U8
	I8         = numfmt.I8
	F8E5M2     = numfmt.F8E5M2
	F8E4M3     = numfmt.F8E4M3
	F8E8M0     = numfmt.F8E8M0
	F8E4M3FNUZ = numfmt.F8E4M3FNUZ
	F8E5M2FNUZ = numfmt.F8E5M2FNUZ
	I16        = numfmt.I16
	U16        = numfmt.U16
	F16        = numfmt.F16
	BF16       = numfmt.BF16
	I32        = numfmt.I32
	U32        = numfmt.U32
	F32        = numfmt.F32
	C64        = numfmt.C64
	F64        = numfmt.F64
	I64        = numfmt.I64
	U64        = numfmt.U64
)

// Constants of the number formats (see numfmt).
const (
	E4M3MaxFinite = numfmt.E4M3MaxFinite
	TTNaNBF16     = numfmt.TTNaNBF16
	NaNBF16Vector = numfmt.NaNBF16Vector
)

// AllDTypes returns the standard dtypes in enum order.
func AllDTypes() []DType { return numfmt.AllDTypes() }

// DecodeE4M3 is numfmt.DecodeE4M3.
func DecodeE4M3(c byte) float32 { return numfmt.DecodeE4M3(c) }

// DecodeE5M2 is numfmt.DecodeE5M2.
func DecodeE5M2(c byte) float32 { return numfmt.DecodeE5M2(c) }

// DecodeE8M0 is numfmt.DecodeE8M0.
func DecodeE8M0(c byte) float32 { return numfmt.DecodeE8M0(c) }

// EncodeE4M3 is numfmt.EncodeE4M3.
func EncodeE4M3(f float32) byte { return numfmt.EncodeE4M3(f) }

// BF16ToF32 is numfmt.BF16ToF32.
func BF16ToF32(b uint16) float32 { return numfmt.BF16ToF32(b) }

// F16ToF32 is numfmt.F16ToF32.
func F16ToF32(h uint16) float32 { return numfmt.F16ToF32(h) }

// F32ToF16 is numfmt.F32ToF16.
func F32ToF16(f float32) uint16 { return numfmt.F32ToF16(f) }

// F32ToBF16 rounds to bfloat16, NaN sign and payload kept
// (numfmt.F32ToBF16NaN under numfmt.KeepNaN).
func F32ToBF16(f float32) uint16 { return numfmt.F32ToBF16(f) }

// F32ToBF16TT rounds to bfloat16 as tt-metal's host conversion does, every
// NaN 0x7FC0 (numfmt.F32ToBF16NaN under numfmt.TTNaN).
func F32ToBF16TT(f float32) uint16 { return numfmt.F32ToBF16TT(f) }

// F32ToBF16NaN is F32ToBF16TT with the pattern nan for every NaN.
func F32ToBF16NaN(f float32, nan uint16) uint16 { return numfmt.F32ToBF16NaN(f, numfmt.NaNPolicy(nan)) }

// RoundBF16NaN is BF16ToF32(F32ToBF16NaN(x, nan)) (numfmt.RoundBF16).
func RoundBF16NaN(x float32, nan uint16) float32 { return numfmt.RoundBF16(x, numfmt.NaNPolicy(nan)) }

// RoundBF16TT is BF16ToF32(F32ToBF16TT(x)) (numfmt.RoundBF16 under
// numfmt.TTNaN).
func RoundBF16TT(x float32) float32 { return numfmt.RoundBF16(x, numfmt.TTNaN) }

// BF16Bits is numfmt.BF16Bits.
func BF16Bits(f float32) uint16 { return numfmt.BF16Bits(f) }

// DecodeFloat32 is numfmt.DecodeFloat32.
func DecodeFloat32(dt DType, src []byte, dst []float32) error {
	return numfmt.DecodeFloat32(dt, src, dst)
}

// EncodeFloat32 is numfmt.EncodeFloat32.
func EncodeFloat32(dt DType, src []float32, dst []byte) error {
	return numfmt.EncodeFloat32(dt, src, dst)
}

// RoundTo is numfmt.RoundTo.
func RoundTo(dt DType, f float32) float32 { return numfmt.RoundTo(dt, f) }

// QuantizeBlockFP8 is numfmt.QuantizeBlockFP8 (the block-FP8 recipe).
func QuantizeBlockFP8(w []float32, rows, cols, bm, bn int64, scaleDType DType, codes []byte, scales []float32) {
	numfmt.QuantizeBlockFP8(w, rows, cols, bm, bn, scaleDType, codes, scales)
}

// QuantizeBlockFP8Named is numfmt.QuantizeBlockFP8Recipe with the recipe
// given by its name ("ckpt", "transformers", ...; numfmt.FP8Recipes); false
// for a name that is none.
func QuantizeBlockFP8Named(recipe string, w []float32, rows, cols, bm, bn int64, scaleDType DType, codes []byte, scales []float32) bool {
	r, ok := numfmt.ParseFP8Recipe(recipe)
	if ok {
		numfmt.QuantizeBlockFP8Recipe(r, w, rows, cols, bm, bn, scaleDType, codes, scales)
	}
	return ok
}

// MaxFinite is numfmt.MaxFinite.
func MaxFinite(dt DType) float64 { return numfmt.MaxFinite(dt) }

// MayOverflow is numfmt.MayOverflow.
func MayOverflow(src, dst DType) bool { return numfmt.MayOverflow(src, dst) }

// FiniteIn is numfmt.FiniteIn.
func FiniteIn(dt DType, x float32) bool { return numfmt.FiniteIn(dt, x) }

// CountNotFinite is numfmt.CountNotFinite.
func CountNotFinite(dt DType, vals []float32) int64 { return numfmt.CountNotFinite(dt, vals) }

package compare

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func f32Bytes(bits ...uint32) []byte {
	out := make([]byte, 4*len(bits))
	for i, b := range bits {
		binary.LittleEndian.PutUint32(out[4*i:], b)
	}
	return out
}

func bf16Bytes(bits ...uint16) []byte {
	out := make([]byte, 2*len(bits))
	for i, b := range bits {
		binary.LittleEndian.PutUint16(out[2*i:], b)
	}
	return out
}

// A differing unit of a file compared within 1 ulp passes when every
// element is at most 1 ulp away, on the bits as ordered integers;
// anything else (2 ulp, a sign change past the neighbours of zero, a
// NaN, an infinity against the largest finite value) is beyond it, at the
// first such element's byte.
func TestULPCheckUnit(t *testing.T) {
	t.Parallel()
	tol := mapping.OpNegExp.Tolerance()
	require.NotNil(t, tol)
	v := math.Float32bits(-2.7182817) // −exp(1), a neg_exp_A_fp32 value
	maxF, inf := math.Float32bits(math.MaxFloat32), math.Float32bits(float32(math.Inf(1)))
	for _, tc := range []struct {
		name     string
		a, b     []uint32
		at       int    // byte of the first element beyond 1 ulp; -1: within
		elems    int64  // differing elements counted when within
		maxULP   uint64 // their largest distance
		contains string // in the reason when beyond
	}{
		{"0 ulp (some other element differs by 1)", []uint32{v, v}, []uint32{v, v + 1}, -1, 1, 1, ""},
		{"1 ulp, every element", []uint32{v, v + 1}, []uint32{v + 1, v}, -1, 2, 1, ""},
		{"2 ulp", []uint32{v, v}, []uint32{v, v + 2}, 4, 0, 0, "2 ulp apart"},
		{"2 ulp after 1 ulp", []uint32{v, v}, []uint32{v - 1, v - 2}, 4, 0, 0, "0xc02df854 vs 0xc02df852, 2 ulp apart"},
		{"+0 against -0: no ulp", []uint32{0}, []uint32{0x80000000}, -1, 1, 0, ""},
		{"sign change next to zero: 1 ulp", []uint32{0}, []uint32{0x80000001}, -1, 1, 1, ""},
		{"sign change: 2 ulp", []uint32{1}, []uint32{0x80000001}, 0, 0, 0, "2 ulp apart"},
		{"sign change of a value", []uint32{v}, []uint32{v &^ 0x80000000}, 0, 0, 0, "ulp apart"},
		{"NaN against a value", []uint32{v, 0x7fc00000}, []uint32{v, v}, 4, 0, 0, "a NaN or infinity is within no ulp of other bits"},
		{"NaN against NaN of other bits", []uint32{0x7fc00000}, []uint32{0xffc00000}, 0, 0, 0, "NaN or infinity"},
		{"+Inf against the largest finite value", []uint32{inf}, []uint32{maxF}, 0, 0, 0, "NaN or infinity"},
	} {
		c := newULPCheck(&tensorbin.TensorSpec{DType: tile.FLOAT32, Layout: tile.TILE}, tol)
		require.NotNil(t, c, tc.name)
		at, why := c.unit(f32Bytes(tc.a...), f32Bytes(tc.b...))
		assert.Equal(t, tc.at, at, tc.name)
		if tc.at >= 0 {
			assert.Contains(t, why, tc.contains, tc.name)
			assert.Zero(t, c.elems, "%s: a unit beyond the tolerance is not counted as within it", tc.name)
			continue
		}
		assert.Equal(t, tc.elems, c.elems, tc.name)
		assert.Equal(t, tc.maxULP, c.maxULP, tc.name)
	}

	// BFLOAT16: ulps of bfloat16.
	c := newULPCheck(&tensorbin.TensorSpec{DType: tile.BFLOAT16, Layout: tile.ROW_MAJOR}, tol)
	require.NotNil(t, c)
	at, _ := c.unit(bf16Bytes(0xc02e, 0xc02e), bf16Bytes(0xc02f, 0xc02e))
	assert.Equal(t, -1, at)
	at, why := c.unit(bf16Bytes(0xc02e), bf16Bytes(0xc030))
	assert.Equal(t, 0, at)
	assert.Contains(t, why, "0xc02e vs 0xc030, 2 ulp apart")

	// No tolerance, or a format that shares exponents: no element check
	// (bytes are compared exactly).
	assert.Nil(t, newULPCheck(&tensorbin.TensorSpec{DType: tile.FLOAT32}, nil))
	assert.Nil(t, newULPCheck(&tensorbin.TensorSpec{DType: tile.BFLOAT8_B, Layout: tile.TILE}, tol))
	assert.Nil(t, newULPCheck(&tensorbin.TensorSpec{DType: tile.UINT32, Layout: tile.ROW_MAJOR}, tol))
}

func TestSplitFolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, folder, rel string }{
		{"layers.0/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin", "", "layers.0/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin"},
		{"P300/tensor_cache_bfp8_mesh1x2/layers.0/tp/x.tensorbin", "P300/tensor_cache_bfp8_mesh1x2", "layers.0/tp/x.tensorbin"},
		{"tensor_cache_bfp8_mesh1x2/x.tensorbin", "tensor_cache_bfp8_mesh1x2", "x.tensorbin"},
	} {
		f, r := splitFolder(tc.in)
		assert.Equal(t, tc.folder, f, tc.in)
		assert.Equal(t, tc.rel, r, tc.in)
	}
}

package tile

import "fmt"

// DType is a ttnn data type, numbered as in the .tensorbin FlatBuffer schema
// (enum DataType).
type DType uint8

// Data types of the .tensorbin schema.
const (
	BFLOAT16  DType = 0
	FLOAT32   DType = 1
	UINT32    DType = 2
	BFLOAT8_B DType = 3
	BFLOAT4_B DType = 4
	UINT8     DType = 5
	UINT16    DType = 6
	INT32     DType = 7
	INVALID   DType = 8
)

var dtypeNames = [...]string{"BFLOAT16", "FLOAT32", "UINT32", "BFLOAT8_B", "BFLOAT4_B", "UINT8", "UINT16", "INT32", "INVALID"}

// String returns the ttnn enum name (BFLOAT16, BFLOAT8_B, ...), the name used
// in cache file names.
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ParseDType maps a ttnn enum name such as "BFLOAT8_B" to its DType.
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if n == s {
			return DType(i), nil
		}
	}
	return INVALID, fmt.Errorf("unknown dtype %q", s)
}

// ElementSize returns the size in bytes of one element for plain (non block
// float) types, and 0 for BFLOAT8_B, BFLOAT4_B and unknown types.
func (d DType) ElementSize() int {
	switch d {
	case BFLOAT16, UINT16:
		return 2
	case FLOAT32, UINT32, INT32:
		return 4
	case UINT8:
		return 1
	}
	return 0
}

// TileBytes returns the size of one 32x32 tile of d: 2048 for BFLOAT16, 4096
// for FLOAT32, UINT32 and INT32, 1088 for BFLOAT8_B, 576 for BFLOAT4_B, 1024
// for UINT8, and 0 for INVALID or unknown types.
func (d DType) TileBytes() int {
	switch d {
	case BFLOAT8_B:
		return BFP8TileBytes
	case BFLOAT4_B:
		return BFP4TileBytes
	}
	return TileElems * d.ElementSize()
}

// Layout is a ttnn tensor layout.
type Layout uint8

// Layouts. The numeric values are not stored in files (the FlatBuffer uses a
// page_config union instead).
const (
	ROW_MAJOR Layout = 0
	TILE      Layout = 1
)

// String returns the ttnn enum name: ROW_MAJOR or TILE.
func (l Layout) String() string {
	switch l {
	case ROW_MAJOR:
		return "ROW_MAJOR"
	case TILE:
		return "TILE"
	}
	return fmt.Sprintf("Layout(%d)", uint8(l))
}

// ParseLayout maps "TILE" or "ROW_MAJOR" to its Layout.
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "TILE":
		return TILE, nil
	case "ROW_MAJOR":
		return ROW_MAJOR, nil
	}
	return 0, fmt.Errorf("unknown layout %q", s)
}

// RoundUp returns n rounded up to a multiple of m (m > 0).
func RoundUp(n, m int) int {
	return (n + m - 1) / m * m
}

// ShardBytes returns the size in bytes of the host buffer of one shard of
// logical shape `shape` (the last two dims are the matrix, leading dims are
// folded into rows). For TILE it is (rows_pad/32)*(W_pad/32)*TileBytes, where
// rows_pad = prod(outer dims)*H_pad; for ROW_MAJOR it is prod(shape)*element
// size. It returns an error for combinations that have no defined size
// (ROW_MAJOR block floats, unknown dtypes, negative dims).
func ShardBytes(shape []int, dt DType, layout Layout) (int64, error) {
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
	}
	switch layout {
	case TILE:
		if dt.TileBytes() == 0 {
			return 0, fmt.Errorf("no tile size for dtype %v", dt)
		}
		o, h, w := TileView(shape)
		outer := int64(o)
		tiles := outer * int64(RoundUp(h, TileDim)/TileDim) * int64(RoundUp(w, TileDim)/TileDim)
		return tiles * int64(dt.TileBytes()), nil
	case ROW_MAJOR:
		es := dt.ElementSize()
		if es == 0 {
			return 0, fmt.Errorf("dtype %v has no row-major element size", dt)
		}
		n := int64(es)
		for _, d := range shape {
			n *= int64(d)
		}
		return n, nil
	}
	return 0, fmt.Errorf("unknown layout %v", layout)
}

// TileView is how a TILE tensor of the given shape is laid out: outer
// matrices (the product of all but the last two dims) of h rows and w
// columns; a rank-1 shape is one row, a rank-0 shape one element.
func TileView(shape []int) (outer, h, w int) {
	outer, h, w = 1, 1, 1
	switch len(shape) {
	case 0:
	case 1:
		w = shape[0]
	default:
		h, w = shape[len(shape)-2], shape[len(shape)-1]
		for _, d := range shape[:len(shape)-2] {
			outer *= d
		}
	}
	return outer, h, w
}

package numfmt

// DType is a safetensors dtype string such as "BF16" or "F8_E4M3".
// A DType that the format table does not know is kept as read, so that it
// can be listed; Known reports whether it is one of the 22 standard dtypes.
type DType string

// The safetensors dtypes, in the reference writer's enum (alignment) order.
const (
	BOOL       DType = "BOOL"
	F4         DType = "F4"
	F6E2M3     DType = "F6_E2M3"
	F6E3M2     DType = "F6_E3M2"
	U8         DType = "U8"
	I8         DType = "I8"
	F8E5M2     DType = "F8_E5M2"
	F8E4M3     DType = "F8_E4M3"
	F8E8M0     DType = "F8_E8M0"
	F8E4M3FNUZ DType = "F8_E4M3FNUZ"
	F8E5M2FNUZ DType = "F8_E5M2FNUZ"
	I16        DType = "I16"
	U16        DType = "U16"
	F16        DType = "F16"
	BF16       DType = "BF16"
	I32        DType = "I32"
	U32        DType = "U32"
	F32        DType = "F32"
	C64        DType = "C64"
	F64        DType = "F64"
	I64        DType = "I64"
	U64        DType = "U64"
)

type dtypeInfo struct {
	bits  int
	order int
}

// dtypeTable is the complete table of safetensors dtypes. It is
// never written after initialisation.
var dtypeTable = map[DType]dtypeInfo{
	BOOL: {8, 0}, F4: {4, 1}, F6E2M3: {6, 2}, F6E3M2: {6, 3}, U8: {8, 4}, I8: {8, 5},
	F8E5M2: {8, 6}, F8E4M3: {8, 7}, F8E8M0: {8, 8}, F8E4M3FNUZ: {8, 9}, F8E5M2FNUZ: {8, 10},
	I16: {16, 11}, U16: {16, 12}, F16: {16, 13}, BF16: {16, 14}, I32: {32, 15}, U32: {32, 16},
	F32: {32, 17}, C64: {64, 18}, F64: {64, 19}, I64: {64, 20}, U64: {64, 21},
}

// AllDTypes returns the standard dtypes in enum order.
func AllDTypes() []DType {
	out := make([]DType, len(dtypeTable))
	for d, info := range dtypeTable {
		out[info.order] = d
	}
	return out
}

// Known reports whether d is a standard safetensors dtype.
func (d DType) Known() bool { _, ok := dtypeTable[d]; return ok }

// Bits is the size of one element in bits (0 for an unknown dtype).
func (d DType) Bits() int { return dtypeTable[d].bits }

// Order is the dtype's position in the reference writer's enum order, which
// is also increasing alignment; unknown dtypes sort last.
func (d DType) Order() int {
	if info, ok := dtypeTable[d]; ok {
		return info.order
	}
	return len(dtypeTable)
}

// IsFloat reports whether values of d can be decoded to float32 by this package.
func (d DType) IsFloat() bool {
	switch d {
	case BF16, F16, F32, F64, F8E4M3, F8E5M2, F8E8M0:
		return true
	}
	return false
}

// String is the dtype's safetensors name, e.g. "BF16".
func (d DType) String() string { return string(d) }

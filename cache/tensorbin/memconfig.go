package tensorbin

import (
	"strconv"

	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// MemoryLayout is ttnn's TensorMemoryLayout (FlatBuffer enum, ushort).
type MemoryLayout uint16

// Memory layouts.
const (
	Interleaved   MemoryLayout = 0
	HeightSharded MemoryLayout = 2
	WidthSharded  MemoryLayout = 3
	BlockSharded  MemoryLayout = 4
)

// String returns the FlatBuffer enum name.
func (m MemoryLayout) String() string {
	switch m {
	case Interleaved:
		return "Interleaved"
	case HeightSharded:
		return "HeightSharded"
	case WidthSharded:
		return "WidthSharded"
	case BlockSharded:
		return "BlockSharded"
	}
	return "MemoryLayout(" + strconv.Itoa(int(m)) + ")"
}

// BufferType is ttnn's BufferType (FlatBuffer enum, ushort).
type BufferType uint16

// Buffer types.
const (
	DRAM         BufferType = 0
	L1           BufferType = 1
	SystemMemory BufferType = 2
	L1Small      BufferType = 3
	Trace        BufferType = 4
)

// String returns the FlatBuffer enum name.
func (b BufferType) String() string {
	switch b {
	case DRAM:
		return "DRAM"
	case L1:
		return "L1"
	case SystemMemory:
		return "SystemMemory"
	case L1Small:
		return "L1Small"
	case Trace:
		return "Trace"
	}
	return "BufferType(" + strconv.Itoa(int(b)) + ")"
}

// ShardOrientation is the order in which shards map onto a core grid.
type ShardOrientation uint8

// Shard orientations.
const (
	RowMajorOrientation ShardOrientation = 0
	ColMajorOrientation ShardOrientation = 1
)

// CoreCoord is a core (or DRAM bank) coordinate.
type CoreCoord struct{ X, Y int32 }

// CoreRange is an inclusive rectangle of cores.
type CoreRange struct{ Start, End CoreCoord }

// ShardSpec is the legacy (2-D) shard specification of a sharded memory
// config. The writer never stores shard_mode (always Physical=0) nor a
// physical shard shape.
type ShardSpec struct {
	Grid        []CoreRange
	ShapeH      uint32
	ShapeW      uint32
	Orientation ShardOrientation
}

// NdShardSpec is the N-dimensional shard specification.
type NdShardSpec struct {
	ShardShape           []uint32
	Grid                 []CoreRange
	Orientation          ShardOrientation
	DistributionStrategy uint8 // RoundRobin1D, or the value a file holds
}

// RoundRobin1D is the ROUND_ROBIN_1D shard distribution strategy of an
// NdShardSpec, the one WidthShardedConfig writes.
const RoundRobin1D uint8 = 0

// MemoryConfig is the memory config recorded in a file's TensorSpec; the
// loader places the tensor on device with it.
type MemoryConfig struct {
	Layout                 MemoryLayout
	Buffer                 BufferType
	ShardSpec              *ShardSpec
	NdShardSpec            *NdShardSpec
	CreatedWithNdShardSpec bool
}

// InterleavedConfig returns the default memory config (DRAM, interleaved).
func InterleavedConfig() MemoryConfig {
	return MemoryConfig{Layout: Interleaved, Buffer: DRAM}
}

// WidthShardedConfig returns the WIDTH_SHARDED DRAM config that the qwen36
// model code (create_dram_sharded_mem_config) uses for ".dramshard" weights
// of per-device shape [k, n]: grid cores (0,0)..(7,0) (the 8 DRAM banks),
// shard shape (k, RoundUp(n, 256)/8), row-major orientation. ttnn derives an
// nd_shard_spec from that legacy shard spec and serializes both (same shard
// shape, grid and orientation, ROUND_ROBIN_1D distribution,
// created_with_nd_shard_spec false), as ttnn 0.81.1 writes it: the interop
// suite (.ci/interop/ttnn) compares the files byte for byte.
func WidthShardedConfig(k, n int) MemoryConfig {
	grid := []CoreRange{{Start: CoreCoord{0, 0}, End: CoreCoord{7, 0}}}
	w := uint32(tile.RoundUp(n, 256) / 8)
	return MemoryConfig{
		Layout: WidthSharded,
		Buffer: DRAM,
		ShardSpec: &ShardSpec{
			Grid:        grid,
			ShapeH:      uint32(k),
			ShapeW:      w,
			Orientation: RowMajorOrientation,
		},
		NdShardSpec: &NdShardSpec{
			ShardShape:           []uint32{uint32(k), w},
			Grid:                 grid,
			Orientation:          RowMajorOrientation,
			DistributionStrategy: RoundRobin1D,
		},
	}
}

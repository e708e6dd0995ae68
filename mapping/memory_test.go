package mapping_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanMemory(t *testing.T) {
	t.Parallel()
	entries := []*mapping.Entry{
		// sharded: each of 2 devices holds 2x4 bf16 = 16 bytes
		{Target: "a", File: "D/c/a.tensorbin", DType: "BFLOAT16", Layout: "ROW_MAJOR", DeviceShape: []int64{2, 4}, Shards: make([][]mapping.Piece, 2), Devices: 2},
		// replicated: each device holds the whole 4x4 bf16 = 32 bytes, stored once
		{Target: "b", File: "D/c/b.tensorbin", DType: "BFLOAT16", Layout: "ROW_MAJOR", DeviceShape: []int64{4, 4}, Shards: make([][]mapping.Piece, 1), Devices: 2},
		// TILE bfp8: 32x40 pads to 1x2 tiles of 1088 bytes
		{Target: "c", File: "D/c/c.tensorbin", DType: "BFLOAT8_B", Layout: "TILE", DeviceShape: []int64{32, 40}, Shards: make([][]mapping.Piece, 2), Devices: 2},
	}
	per := int64(16 + 32 + 2*1088)
	for _, tc := range []struct {
		name     string
		device   string
		dram     int64
		wantDRAM int64
		fits     *bool
	}{
		{"P300 board", "P300", 0, 32 << 30, ptr(true)},
		{"N300 board", "N300", 0, 12 << 30, ptr(true)},
		{"--device-dram overrides", "P300", per - 1, per - 1, ptr(false)},
		{"exact fit", "LAB", per, per, ptr(true)},
		{"unknown board", "LAB", 0, 0, nil},
	} {
		pl := &mapping.Plan{Mesh: mapping.Mesh{Rows: 1, Cols: 2}, Device: tc.device, Entries: entries}
		m, err := pl.Memory(tc.dram)
		require.NoError(t, err, tc.name)
		require.Len(t, m.PerDevice, 2, tc.name)
		for d, db := range m.PerDevice {
			assert.Equal(t, []int{0, d}, db.Coord, tc.name)
			assert.Equal(t, per, db.Bytes, tc.name)
			assert.Equal(t, 3, db.Tensors, tc.name)
			assert.Equal(t, "c", db.Largest, tc.name)
			assert.Equal(t, int64(2*1088), db.LargestBytes, tc.name)
		}
		assert.Equal(t, "D/c/c.tensorbin", m.LargestFile, tc.name)
		assert.Equal(t, int64(2*2*1088), m.LargestFileBytes, tc.name)
		assert.Equal(t, tc.wantDRAM, m.DRAM, tc.name)
		if tc.fits == nil {
			assert.Nil(t, m.Fits, tc.name)
			assert.Nil(t, m.Headroom, tc.name)
			continue
		}
		require.NotNil(t, m.Fits, tc.name)
		assert.Equal(t, *tc.fits, *m.Fits, tc.name)
		assert.Equal(t, tc.wantDRAM-per, *m.Headroom, tc.name)
	}
	// A mesh of more devices than the board has chips: the bytes per
	// device, no verdict, and why (#36 D4).
	m, err := (&mapping.Plan{Mesh: mapping.Mesh{Rows: 1, Cols: 2}, Device: "N150", Entries: entries}).Memory(0)
	require.NoError(t, err)
	assert.Equal(t, per, m.PerDevice[1].Bytes)
	assert.Nil(t, m.Fits)
	assert.Nil(t, m.PerDevice[0].Fits)
	assert.Equal(t, "a 1x2 mesh has 2 devices, and N150 has 1 chip(s)", m.NotJudged)
	_, err = (&mapping.Plan{Mesh: mapping.Mesh{Rows: 1, Cols: 1}, Entries: []*mapping.Entry{{Target: "x", DType: "NOPE", Layout: "TILE"}}}).Memory(0)
	assert.ErrorContains(t, err, "target x: ")
}

// TestPlanMemory27B: the real 27B FP8 layout on two Blackhole chips (P300)
// fits, each chip holding less than one device alone would.
func TestPlanMemory27B(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "fp8", nil)
	c := open(t, dir)
	var one int64
	for _, mesh := range []mapping.Mesh{{Rows: 1, Cols: 1}, {Rows: 1, Cols: 2}} {
		pl, err := mapping.BuildWith(c, builtin(t), mesh, nil, nil)
		require.NoError(t, err)
		m, err := pl.Memory(32 << 30)
		require.NoError(t, err)
		require.Len(t, m.PerDevice, mesh.Devices())
		b := m.PerDevice[0].Bytes
		for _, d := range m.PerDevice {
			assert.Equal(t, b, d.Bytes, "every device holds the same")
		}
		t.Logf("27B FP8 on %s: %d bytes per device (%.2f GiB), largest %s %d", mesh, b, float64(b)/(1<<30), m.PerDevice[0].Largest, m.PerDevice[0].LargestBytes)
		if mesh.Devices() == 1 {
			one = b
			continue
		}
		assert.Less(t, b, one, "TP splits the sharded weights")
		assert.True(t, *m.Fits, "27B FP8 fits two 32 GiB Blackhole chips")
	}
}

func ptr[T any](v T) *T { return &v }

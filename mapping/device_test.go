package mapping_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arch string
		n    int
		want string
	}{
		{mapping.ArchBlackhole, 1, "P150"},
		{mapping.ArchBlackhole, 2, "P300"},
		{mapping.ArchBlackhole, 4, "P150x4"},
		{mapping.ArchBlackhole, 8, "P150x8"},
		{mapping.ArchBlackhole, 32, "BHGLX"},
		{mapping.ArchWormhole, 1, "N150"},
		{mapping.ArchWormhole, 2, "N300"},
		{mapping.ArchWormhole, 4, "N150x4"},
		{mapping.ArchWormhole, 8, "T3K"},
		{mapping.ArchWormhole, 32, "TG"},
	} {
		got, err := mapping.DeviceName(tc.arch, tc.n)
		require.NoError(t, err, "%s %d", tc.arch, tc.n)
		assert.Equal(t, tc.want, got, "%s %d", tc.arch, tc.n)
	}
	_, err := mapping.DeviceName(mapping.ArchBlackhole, 3)
	require.ErrorContains(t, err, "no blackhole device folder for 3 devices")
	require.ErrorContains(t, err, "1, 2, 4, 8, 32")
	_, err = mapping.DeviceName("grayskull", 1)
	require.ErrorContains(t, err, "unknown device architecture")
}

func TestDeviceForAndOverrides(t *testing.T) {
	t.Parallel()
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	for cols, want := range map[int]string{1: "P150", 2: "P300", 4: "P150x4", 8: "P150x8"} {
		got, err := p.DeviceFor(mapping.Mesh{Rows: 1, Cols: cols})
		require.NoError(t, err)
		assert.Equal(t, want, got, "1x%d", cols)
	}
	// MESH_DEVICE names the folder where set; --device wins over it.
	for _, tc := range []struct {
		opt  mapping.PlanOptions
		want string
	}{
		{mapping.PlanOptions{}, "P300"},
		{mapping.PlanOptions{MeshDevice: "P300x2"}, "P300x2"},
		{mapping.PlanOptions{MeshDevice: "P300x2", Device: "P150x4"}, "P150x4"},
	} {
		prof, err := tc.opt.LoadProfile()
		require.NoError(t, err)
		got, err := prof.DeviceFor(mapping.Mesh{Rows: 1, Cols: 2})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%+v", tc.opt)
	}
	for _, bad := range []string{"../x", "a/b", "..", "(1, 4)"} {
		_, err := mapping.PlanOptions{MeshDevice: bad}.LoadProfile()
		require.ErrorContains(t, err, "want one path element", bad)
	}
}

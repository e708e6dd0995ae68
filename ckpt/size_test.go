package ckpt_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"4G", 4_000_000_000}, {"4Gi", 4 << 30}, {"4GiB", 4 << 30}, {"4GB", 4_000_000_000},
		{"2GB", 2_000_000_000}, {"500MiB", 500 << 20}, {"1.5gb", 1_500_000_000}, {"100", 100}, {"0", 0},
		{"64KiB", 64 << 10}, {"64k", 64_000}, {"5G", 5_000_000_000}, {"1TiB", 1 << 40}, {"1T", 1e12},
		{" 10 MB ", 10_000_000}, {"7B", 7}, {" 2 kib ", 2048}, {"3Mi", 3 << 20},
	} {
		got, err := ckpt.ParseSize(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	for _, bad := range []string{"", "GB", "GiB", "-1GB", "2XB", "1e3", "4 parsecs", "1e30TiB", "99999999TiB"} {
		_, err := ckpt.ParseSize(bad)
		assert.ErrorContains(t, err, "invalid size", bad)
	}
}

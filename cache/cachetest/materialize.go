package cachetest

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/stretchr/testify/require"
)

// CheckAgainstMaterialize decodes every file of a built cache and compares
// it with Entry.Materialize: bytes equal to packing the materialised shard
// with pack (build.PackShard), and decoded values within the format's error.
func CheckAgainstMaterialize(t *testing.T, c *ckpt.Checkpoint, plan *mapping.Plan, out string, pack func(e *mapping.Entry, values []float32) ([]byte, error)) {
	t.Helper()
	ctx := context.Background()
	for _, e := range plan.Entries {
		path := filepath.Join(out, filepath.FromSlash(e.File))
		f, err := os.Open(path)
		require.NoError(t, err, e.Target)
		st, err := f.Stat()
		require.NoError(t, err)
		h, err := tensorbin.ReadTensorbinHeader(f, st.Size())
		require.NoError(t, err, e.Target)
		want, err := cache.HeaderFor(e)
		require.NoError(t, err)
		require.Empty(t, cache.DiffHeaders(want, h), e.Target)
		require.Equal(t, want.FileSize(), st.Size(), e.Target)
		shards, shape, err := e.Materialize(ctx, c)
		require.NoError(t, err, e.Target)
		require.Len(t, h.Shards, len(shards), e.Target)
		for i, vals := range shards {
			got, err := io.ReadAll(tensorbin.ShardSection(f, h, i))
			require.NoError(t, err)
			exp, err := pack(e, vals)
			require.NoError(t, err)
			require.True(t, bytes.Equal(exp, got), "%s shard %d: bytes differ from packing Materialize's output", e.Target, i)
			checkDecoded(t, e, h.Spec.DType, h.Spec.Layout, shape, vals, got)
		}
		f.Close()
	}
}

// checkDecoded decodes a shard (untilizing TILE data) and checks each
// value against the materialised one within the format's error: exact for
// bf16-representable values in BFLOAT16, else one unit in the last place
// of the 16-value face row's shared exponent (bounded by the row's largest
// magnitude times 2^-6 for BFLOAT8_B, 2^-2 for BFLOAT4_B).
func checkDecoded(t *testing.T, e *mapping.Entry, dt tile.DType, layout tile.Layout, shape []int64, want []float32, data []byte) {
	t.Helper()
	n := len(want)
	got := make([]float32, n)
	if layout == tile.ROW_MAJOR {
		require.Equal(t, tile.BFLOAT16, dt)
		for i := range got {
			got[i] = numfmt.BF16ToF32(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
		}
	} else {
		h, w, outer := 1, int(shape[len(shape)-1]), 1
		if len(shape) >= 2 {
			h = int(shape[len(shape)-2])
			for _, d := range shape[:len(shape)-2] {
				outer *= int(d)
			}
		}
		per := tile.TilesBytes(dt, h, w)
		for o := 0; o < outer; o++ {
			require.NoError(t, tile.UnpackTiles(dt, got[o*h*w:(o+1)*h*w], data[o*per:], h, w))
		}
	}
	w := int(shape[len(shape)-1])
	rel := map[tile.DType]float64{tile.BFLOAT16: 1.0 / 256, tile.BFLOAT8_B: 1.0 / 64, tile.BFLOAT4_B: 1.0 / 4}[dt]
	// Face rows: 16 values of a row from a column that is a multiple of 16
	// (a row's last one may be shorter when w is not a multiple of 16).
	for i0 := 0; i0 < n; {
		row := i0 / w
		end := min(i0+16, (row+1)*w, n)
		next := end
		var amax float64
		for i := i0; i < end; i++ {
			amax = math.Max(amax, math.Abs(float64(want[i])))
		}
		for i := i0; i < end; i++ {
			d := math.Abs(float64(got[i]) - float64(want[i]))
			// require only on failure: a call per value costs seconds.
			if dt == tile.BFLOAT16 {
				if d > math.Abs(float64(want[i]))*rel {
					require.LessOrEqual(t, d, math.Abs(float64(want[i]))*rel, "%s value %d", e.Target, i)
				}
				continue
			}
			if d > amax*rel {
				require.LessOrEqual(t, d, amax*rel, "%s value %d: got %v want %v", e.Target, i, got[i], want[i])
			}
		}
		i0 = next
	}
}

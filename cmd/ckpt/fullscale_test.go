package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullScale writes the 27B layout of variant (sparse: headers only on
// disk) into a temporary directory.
func fullScale(tb testing.TB, variant string) string {
	tb.Helper()
	dir := tb.TempDir()
	require.NoError(tb, synth.WriteInventory(dir, variant))
	return dir
}

func TestInspectFullScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		variant  string
		tensors  int64
		byDType  map[string][2]int64 // tensors, bytes
		params   map[string]int64
		shards   int
		paramSum int64
	}{
		{"fp8", 1606, map[string][2]int64{"F8_E4M3": {407, 24_699_207_680}, "BF16": {1199, 6_167_455_584}},
			map[string]int64{"F8_E4M3": 24_699_207_680, "BF16": 3_082_220_272}, 66, 27_781_427_952},
		{"bf16", 1199, map[string][2]int64{"BF16": {1199, 55_562_855_904}},
			map[string]int64{"BF16": 27_781_427_952}, 66, 27_781_427_952},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			dir := fullScale(t, tc.variant)
			code, stdout, stderr := runApp(t, "inspect", dir, "--format", "json")
			require.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			var res inspect.Result
			require.NoError(t, json.Unmarshal([]byte(stdout), &res))
			assert.True(t, res.Sharded)
			assert.Len(t, res.Files, tc.shards)
			assert.Len(t, res.Tensors, int(tc.tensors))
			assert.Equal(t, tc.tensors, res.Summary.Tensors)
			assert.Equal(t, tc.params, res.Summary.ParametersByDType)
			assert.Equal(t, tc.paramSum, res.Summary.Parameters)
			got := map[string][2]int64{}
			for _, d := range res.Summary.ByDType {
				got[string(d.DType)] = [2]int64{d.Tensors, d.Bytes}
			}
			assert.Equal(t, tc.byDType, got)
			groups := map[string]int64{}
			for _, g := range res.Summary.ByGroup {
				groups[g.Pattern] = g.Tensors
			}
			if tc.variant == "fp8" {
				assert.Equal(t, map[string]int64{"model.language_model.layers.{0..63}": 1248, "mtp.*": 22, "model.visual.*": 333, "other": 3}, groups)
			} else {
				assert.Equal(t, map[string]int64{"model.language_model.layers.{0..63}": 848, "mtp.*": 15, "model.visual.*": 333, "other": 3}, groups)
			}
			// Natural order: layers.2 before layers.10.
			idx := map[string]int{}
			for i, tn := range res.Tensors {
				idx[tn.Name] = i
			}
			assert.Less(t, idx["model.language_model.layers.2.input_layernorm.weight"], idx["model.language_model.layers.10.input_layernorm.weight"])
		})
	}
}

// countingStore counts the bytes read through it.
type countingStore struct {
	ckpt.Store
	n atomic.Int64
}

type countingBlob struct {
	ckpt.Blob
	n *atomic.Int64
}

func (s *countingStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	b, err := s.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &countingBlob{Blob: b, n: &s.n}, nil
}

func (b *countingBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Blob.ReadAt(p, off)
	b.n.Add(int64(n))
	return n, err
}

// TestInspectFullScaleReadsOnlyHeaders: opening and inspecting the 27B
// layout reads the 8-byte length and header of each shard, the index and
// the config, and nothing else.
func TestInspectFullScaleReadsOnlyHeaders(t *testing.T) {
	t.Parallel()
	dir := fullScale(t, "fp8")
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	defer ds.Close()
	cs := &countingStore{Store: ds}
	c, err := ckpt.OpenStore(context.Background(), cs, "", ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	res := inspect.Of(c, nil)
	require.Len(t, res.Tensors, 1606)
	var limit, data int64
	for _, f := range c.Files {
		limit += 8 + int64(f.Header.Size)
		data += f.Size
	}
	for _, name := range []string{ckpt.IndexFile, "config.json"} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		limit += st.Size()
	}
	assert.LessOrEqual(t, cs.n.Load(), limit)
	assert.Greater(t, cs.n.Load(), limit/2)
	t.Logf("read %d bytes of %d (%.5f%%)", cs.n.Load(), data, 100*float64(cs.n.Load())/float64(data))
}

// BenchmarkInspectFullScale: open the 1606-tensor 27B FP8 layout (66
// shards, headers only), summarise and build the inspect result. Target
// ≤ 100 ms.
func BenchmarkInspectFullScale(b *testing.B) {
	dir := fullScale(b, "fp8")
	ctx := context.Background()
	for b.Loop() {
		c, err := ckpt.Open(ctx, dir, ckpt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		res := inspect.Of(c, nil)
		if len(res.Tensors) != 1606 {
			b.Fatalf("%d tensors", len(res.Tensors))
		}
		c.Close()
	}
}

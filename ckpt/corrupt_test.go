package ckpt_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func allCorrupt() []ckpttest.Corrupt {
	return append(ckpttest.CorruptFiles(), ckpttest.CorruptDirs()...)
}

// TestOpenCorrupt opens every corrupt variant and checks the error: the
// right kind, naming the file, and carrying the expected details.
func TestOpenCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seen := map[string]bool{}
	for _, c := range allCorrupt() {
		require.False(t, seen[c.Name], "duplicate variant name %s", c.Name)
		seen[c.Name] = true
		t.Run(c.Name, func(t *testing.T) {
			src, file, err := c.Write(dir)
			require.NoError(t, err)
			ck, err := ckpt.Open(context.Background(), src, ckpt.Options{})
			require.Error(t, err, "rule: %s", c.Rule)
			msg := err.Error()
			switch c.Kind {
			case ckpttest.Malformed:
				assert.Nil(t, ck)
				assert.ErrorIs(t, err, ckpt.ErrMalformed)
			case ckpttest.NotExist:
				assert.Nil(t, ck)
				assert.ErrorIs(t, err, fs.ErrNotExist)
			case ckpttest.UnknownDType:
				var ue *ckpt.UnknownDTypeError
				require.ErrorAs(t, err, &ue)
				require.NotNil(t, ck, "the known part must still be returned")
				assert.ErrorIs(t, err, ckpt.ErrMalformed)
				defer ck.Close()
			}
			assert.Contains(t, msg, file, "error must name the file")
			for _, w := range c.Want {
				assert.Contains(t, msg, w)
			}
			assert.NotContains(t, msg, "\x1b", "control characters must be escaped")
		})
	}
}

// TestCorruptLenient: with Options.Lenient, index-level integrity problems
// become Issues, the rest stays an error.
func TestCorruptLenient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	issues := map[string]string{
		"missing-shard":  "index.shard_missing",
		"tensor-missing": "index.tensor_missing",
		"dotdot-shard":   "index.shard_name",
		"absolute-shard": "index.shard_name",
		"symlink-out":    "index.shard_missing",
	}
	for _, c := range ckpttest.CorruptDirs() {
		id, ok := issues[c.Name]
		if !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			src, _, err := c.Write(dir)
			require.NoError(t, err)
			ck, err := ckpt.Open(context.Background(), src, ckpt.Options{Lenient: true})
			require.NoError(t, err)
			defer ck.Close()
			require.NotEmpty(t, ck.Issues)
			assert.Equal(t, id, string(ck.Issues[0].ID))
			assert.Equal(t, ckpt.Fail, ck.Issues[0].Status)
			_, ok := ck.Lookup("a")
			assert.True(t, ok, "the readable shard is still listed")
			_, ok = ck.Lookup("b")
			assert.False(t, ok)
		})
	}
}

// TestHugeHeaderDoesNotAllocate: a length field claiming 2^62 bytes is
// refused before any allocation of that size.
func TestHugeHeaderDoesNotAllocate(t *testing.T) {
	for _, n := range []uint64{1 << 62, ckpt.MaxHeaderSize + 1, ^uint64(0), 1 << 63} {
		data := make([]byte, 16)
		for i := 0; i < 8; i++ {
			data[i] = byte(n >> (8 * i))
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		h, err := ckpt.ReadHeader(bytes.NewReader(data), int64(len(data)), "huge.safetensors")
		runtime.ReadMemStats(&after)
		require.Nil(t, h)
		require.ErrorIs(t, err, ckpt.ErrMalformed)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "allocated for N=%d", n)
	}
	// A header length that fits the limit but not the file must not be
	// allocated either (the file size is checked first).
	data := make([]byte, 16)
	data[0], data[1], data[2] = 0x00, 0xe1, 0xf5 // 0xf5e100 = 16,114,944
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ckpt.ReadHeader(bytes.NewReader(data), int64(len(data)), "short.safetensors")
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ckpt.ErrMalformed)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

// TestValidEdgeCases: what the reference crate's tests accept is accepted.
func TestValidEdgeCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, v := range ckpttest.ValidFiles() {
		t.Run(v.Name, func(t *testing.T) {
			h, err := ckpt.ReadHeader(bytes.NewReader(v.Data), int64(len(v.Data)), v.Name)
			require.NoError(t, err)
			assert.Len(t, h.Tensors, v.Tensors)
			var ids []string
			for _, l := range h.Lints {
				ids = append(ids, string(l.ID))
			}
			assert.ElementsMatch(t, v.Lints, ids)
			p := filepath.Join(dir, v.Name+".safetensors")
			require.NoError(t, os.WriteFile(p, v.Data, 0o644))
			c, err := ckpt.Open(context.Background(), p, ckpt.Options{})
			require.NoError(t, err)
			defer c.Close()
			assert.Len(t, c.Tensors, v.Tensors)
		})
	}
}

func TestZeroSizeAndScalarTensors(t *testing.T) {
	t.Parallel()
	for _, v := range ckpttest.ValidFiles() {
		if v.Name != "rank-0" && v.Name != "zero-size" {
			continue
		}
		h, err := ckpt.ReadHeader(bytes.NewReader(v.Data), int64(len(v.Data)), v.Name)
		require.NoError(t, err)
		ti := h.Tensors[0]
		if v.Name == "rank-0" {
			assert.Empty(t, ti.Shape)
			assert.Equal(t, uint64(1), ti.Numel())
			assert.False(t, ckpt.CountsAsParameter(&ti, false), "rank-0 tensors are not parameters (Hub rule)")
		} else {
			assert.Equal(t, uint64(0), ti.Numel())
			assert.Equal(t, uint64(0), ti.NBytes())
		}
	}
}

func TestErrorsWrap(t *testing.T) {
	t.Parallel()
	var fe *ckpt.FormatError
	_, err := ckpt.ParseHeader([]byte(`{"a":1}`), "x.safetensors")
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "x.safetensors", fe.File)
	assert.True(t, errors.Is(err, ckpt.ErrMalformed))
}

// TestDeepNestingBoundedMemory: 20 MB of '[' in an unknown field fails
// fast without growing the decoder's stack (it would reach ~8 bytes per
// level without the nesting limit).
func TestDeepNestingBoundedMemory(t *testing.T) {
	hdr := append([]byte(`{"a":{"x":`), bytes.Repeat([]byte("["), 20<<20)...)
	data := ckpttest.Frame(string(hdr), 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ckpt.ReadHeader(bytes.NewReader(data), int64(len(data)), "deep.safetensors")
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ckpt.ErrMalformed)
	assert.Contains(t, err.Error(), "nested deeper")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(len(data))+8<<20)
}

func TestTensorReadAtBounds(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, ckpt.WriteFile(p, []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.U8, Shape: []int64{4}}, Data: []byte{1, 2, 3, 4}}}, nil))
	c, err := ckpt.Open(context.Background(), p, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	a, _ := c.Lookup("a")
	buf := make([]byte, 2)
	_, err = a.ReadAt(buf, 2)
	require.NoError(t, err)
	assert.Equal(t, []byte{3, 4}, buf)
	for _, off := range []int64{-1, 3, 1 << 62, 1<<63 - 1} {
		_, err = a.ReadAt(buf, off)
		assert.Error(t, err, "offset %d", off)
	}
	v, err := c.Values(a)
	assert.Error(t, err, "U8 is not a float dtype")
	assert.Nil(t, v)
}

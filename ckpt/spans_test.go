package ckpt_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadSpans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7) ^ seed
		}
		return b
	}
	// Writer order: a, b, c back to back (same dtype, natural order).
	mts := []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.U8, Shape: []int64{1000}}, Data: data(1000, 1)},
		{WriteSpec: ckpt.WriteSpec{Name: "b", DType: numfmt.U8, Shape: []int64{100000}}, Data: data(100000, 2)},
		{WriteSpec: ckpt.WriteSpec{Name: "c", DType: numfmt.U8, Shape: []int64{500}}, Data: data(500, 3)},
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), mts, nil))
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	defer ds.Close()
	var mu sync.Mutex
	var reads [][2]int64 // [off, len] of every ReadAt
	hs := &ckpttest.HookStore{Store: ds, OnRead: func(_ string, off int64, n int) {
		mu.Lock()
		reads = append(reads, [2]int64{off, int64(n)})
		mu.Unlock()
	}}
	c, err := ckpt.OpenStore(context.Background(), hs, "", ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	ta, _ := c.Lookup("a")
	tb, _ := c.Lookup("b")
	tc, _ := c.Lookup("c")

	for _, tc := range []struct {
		name      string
		spans     []ckpt.Span
		opt       ckpt.SpanOptions
		reads     int64
		readBytes int64
	}{
		{"overlapping and touching spans of one tensor: one read",
			[]ckpt.Span{{Tensor: tb, Off: 100, Len: 50}, {Tensor: tb, Off: 120, Len: 100}, {Tensor: tb, Off: 220, Len: 10}}, ckpt.SpanOptions{MaxGap: -1}, 1, 130},
		{"a gap below MaxGap is read and dropped",
			[]ckpt.Span{{Tensor: tb, Off: 0, Len: 10}, {Tensor: tb, Off: 1010, Len: 10}}, ckpt.SpanOptions{MaxGap: 1000}, 1, 1020},
		{"a gap above MaxGap splits",
			[]ckpt.Span{{Tensor: tb, Off: 0, Len: 10}, {Tensor: tb, Off: 1011, Len: 10}}, ckpt.SpanOptions{MaxGap: 1000}, 2, 20},
		{"neighbouring tensors merge, in any order",
			[]ckpt.Span{{Tensor: tc, Len: 500}, {Tensor: ta, Len: 1000}, {Tensor: tb, Off: 99990, Len: 10}, {Tensor: tb, Len: 4}}, ckpt.SpanOptions{}, 2, 1514},
		{"MaxRead caps a merged read, but overlapping spans still share one",
			[]ckpt.Span{{Tensor: tb, Off: 0, Len: 600}, {Tensor: tb, Off: 600, Len: 600}, {Tensor: tb, Off: 1000, Len: 10}}, ckpt.SpanOptions{MaxRead: 1000, MaxGap: -1}, 2, 1200},
		{"the same span twice is read once",
			[]ckpt.Span{{Tensor: tc, Len: 500}, {Tensor: tc, Len: 500}}, ckpt.SpanOptions{Workers: 1}, 1, 500},
	} {
		mu.Lock()
		reads = nil
		mu.Unlock()
		res, err := ckpt.ReadSpans(context.Background(), tc.spans, tc.opt)
		require.NoError(t, err, tc.name)
		mu.Lock()
		got := reads
		mu.Unlock()
		var n int64
		for _, r := range got {
			n += r[1]
		}
		assert.Equal(t, tc.readBytes, n, "%s: bytes the blob served", tc.name)
		assert.Len(t, got, int(tc.reads), tc.name)
		for i, s := range tc.spans {
			want := make([]byte, s.Len)
			_, err := s.Tensor.ReadAt(want, s.Off)
			require.NoError(t, err)
			assert.Equal(t, want, res.Data[i], "%s: span %d", tc.name, i)
		}
		st := res.ByFile[ta.File]
		assert.Equal(t, tc.reads, st.Reads, tc.name)
		assert.Equal(t, tc.readBytes, st.Bytes, tc.name)
	}

	_, err = ckpt.ReadSpans(context.Background(), []ckpt.Span{{Tensor: tc, Off: 400, Len: 101}}, ckpt.SpanOptions{})
	assert.ErrorContains(t, err, "outside its 500 bytes")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = ckpt.ReadSpans(ctx, []ckpt.Span{{Tensor: tc, Len: 1}}, ckpt.SpanOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

// TestReadSpansInterleavesFiles: ReadSpans starts the reads of several
// files in turn (the first read of each file, then the second, ...), so
// that the reads in flight spread over the files and their stores (the two
// sides of a sampled diff each bound their own requests in flight) instead
// of queueing behind the reads of the first file.
func TestReadSpansInterleavesFiles(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	open := func(name string) *ckpt.Checkpoint {
		dir := t.TempDir()
		mts := []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "w", DType: numfmt.U8, Shape: []int64{100000}}, Data: make([]byte, 100000)}}
		require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), mts, nil))
		ds, err := ckpt.NewDirStore(dir)
		require.NoError(t, err)
		t.Cleanup(func() { ds.Close() })
		var armed bool
		hs := &ckpttest.HookStore{Store: ds, OnRead: func(string, int64, int) {
			mu.Lock()
			defer mu.Unlock()
			if armed {
				order = append(order, name)
			}
		}}
		c, err := ckpt.OpenStore(context.Background(), hs, "", ckpt.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		mu.Lock()
		armed = true
		mu.Unlock()
		return c
	}
	a, b := open("a"), open("b")
	ta, _ := a.Lookup("w")
	tb, _ := b.Lookup("w")
	var spans []ckpt.Span
	for _, tt := range []*ckpt.Tensor{ta, tb} { // all of a's spans, then all of b's
		for i := int64(0); i < 4; i++ {
			spans = append(spans, ckpt.Span{Tensor: tt, Off: i * 10000, Len: 100})
		}
	}
	_, err := ckpt.ReadSpans(context.Background(), spans, ckpt.SpanOptions{MaxGap: -1, Workers: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "a", "b", "a", "b", "a", "b"}, order)
}

package ckpt_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	byDir, err := ckpt.Open(ctx, dir, ckpt.Options{Workers: 1})
	require.NoError(t, err)
	defer byDir.Close()
	assert.True(t, byDir.Sharded)
	assert.Len(t, byDir.Files, 4)
	assert.Equal(t, dir, byDir.Source)

	byIndex, err := ckpt.Open(ctx, filepath.Join(dir, ckpt.IndexFile), ckpt.Options{})
	require.NoError(t, err)
	defer byIndex.Close()
	assert.Equal(t, names(byDir.Tensors), names(byIndex.Tensors))

	// One shard on its own: a single file, with the directory's config.
	shard, err := ckpt.Open(ctx, filepath.Join(dir, "model-00003-of-00004.safetensors"), ckpt.Options{})
	require.NoError(t, err)
	defer shard.Close()
	assert.False(t, shard.Sharded)
	assert.NotNil(t, shard.Config.Quantization())
	for _, tn := range shard.Tensors {
		g, _, _ := ckpt.GroupOf(tn.Name)
		assert.Equal(t, ckpt.GroupMTP, g)
	}

	// Tensors are in natural order and each lookup finds its shard's entry.
	for i := 1; i < len(byDir.Tensors); i++ {
		assert.True(t, ckpt.NaturalLess(byDir.Tensors[i-1].Name, byDir.Tensors[i].Name))
	}
	for _, tn := range byDir.Tensors {
		got, ok := byDir.Lookup(tn.Name)
		require.True(t, ok)
		h, ok := got.File.Header.Lookup(tn.Name)
		require.True(t, ok)
		assert.Equal(t, h.Begin, tn.Begin)
		assert.Equal(t, got.File.Header.DataStart()+int64(tn.Begin), tn.Offset())
	}

	// Concurrent reads of the same tensor agree.
	w, _ := byDir.Lookup("model.language_model.layers.1.mlp.down_proj.weight")
	want := make([]byte, w.NBytes())
	_, err = w.ReadAt(want, 0)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			buf := make([]byte, 1000)
			off := int64(g * 997)
			_, err := w.ReadAt(buf, off)
			assert.NoError(t, err)
			assert.Equal(t, want[off:off+1000], buf)
		})
	}
	wg.Wait()
	sec := w.Section()
	assert.Equal(t, int64(w.NBytes()), sec.Size())
}

func TestOpenCanceled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := ckpt.Open(ctx, dir, ckpt.Options{})
	assert.Nil(t, c)
	assert.ErrorIs(t, err, context.Canceled)
}

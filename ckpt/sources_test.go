package ckpt_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unlisted is a directory store that cannot list (like an HTTP store) and
// fails to open the files in fail with their error.
type unlisted struct {
	*ckpt.DirStore
	fail map[string]error
}

func (s unlisted) List(context.Context) ([]string, error) { return nil, nil }

func (s unlisted) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	if err, ok := s.fail[name]; ok {
		return nil, err
	}
	return s.DirStore.Open(ctx, name)
}

// TestOpenStoreIndexFailure: a store that cannot list falls back from the
// index to model.safetensors only when the index does not exist.
func TestOpenStoreIndexFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	data, err := os.ReadFile(filepath.Join(dir, "model-00001-of-00004.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), data, 0o644))
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	defer ds.Close()
	ctx := context.Background()

	refused := errors.New("GET .../model.safetensors.index.json: 503 Service Unavailable")
	_, err = ckpt.OpenStore(ctx, unlisted{ds, map[string]error{ckpt.IndexFile: refused}}, "", ckpt.Options{})
	require.ErrorIs(t, err, refused)

	c, err := ckpt.OpenStore(ctx, unlisted{ds, map[string]error{ckpt.IndexFile: fs.ErrNotExist}}, "", ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	assert.False(t, c.Sharded)
	assert.Equal(t, "model.safetensors", c.Files[0].Name)
}

// TestOpenSingleBesideIndex: a listable store with an index and a
// model.safetensors records the index.single_file warning; an index that
// lists model.safetensors alone does not.
func TestOpenSingleBesideIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	data, err := os.ReadFile(filepath.Join(dir, "model-00001-of-00004.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), data, 0o644))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.Len(t, c.Issues, 1)
	assert.Equal(t, "index.single_file", string(c.Issues[0].ID))
	assert.Equal(t, ckpt.Warn, c.Issues[0].Status)
	assert.Contains(t, c.Issues[0].Message, "ckpt reads the index")

	// Named explicitly, the index is the user's choice: no warning.
	c2, err := ckpt.Open(context.Background(), filepath.Join(dir, ckpt.IndexFile), ckpt.Options{})
	require.NoError(t, err)
	defer c2.Close()
	assert.Empty(t, c2.Issues)

	// An index whose only shard is model.safetensors: one checkpoint.
	one := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(one, "model.safetensors"), data, 0o644))
	single, err := ckpt.Open(context.Background(), filepath.Join(one, "model.safetensors"), ckpt.Options{})
	require.NoError(t, err)
	idx := `{"metadata": {}, "weight_map": {`
	for i, tn := range single.Tensors {
		if i > 0 {
			idx += ","
		}
		idx += `"` + tn.Name + `": "model.safetensors"`
	}
	single.Close()
	require.NoError(t, os.WriteFile(filepath.Join(one, ckpt.IndexFile), []byte(idx+"}}"), 0o644))
	c3, err := ckpt.Open(context.Background(), one, ckpt.Options{})
	require.NoError(t, err)
	defer c3.Close()
	assert.True(t, c3.Sharded)
	assert.Empty(t, c3.Issues)
}

// wrapped is a directory store whose blobs are not the local file blobs
// (as an HTTP store's are not).
type wrapped struct{ *ckpt.DirStore }

type wrappedBlob struct{ ckpt.Blob }

func (s wrapped) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	b, err := s.DirStore.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return wrappedBlob{b}, nil
}

// TestTensorLocal: the tensors of a local directory are Local, those of
// another store are not.
func TestTensorLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	local, err := ckpt.Open(ctx, dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { local.Close() })
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	other, err := ckpt.OpenStore(ctx, wrapped{ds}, "", ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	require.NotEmpty(t, local.Tensors)
	require.Len(t, other.Tensors, len(local.Tensors))
	for i := range local.Tensors {
		assert.True(t, local.Tensors[i].Local(), local.Tensors[i].Name)
		assert.False(t, other.Tensors[i].Local(), other.Tensors[i].Name)
	}
}

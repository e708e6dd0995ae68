package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

var (
	pairOnce         sync.Once
	pairDir          string
	pairBase, pairFT string
	pairErr          error
)

// fixturePair writes the small base / fine-tune pair once per test binary.
func fixturePair(t testing.TB) (base, ft string) {
	t.Helper()
	pairOnce.Do(func() {
		pairDir, pairErr = os.MkdirTemp("", "verify-fixture-")
		if pairErr == nil {
			pairBase, pairFT, pairErr = synth.Pair(pairDir)
		}
	})
	require.NoError(t, pairErr)
	return pairBase, pairFT
}

// copyDir copies a fixture directory so that a test can mutate it.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		in, err := os.Open(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		out, err := os.Create(filepath.Join(dst, e.Name()))
		require.NoError(t, err)
		_, err = io.Copy(out, in)
		require.NoError(t, err)
		in.Close()
		require.NoError(t, out.Close())
	}
	return dst
}

// shardOf returns the shard file holding name, from the index.
func shardOf(t testing.TB, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ckpt.IndexFile))
	require.NoError(t, err)
	idx, err := ckpt.ParseIndex(data, ckpt.IndexFile)
	require.NoError(t, err)
	for _, e := range idx.WeightMap {
		if e.Tensor == name {
			return e.File
		}
	}
	t.Fatalf("tensor %s not in the index", name)
	return ""
}

// rewriteShard reads the shard holding name, lets edit change its tensors
// and writes it back.
func rewriteShard(t testing.TB, dir, name string, edit func([]ckpt.MemTensor) []ckpt.MemTensor) {
	t.Helper()
	path := filepath.Join(dir, shardOf(t, dir, name))
	b, err := ckpt.OpenFileBlob(path)
	require.NoError(t, err)
	h, err := ckpt.ReadHeader(b, b.Size(), path)
	require.NoError(t, err)
	var ts []ckpt.MemTensor
	for _, ti := range h.Tensors {
		data := make([]byte, ti.NBytes())
		_, err := b.ReadAt(data, h.DataStart()+int64(ti.Begin))
		require.NoError(t, err)
		ts = append(ts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: ti.Name, DType: ti.DType, Shape: ti.Shape}, Data: data})
	}
	b.Close()
	ts = edit(ts)
	require.NoError(t, ckpt.WriteFile(path, ts, h.Metadata))
}

// editTensor changes one tensor of a shard in place.
func editTensor(t testing.TB, dir, name string, f func(*ckpt.MemTensor)) {
	t.Helper()
	found := false
	rewriteShard(t, dir, name, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
		for i := range ts {
			if ts[i].Name == name {
				f(&ts[i])
				found = true
			}
		}
		return ts
	})
	require.True(t, found, "tensor %s", name)
}

// editJSON rewrites a JSON file of the fixture.
func editJSON(t testing.TB, path string, f func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	f(m)
	out, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

func editIndex(t testing.TB, dir string, f func(wm map[string]any, meta map[string]any)) {
	editJSON(t, filepath.Join(dir, ckpt.IndexFile), func(m map[string]any) {
		f(m["weight_map"].(map[string]any), m["metadata"].(map[string]any))
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pairDir != "" {
		os.RemoveAll(pairDir)
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

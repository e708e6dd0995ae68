package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeCache is a store from a Hugging Face cache: it knows the expected
// SHA-256 of files and which files are partial downloads.
type fakeCache struct {
	ckpt.Store
	sums    map[string]string
	partial []string
}

func (f *fakeCache) ExpectedSHA256(name string) (string, bool)     { s, ok := f.sums[name]; return s, ok }
func (f *fakeCache) Partial(ctx context.Context) ([]string, error) { return f.partial, nil }

func fileSum(t *testing.T, p string) string {
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func TestCacheStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	defer ds.Close()
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	require.NotEmpty(t, shards)
	sums := map[string]string{}
	for _, s := range shards {
		sums[filepath.Base(s)] = fileSum(t, s)
	}
	bad := filepath.Base(shards[1])
	sums[bad] = strings.Repeat("0", 64)
	fc := &fakeCache{Store: ds, sums: sums, partial: []string{"model-00009-of-00009.safetensors"}}
	c, err := ckpt.OpenStore(context.Background(), fc, "", ckpt.Options{Lenient: true})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()

	rep, err := verify.Check(ctx, c, verify.CheckOptions{})
	require.NoError(t, err)
	assert.False(t, rep.OK)
	st := statuses(rep)
	assert.Equal(t, []ckpt.Status{ckpt.Fail}, st["cache.partial"])
	assert.Equal(t, []ckpt.Status{ckpt.Skip}, st["cache.sha256"])
	assert.Contains(t, message(rep, "cache.partial"), "model-00009-of-00009.safetensors")

	rep, err = verify.Check(ctx, c, verify.CheckOptions{ReadData: true})
	require.NoError(t, err)
	st = statuses(rep)
	assert.Equal(t, []ckpt.Status{ckpt.Fail}, st["cache.sha256"])
	assert.Contains(t, message(rep, "cache.sha256"), bad)
	assert.Contains(t, message(rep, "cache.sha256"), strings.Repeat("0", 64))

	fc.partial, sums[bad] = nil, fileSum(t, filepath.Join(dir, bad))
	rep, err = verify.Check(ctx, c, verify.CheckOptions{ReadData: true})
	require.NoError(t, err)
	assert.True(t, rep.OK, rep.Checks)
	assert.Contains(t, message(rep, "cache.sha256"), "4 files match")
}

// An unfinished download that no snapshot file links to fails verify only
// while a file of the checkpoint is missing: blobs/ is shared by every
// revision, and huggingface_hub leaves blobs/<etag>.<id>.incomplete behind
// when a download of another revision is interrupted.
func TestCacheOrphanIncomplete(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	const orphan = "blobs/66391e1a76319cea153f2862675e678231f975005738907256f22cf87cdc5b3e.3d893dd1.incomplete"
	for _, missing := range []bool{false, true} {
		if missing {
			shards, _ := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
			require.NoError(t, os.Remove(shards[0]))
		}
		ds, err := ckpt.NewDirStore(dir)
		require.NoError(t, err)
		c, err := ckpt.OpenStore(context.Background(), &fakeCache{Store: ds, partial: []string{orphan}}, "", ckpt.Options{Lenient: true})
		require.NoError(t, err)
		rep, err := verify.Check(context.Background(), c, verify.CheckOptions{})
		require.NoError(t, err)
		c.Close()
		ds.Close()
		if missing {
			assert.Equal(t, []ckpt.Status{ckpt.Fail}, statuses(rep)["cache.partial"])
			assert.False(t, rep.OK)
			continue
		}
		assert.Equal(t, []ckpt.Status{ckpt.Warn}, statuses(rep)["cache.partial"])
		assert.Contains(t, message(rep, "cache.partial"), orphan)
		assert.True(t, rep.OK, rep.Checks)
	}
}

func statuses(r *verify.Result) map[string][]ckpt.Status {
	m := map[string][]ckpt.Status{}
	for _, c := range r.Checks {
		m[string(c.ID)] = append(m[string(c.ID)], c.Status)
	}
	return m
}

func message(r *verify.Result, id string) string {
	var ms []string
	for _, c := range r.Checks {
		if string(c.ID) == id {
			ms = append(ms, c.Message)
		}
	}
	return strings.Join(ms, "\n")
}

// TestHashesAsContract: the xxh3 of every tensor that Run reads with
// ReadData (what verify --against compares) is what contract.Of records
// with ReadData (what contract --read-data records).
func TestHashesAsContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{Lenient: true})
	require.NoError(t, err)
	defer c.Close()
	k, err := contract.Of(context.Background(), c, contract.OfOptions{ReadData: true, HashOptions: contract.HashOptions{Workers: 3, ChunkSize: 4096}})
	require.NoError(t, err)
	want := map[string]string{}
	for _, e := range k.Tensors {
		want[e.Name] = e.XXH3
	}
	rep, err := verify.Check(context.Background(), c, verify.CheckOptions{ReadData: true, Workers: 2, ChunkSize: 64})
	require.NoError(t, err)
	require.Len(t, rep.Hashes, len(c.Tensors))
	assert.Equal(t, want, rep.Hashes)
}

// countingStore counts the bytes read through its blobs.
type countingStore struct {
	ckpt.Store
	n *atomic.Int64
}

type countingBlob struct {
	ckpt.Blob
	n *atomic.Int64
}

func (s countingStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	b, err := s.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingBlob{b, s.n}, nil
}

func (b countingBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Blob.ReadAt(p, off)
	b.n.Add(int64(n))
	return n, err
}

// TestCacheSHA256ReadsOnce checks that verify --read-data on a source with
// recorded digests reads each shard once: the SHA-256 is computed from the
// bytes streamed for the tensor checks (plus the few header bytes).
func TestCacheSHA256ReadsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	defer ds.Close()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	sums := map[string]string{}
	var total int64
	for _, e := range entries {
		sums[e.Name()] = fileSum(t, filepath.Join(dir, e.Name()))
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		total += st.Size()
	}
	var n atomic.Int64
	fc := &fakeCache{Store: countingStore{ds, &n}, sums: sums}
	c, err := ckpt.OpenStore(context.Background(), fc, "", ckpt.Options{Lenient: true})
	require.NoError(t, err)
	defer c.Close()
	n.Store(0)
	rep, err := verify.Check(context.Background(), c, verify.CheckOptions{ReadData: true, ChunkSize: 4096})
	require.NoError(t, err)
	assert.True(t, rep.OK, rep.Checks)
	assert.Contains(t, message(rep, "cache.sha256"), fmt.Sprintf("%d files match", len(sums)))
	assert.GreaterOrEqual(t, n.Load(), total)
	assert.Less(t, n.Load(), total+total/10, "bytes read for --read-data with digests: each file once")
}

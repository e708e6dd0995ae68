package source_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const commit = "0123456789abcdef0123456789abcdef01234567"

func TestCacheRoot(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_HUB_CACHE": "/a/hub", "HF_HOME": "/b", "HOME": "/h"}, "/a/hub"},
		{map[string]string{"HF_HOME": "/b", "HOME": "/h"}, "/b/hub"},
		{map[string]string{"HOME": "/h"}, "/h/.cache/huggingface/hub"},
		{map[string]string{"HF_HOME": "~/hf", "HOME": "/h"}, "/h/hf/hub"},
	}
	for _, tc := range cases {
		got, err := source.CacheRoot(mapEnv(tc.env))
		require.NoError(t, err)
		assert.Equal(t, filepath.FromSlash(tc.want), got)
	}
	_, err := source.CacheRoot(mapEnv(nil))
	assert.Error(t, err)
}

func TestParseRepo(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"org/name", "org/name@main", "gpt2", "org/name@refs/pr/1", "org/name@" + commit} {
		_, err := source.ParseRepo(ok)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"", "a/b/c", "../x", "org/..", "org/name@../../etc", "org/name@", "/abs", "org/-x"} {
		_, err := source.ParseRepo(bad)
		assert.Error(t, err, bad)
	}
}

// cacheTree writes the small fixture into a fresh cache as org/model.
func cacheTree(t *testing.T, degraded bool) (root string, repo *sourcetest.CacheRepo) {
	t.Helper()
	root = t.TempDir()
	repo, err := sourcetest.WriteCache(root, "org/model", commit, smallFixture(t), degraded)
	require.NoError(t, err)
	return root, repo
}

func openCache(t *testing.T, root, src string, opt ckpt.Options) (*ckpt.Checkpoint, error) {
	t.Helper()
	return ckpt.Open(context.Background(), src, opt, source.Openers(source.Options{Getenv: mapEnv(map[string]string{"HF_HUB_CACHE": root})})...)
}

func TestCacheOpen(t *testing.T) {
	t.Parallel()
	local, err := ckpt.Open(context.Background(), smallFixture(t), ckpt.Options{})
	require.NoError(t, err)
	defer local.Close()
	for _, degraded := range []bool{false, true} {
		root, _ := cacheTree(t, degraded)
		require.NoError(t, os.MkdirAll(filepath.Join(root, "models--org--model", "refs"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "models--org--model", "refs", "v1"), []byte(commit+"\n"), 0o644))
		for _, src := range []string{"hf:org/model", "hf:org/model@main", "hf:org/model@v1", "hf:org/model@" + commit} {
			c, err := openCache(t, root, src, ckpt.Options{})
			require.NoError(t, err, src)
			assert.Equal(t, src, c.Source)
			require.Len(t, c.Tensors, len(local.Tensors))
			for i, tn := range c.Tensors {
				lt := local.Tensors[i]
				require.Equal(t, lt.Name, tn.Name)
				require.Equal(t, lt.Offset(), tn.Offset())
				a, b := make([]byte, tn.NBytes()), make([]byte, lt.NBytes())
				_, err := tn.ReadAt(a, 0)
				require.NoError(t, err)
				_, err = lt.ReadAt(b, 0)
				require.NoError(t, err)
				require.Equal(t, b, a, tn.Name)
			}
			cs := c.Store.(*source.CacheStore)
			sum, ok := cs.ExpectedSHA256(shard)
			assert.Equal(t, !degraded, ok, "LFS blob digests only through links")
			if ok {
				data, err := os.ReadFile(filepath.Join(smallFixture(t), shard))
				require.NoError(t, err)
				h := sha256.Sum256(data)
				assert.Equal(t, hex.EncodeToString(h[:]), sum)
			}
			p, err := cs.Partial(context.Background())
			require.NoError(t, err)
			assert.Empty(t, p)
			c.Close()
		}
	}
}

func TestCacheErrors(t *testing.T) {
	t.Parallel()
	root, _ := cacheTree(t, false)
	cases := []struct{ src, want string }{
		{"hf:org/missing", "not in the Hugging Face cache"},
		{"hf:org/model@nope", `no ref or snapshot "nope"`},
		{"hf:org/model@" + strings.Repeat("a", 40), "has no snapshot"},
		{"hf:org/model@../../x", "escapes"},
		{"hf:a/b/c", "ORG/NAME"},
	}
	for _, tc := range cases {
		_, err := openCache(t, root, tc.src, ckpt.Options{})
		require.Error(t, err, tc.src)
		assert.Contains(t, err.Error(), tc.want, tc.src)
	}
}

func TestCachePartial(t *testing.T) {
	t.Parallel()
	const second = "model-00002-of-00004.safetensors"
	for _, unlink := range []bool{false, true} {
		root, repo := cacheTree(t, false)
		require.NoError(t, repo.MakeIncomplete(second, unlink))
		_, err := openCache(t, root, "hf:org/model", ckpt.Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "partial download")
		assert.Contains(t, err.Error(), second)

		c, err := openCache(t, root, "hf:org/model", ckpt.Options{Lenient: true})
		require.NoError(t, err)
		require.NotEmpty(t, c.Issues)
		assert.Equal(t, "index.shard_missing", string(c.Issues[0].ID))
		assert.Contains(t, c.Issues[0].Message, "partial download")
		assert.Equal(t, []string{second}, c.Issues[0].Files)
		p, err := c.Store.(ckpt.PartialStore).Partial(context.Background())
		require.NoError(t, err)
		if unlink {
			assert.Equal(t, []string{"blobs/" + repo.Blobs[second] + ".incomplete"}, p)
		} else {
			assert.Equal(t, []string{second}, p)
		}
		_, err = c.Store.Open(context.Background(), second)
		require.ErrorIs(t, err, fs.ErrNotExist)
		var pe *source.PartialError
		require.ErrorAs(t, err, &pe)
		c.Close()
	}
}

func TestCacheConfinement(t *testing.T) {
	t.Parallel()
	root, repo := cacheTree(t, false)
	outside := filepath.Join(root, "secret.safetensors")
	require.NoError(t, os.WriteFile(outside, []byte("x"), 0o644))
	link := filepath.Join(repo.Snapshot, "model-00003-of-00004.safetensors")
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("../../../secret.safetensors", link))
	_, err := openCache(t, root, "hf:org/model", ckpt.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "model-00003-of-00004.safetensors")
	assert.NotContains(t, err.Error(), "partial download")

	s, err := source.OpenCache(root, source.Repo{ID: "org/model"})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Open(context.Background(), "../../../secret.safetensors")
	require.Error(t, err)
	_, ok := s.ExpectedSHA256("model-00003-of-00004.safetensors")
	assert.False(t, ok)
}

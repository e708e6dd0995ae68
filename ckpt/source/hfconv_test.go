package source_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/stretchr/testify/require"
)

func TestHubToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(p, s string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
		return p
	}
	tokPath := write(filepath.Join(dir, "elsewhere", "tok"), "from-path\n")
	write(filepath.Join(dir, "hfhome", "token"), "from-hf-home\n")
	write(filepath.Join(dir, "home", ".cache", "huggingface", "token"), "from-default-home\n")
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_TOKEN": "env", "HF_TOKEN_PATH": tokPath, "HF_HOME": filepath.Join(dir, "hfhome")}, "env"},
		{map[string]string{"HF_TOKEN_PATH": tokPath, "HF_HOME": filepath.Join(dir, "hfhome")}, "from-path"},
		{map[string]string{"HF_HOME": filepath.Join(dir, "hfhome"), "HOME": filepath.Join(dir, "home")}, "from-hf-home"},
		{map[string]string{"HOME": filepath.Join(dir, "home")}, "from-default-home"},
		{map[string]string{"HOME": filepath.Join(dir, "nobody")}, ""},
		{nil, ""},
	} {
		require.Equal(t, tc.want, source.HubToken(mapEnv(tc.env)), "%v", tc.env)
	}
	// HubTokenFrom names where the token came from.
	for _, tc := range []struct {
		env  map[string]string
		from string
	}{
		{map[string]string{"HF_TOKEN": "env", "HF_TOKEN_PATH": tokPath}, "HF_TOKEN"},
		{map[string]string{"HF_TOKEN_PATH": tokPath, "HF_HOME": filepath.Join(dir, "hfhome")}, "the file HF_TOKEN_PATH (" + tokPath + ")"},
		{map[string]string{"HF_HOME": filepath.Join(dir, "hfhome")}, "the file $HF_HOME/token (" + filepath.Join(dir, "hfhome", "token") + ")"},
		{map[string]string{"HOME": filepath.Join(dir, "home")}, "the file ~/.cache/huggingface/token (" + filepath.Join(dir, "home", ".cache", "huggingface", "token") + ")"},
		{map[string]string{"HOME": filepath.Join(dir, "nobody")}, ""},
	} {
		_, from := source.HubTokenFrom(mapEnv(tc.env))
		require.Equal(t, tc.from, from, "%v", tc.env)
	}
}

// TestHubTokenFile: the hub opener sends the token `hf auth login`
// saved.
func TestHubTokenFile(t *testing.T) {
	t.Parallel()
	hub := sourcetest.NewHub(smallFixture(t), "org/model")
	defer hub.Close()
	hub.Token = "secret"
	home := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(home, "token"), []byte("secret\n"), 0o600))
	env := map[string]string{"HF_ENDPOINT": hub.URL, "HF_HOME": home}
	c, err := ckpt.Open(context.Background(), "hf://org/model", ckpt.Options{}, source.Openers(source.Options{Getenv: mapEnv(env)})...)
	require.NoError(t, err)
	c.Close()
	env["HF_HOME"] = t.TempDir() // no token
	_, err = ckpt.Open(context.Background(), "hf://org/model", ckpt.Options{}, source.Openers(source.Options{Getenv: mapEnv(env), MaxAttempts: 1})...)
	require.Error(t, err)
}

// TestOffline: HF_HUB_OFFLINE=1 fails hf:// and URLs at once, without a
// request, pointing to the hf: cache form.
func TestOffline(t *testing.T) {
	t.Parallel()
	hub := sourcetest.NewHub(smallFixture(t), "org/model")
	defer hub.Close()
	for _, v := range []string{"1", "true", "ON"} {
		env := mapEnv(map[string]string{"HF_ENDPOINT": hub.URL, "HF_HUB_OFFLINE": v})
		start := time.Now()
		_, err := ckpt.Open(context.Background(), "hf://org/model@v2", ckpt.Options{}, source.Openers(source.Options{Getenv: env})...)
		var oe *source.OfflineError
		require.ErrorAs(t, err, &oe, v)
		require.Contains(t, err.Error(), "HF_HUB_OFFLINE is set: no network access; read the local cache instead: hf:org/model@v2")
		_, err = ckpt.Open(context.Background(), hub.FileURL("model.safetensors.index.json"), ckpt.Options{}, source.Openers(source.Options{Getenv: env})...)
		require.ErrorAs(t, err, &oe, v)
		require.Less(t, time.Since(start), time.Second)
	}
	require.Zero(t, hub.Requests.Load())
	require.False(t, source.Offline(mapEnv(map[string]string{"HF_HUB_OFFLINE": "0"})))
}

func TestParseRepoPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, id, rev, entry string }{
		{"org/name", "org/name", "", ""},
		{"org/name@main", "org/name", "main", ""},
		{"org/name/model.safetensors", "org/name", "", "model.safetensors"},
		{"org/name@abc1234/model-00001-of-00002.safetensors", "org/name", "abc1234", "model-00001-of-00002.safetensors"},
		{"org/name@v1/sub/model.safetensors.index.json", "org/name", "v1", "sub/model.safetensors.index.json"},
	} {
		r, entry, err := source.ParseRepoPath(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, [3]string{tc.id, tc.rev, tc.entry}, [3]string{r.ID, r.Revision, entry}, tc.in)
	}
	for _, bad := range []string{"a/b/c", "org/name@main/README.md", "org/name@main/../x.safetensors"} {
		_, _, err := source.ParseRepoPath(bad)
		require.Error(t, err, bad)
	}
}

// TestCacheConventions: short commits, a file after the repository, a
// models--ORG--NAME folder path, and the words of a cache miss and a
// partial download.
func TestCacheConventions(t *testing.T) {
	t.Parallel()
	root, repo := cacheTree(t, false)
	for _, src := range []string{
		"hf:org/model@" + commit[:7],
		"hf:org/model@" + commit[:4],
		"hf:org/model/model.safetensors.index.json",
		"hf:org/model@main/model.safetensors.index.json",
		"hf:org/model@" + commit[:7] + "/model-00001-of-00004.safetensors",
		filepath.Join(root, "models--org--model"),
	} {
		c, err := openCache(t, root, src, ckpt.Options{})
		require.NoError(t, err, src)
		require.NotEmpty(t, c.Tensors, src)
		c.Close()
	}
	c, err := openCache(t, root, "hf:org/model@"+commit[:7]+"/model-00001-of-00004.safetensors", ckpt.Options{})
	require.NoError(t, err)
	require.Len(t, c.Files, 1)
	c.Close()

	// A second snapshot sharing the prefix makes it ambiguous.
	other := commit[:7] + "fffffffffffffffffffffffffffffffff"
	require.NoError(t, os.MkdirAll(filepath.Join(root, "models--org--model", "snapshots", other), 0o755))
	_, err = openCache(t, root, "hf:org/model@"+commit[:7], ckpt.Options{})
	require.ErrorContains(t, err, "matches 2 snapshots")

	// Misses say how to get the files.
	for _, tc := range []struct{ src, says string }{
		{"hf:org/missing", "download it with `hf download org/missing`, or read it from the hub without downloading: hf://org/missing"},
		{"hf:org/model@v9", "`hf download org/model --revision v9`, or read it from the hub without downloading: hf://org/model@v9"},
		{"hf:org/model@beef", "hf download org/model --revision beef"},
	} {
		_, err := openCache(t, root, tc.src, ckpt.Options{})
		var miss *source.CacheMissError
		require.ErrorAs(t, err, &miss, tc.src)
		require.True(t, errors.Is(err, fs.ErrNotExist), tc.src)
		require.Contains(t, err.Error(), tc.says, tc.src)
	}

	// A partial download names the file and the command to fetch it.
	const second = "model-00002-of-00004.safetensors"
	require.NoError(t, repo.MakeIncomplete(second, false))
	_, err = openCache(t, root, "hf:org/model@"+commit, ckpt.Options{})
	require.ErrorContains(t, err, "fetch it again with `hf download org/model "+second+" --revision "+commit+"`")
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newSourcesApp builds an App the way main does, with the source openers
// reading env from m.
func newSourcesApp(m map[string]string, opt source.Options) (*App, *bytes.Buffer, *bytes.Buffer) {
	out, errb := &bytes.Buffer{}, &bytes.Buffer{}
	getenv := func(k string) string { return m[k] }
	opt.Getenv = getenv
	net := &netReporter{}
	return &App{Out: out, Err: errb, Getenv: getenv, Openers: source.Openers(net.withHooks(opt)), Net: net, Now: fixedNow}, out, errb
}

// runSources runs a command and returns its exit code, stdout and stderr.
func runSources(t *testing.T, m map[string]string, opt source.Options, args ...string) (int, string, string) {
	t.Helper()
	app, out, errb := newSourcesApp(m, opt)
	code := app.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

// inspectJSON runs inspect --format json and returns the document without
// its source field.
func inspectJSON(t *testing.T, m map[string]string, src string) map[string]any {
	t.Helper()
	code, out, errs := runSources(t, m, source.Options{}, "inspect", src, "--format", "json")
	require.Equal(t, 0, code, "inspect %s: %s", src, errs)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Equal(t, src, doc["source"])
	delete(doc, "source")
	return doc
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		total += info.Size()
	}
	return total
}

// TestSourcesInspectHTTPReadsHeadersOnly is the contract of the issue:
// inspect over HTTP of a multi-shard checkpoint of tens of MB reads under
// 1% of its bytes and lists exactly what the local inspect lists.
func TestSourcesInspectHTTPReadsHeadersOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	o := synth.Small()
	o.Hidden, o.Intermediate, o.Heads, o.HeadDim = 1024, 2816, 8, 128
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim = 4, 8, 128, 128
	o.Block = [2]int{128, 128}
	require.NoError(t, synth.Write(dir, o))
	total := dirSize(t, dir)
	require.Greater(t, total, int64(50<<20), "the fixture must be tens of MB")

	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	env := map[string]string{"HF_ENDPOINT": hub.URL}
	local := inspectJSON(t, env, dir)
	require.Len(t, local["files"], 4)

	for _, src := range []string{"hf://org/model", "hf://org/model@main", hub.FileURL(ckpt.IndexFile), hub.URL + "/files/"} {
		hub.ResetCounters()
		remote := inspectJSON(t, env, src)
		assert.Equal(t, local, remote, src)
		hub.Quiesce()
		served, reqs := hub.BytesServed.Load(), hub.Requests.Load()
		frac := float64(served) / float64(total)
		t.Logf("%s: %d requests, %d of %d bytes served (%.3f%%), %d connections", src, reqs, served, total, 100*frac, hub.Conns.Load())
		assert.Less(t, frac, 0.01, "inspect over HTTP must read < 1%% of the checkpoint")
		// config + index + one request per shard (headers of a few KB fit
		// the speculative prefix); the index probe of hf:// is cached.
		assert.LessOrEqual(t, reqs, int64(2+2*4))
	}
}

func TestSourcesInspectSingleFileURL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(dir, synth.Small()))
	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	const shard = "model-00002-of-00004.safetensors"
	local := inspectJSON(t, nil, filepath.Join(dir, shard))
	remote := inspectJSON(t, nil, hub.FileURL(shard))
	assert.Equal(t, local, remote)
}

func TestSourcesInspectHFCache(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(dir, synth.Small()))
	local := inspectJSON(t, nil, dir)
	const commit = "89abcdef0123456789abcdef0123456789abcdef"
	for _, degraded := range []bool{false, true} {
		home := t.TempDir()
		_, err := sourcetest.WriteCache(filepath.Join(home, "hub"), "org/model", commit, dir, degraded)
		require.NoError(t, err)
		for _, env := range []map[string]string{{"HF_HOME": home}, {"HF_HUB_CACHE": filepath.Join(home, "hub")}} {
			for _, src := range []string{"hf:org/model", "hf:org/model@" + commit} {
				assert.Equal(t, local, inspectJSON(t, env, src), "%s %v", src, env)
			}
		}
	}
}

func TestSourcesInspectPartialDownload(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(dir, synth.Small()))
	const shard = "model-00003-of-00004.safetensors"
	for _, unlink := range []bool{false, true} {
		root := t.TempDir()
		repo, err := sourcetest.WriteCache(root, "org/model", "89abcdef0123456789abcdef0123456789abcdef", dir, false)
		require.NoError(t, err)
		require.NoError(t, repo.MakeIncomplete(shard, unlink))
		code, out, errs := runSources(t, map[string]string{"HF_HUB_CACHE": root}, source.Options{}, "inspect", "hf:org/model")
		assert.Equal(t, 2, code)
		assert.Empty(t, out)
		assert.Contains(t, errs, "partial download")
		assert.Contains(t, errs, shard)
		assert.Contains(t, errs, ".incomplete")
	}
}

// A snapshot whose index has not arrived yet (huggingface_hub downloads a
// snapshot's files in parallel) names the unfinished download instead of
// only calling the directory ambiguous.
func TestSourcesInspectPartialIndex(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(dir, synth.Small()))
	root := t.TempDir()
	repo, err := sourcetest.WriteCache(root, "org/model", "89abcdef0123456789abcdef0123456789abcdef", dir, false)
	require.NoError(t, err)
	require.NoError(t, repo.MakeIncomplete(ckpt.IndexFile, true))
	code, out, errs := runSources(t, map[string]string{"HF_HUB_CACHE": root}, source.Options{}, "inspect", "hf:org/model")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errs, "ambiguous checkpoint directory")
	assert.Contains(t, errs, "partial downloads: blobs/"+repo.Blobs[ckpt.IndexFile]+".incomplete")
}

func TestSourcesHTTPMissingShard(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(dir, synth.Small()))
	const shard = "model-00002-of-00004.safetensors"
	require.NoError(t, os.Remove(filepath.Join(dir, shard)))
	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	code, _, errs := runSources(t, map[string]string{"HF_ENDPOINT": hub.URL}, source.Options{}, "inspect", "hf://org/model")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, shard)
	assert.Contains(t, errs, "EntryNotFound")

	code, _, errs = runSources(t, map[string]string{"HF_ENDPOINT": hub.URL}, source.Options{}, "inspect", "hf://org/other")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "RepoNotFound")
}

func TestSourcesHangingServer(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(dir, synth.Small()))
	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if file == "model-00004-of-00004.safetensors" {
			return sourcetest.Fault{Kind: sourcetest.Hang}
		}
		return sourcetest.Fault{}
	}
	start := time.Now()
	code, _, errs := runSources(t, map[string]string{"HF_ENDPOINT": hub.URL},
		source.Options{IdleTimeout: 300 * time.Millisecond, Timeout: 2 * time.Second, BackoffBase: 10 * time.Millisecond},
		"inspect", "hf://org/model")
	elapsed := time.Since(start)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "model-00004-of-00004.safetensors")
	assert.Regexp(t, `timed out|idle timeout`, errs)
	assert.Less(t, elapsed, 4*time.Second, "the command must end within its timeout")
	t.Logf("hanging server: exit %d after %v: %s", code, elapsed, errs)
}

package main

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sourceForms serves the base/fine-tune pair every way a SRC can name it.
type sourceForms struct {
	base, ft string // local directories
	hub      *sourcetest.Hub
	env      map[string]string
	repoBase *sourcetest.CacheRepo
	cache    string
}

const formsCommit = "fedcba9876543210fedcba9876543210fedcba98"

func newSourceForms(t *testing.T) *sourceForms {
	t.Helper()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	hub := sourcetest.NewHub(base, "org/base")
	hub.AddRepo("org/ft", ft)
	t.Cleanup(hub.Close)
	cache := filepath.Join(dir, "hfcache")
	rb, err := sourcetest.WriteCache(cache, "org/base", formsCommit, base, false)
	require.NoError(t, err)
	_, err = sourcetest.WriteCache(cache, "org/ft", formsCommit, ft, false)
	require.NoError(t, err)
	return &sourceForms{base: base, ft: ft, hub: hub, repoBase: rb, cache: cache,
		env: map[string]string{"HF_ENDPOINT": hub.URL, "HF_HUB_CACHE": cache}}
}

// forms lists the base's sources: local, hf:, hf://, and the index URL.
func (f *sourceForms) forms() []string {
	return []string{f.base, "hf:org/base", "hf://org/base", "hf://org/base@" + f.hub.Commit, f.hub.FileURL(ckpt.IndexFile)}
}

// fastSourceOpts keeps retries quick in tests that inject faults.
func fastSourceOpts() source.Options {
	return source.Options{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, ChunkSize: 32 << 10, MaxAttempts: 8}
}

func decodeJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	return doc
}

// checkSummary reduces verify checks to id/status/tensors (messages name
// locations, which differ between forms), leaving out cache.* checks.
func checkSummary(doc map[string]any) (kept []any, cache map[string]string) {
	cache = map[string]string{}
	for _, c := range doc["findings"].([]any) {
		m := c.(map[string]any)
		id := m["id"].(string)
		if strings.HasPrefix(id, "cache.") {
			cache[id] = m["status"].(string)
			continue
		}
		kept = append(kept, []any{id, m["status"], m["tensors"]})
	}
	return kept, cache
}

func TestSourcesVerifyAndContractEveryForm(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	for _, readData := range []bool{false, true} {
		args := func(cmd, src string) []string {
			a := []string{cmd, src}
			if cmd == "verify" {
				a = append(a, "--format", "json")
			}
			if readData {
				a = append(a, "--read-data", "--progress", "none")
			}
			return a
		}
		code, out, errs := runSources(t, f.env, source.Options{}, args("verify", f.base)...)
		require.Equal(t, 0, code, errs)
		wantChecks, _ := checkSummary(decodeJSON(t, out))
		code, out, errs = runSources(t, f.env, source.Options{}, args("contract", f.base)...)
		require.Equal(t, 0, code, errs)
		wantContract := decodeJSON(t, out)
		delete(wantContract, "source")
		for _, src := range f.forms()[1:] {
			code, out, errs := runSources(t, f.env, source.Options{}, args("verify", src)...)
			assert.Equal(t, 0, code, "verify %s: %s", src, errs)
			doc := decodeJSON(t, out)
			assert.Equal(t, src, doc["source"])
			got, cache := checkSummary(doc)
			assert.Equal(t, wantChecks, got, "verify %s (read-data %v)", src, readData)
			if strings.HasPrefix(src, "hf:org") {
				assert.Equal(t, "pass", cache["cache.partial"], src)
				if readData {
					assert.Equal(t, "pass", cache["cache.sha256"], "blob digests checked for %s", src)
				}
			}
			code, out, errs = runSources(t, f.env, source.Options{}, args("contract", src)...)
			assert.Equal(t, 0, code, "contract %s: %s", src, errs)
			doc = decodeJSON(t, out)
			delete(doc, "source")
			assert.Equal(t, wantContract, doc, "contract %s (read-data %v)", src, readData)
		}
	}
}

func TestSourcesVerifyAgainstRemoteContract(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	contract := filepath.Join(t.TempDir(), "contract.json")
	code, _, errs := runSources(t, f.env, source.Options{}, "contract", "hf://org/base", "-o", contract)
	require.Equal(t, 0, code, errs)
	code, out, errs := runSources(t, f.env, source.Options{}, "verify", "hf:org/base", "--against", contract, "--format", "json")
	assert.Equal(t, 0, code, errs)
	assert.Equal(t, true, decodeJSON(t, out)["ok"])
	code, _, _ = runSources(t, f.env, source.Options{}, "verify", f.hub.URL+"/org/ft/resolve/main/"+ckpt.IndexFile, "--against", contract, "--format", "json")
	assert.Equal(t, 1, code, "the fine-tune breaks the base's contract")
}

func TestSourcesVerifyPartialDownloadFails(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	const shard = "model-00002-of-00004.safetensors"
	require.NoError(t, f.repoBase.MakeIncomplete(shard, false))
	code, out, errs := runSources(t, f.env, source.Options{}, "verify", "hf:org/base", "--format", "json")
	assert.Equal(t, 1, code, errs)
	doc := decodeJSON(t, out)
	assert.Equal(t, false, doc["ok"])
	var failed []string
	for _, c := range doc["findings"].([]any) {
		m := c.(map[string]any)
		if m["status"] == "fail" {
			failed = append(failed, m["id"].(string)+": "+m["message"].(string))
		}
	}
	joined := strings.Join(failed, "\n")
	assert.Contains(t, joined, "cache.partial")
	assert.Contains(t, joined, shard)
	assert.Contains(t, joined, "partial download")
}

func TestSourcesVerifyReadDataCorruptBlob(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	const shard = "model-00003-of-00004.safetensors"
	blob := filepath.Join(f.repoBase.Dir, "blobs", f.repoBase.Blobs[shard])
	data, err := os.ReadFile(blob)
	require.NoError(t, err)
	data[len(data)-3] ^= 0x01 // a bit flip in tensor data: headers still fine
	require.NoError(t, os.WriteFile(blob, data, 0o644))
	code, _, errs := runSources(t, f.env, source.Options{}, "verify", "hf:org/base", "--format", "json")
	assert.Equal(t, 0, code, "structural verify does not read data: %s", errs)
	code, out, errs := runSources(t, f.env, source.Options{}, "verify", "hf:org/base", "--read-data", "--progress", "none", "--format", "json")
	assert.Equal(t, 1, code, errs)
	var msgs []string
	for _, c := range decodeJSON(t, out)["findings"].([]any) {
		m := c.(map[string]any)
		if m["id"] == "cache.sha256" {
			msgs = append(msgs, m["status"].(string)+": "+m["message"].(string))
		}
	}
	joined := strings.Join(msgs, "\n")
	assert.Contains(t, joined, "fail: "+shard)
	assert.Contains(t, joined, f.repoBase.Blobs[shard])
}

func TestSourcesDiffEveryForm(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	ftForms := []string{"hf:org/ft", "hf://org/ft", f.hub.URL + "/org/ft/resolve/main/" + ckpt.IndexFile}
	for _, mode := range [][]string{{"--mode", "header"}, {"--mode", "bytes"}, {"--mode", "values"},
		{"--sample-bytes", "4KiB", "--sample-seed", "3", "--by", "layer", "--workers", "3"}} {
		args := func(b, ft string) []string {
			return append([]string{"diff", b, ft, "--format", "json", "--progress", "none"}, mode...)
		}
		code, out, errs := runSources(t, f.env, source.Options{}, args(f.base, f.ft)...)
		require.Equal(t, 1, code, errs)
		want := decodeJSON(t, out)
		delete(want, "base")
		delete(want, "ft")
		for i, b := range f.forms()[1:] {
			ft := ftForms[i%len(ftForms)]
			f.hub.ResetCounters()
			code, out, errs := runSources(t, f.env, source.Options{}, args(b, ft)...)
			assert.Equal(t, 1, code, "diff %s %s: %s", b, ft, errs)
			got := decodeJSON(t, out)
			assert.Equal(t, b, got["base"])
			assert.Equal(t, ft, got["ft"])
			delete(got, "base")
			delete(got, "ft")
			if s, ok := got["sample"].(map[string]any); ok {
				// HTTP requests depend on the source form (a local side makes none).
				for _, side := range []string{"base", "ft"} {
					if m, ok := s[side].(map[string]any); ok {
						delete(m, "requests")
					}
				}
			}
			assert.Equal(t, want, got, "diff %v %s %s", mode, b, ft)
			f.hub.Quiesce()
			if mode[1] == "header" && !strings.HasPrefix(b, "hf:org") && !strings.HasPrefix(ft, "hf:org") {
				t.Logf("diff --mode header %s %s: %d requests, %d bytes", b, ft, f.hub.Requests.Load(), f.hub.BytesServed.Load())
			}
		}
	}
}

// TestSourcesDiffUnderFaults streams every tensor of both checkpoints over
// a hub that drops connections, answers 500 and 429 and sends short bodies
// and wrong ranges on a share of the requests: the result must equal the
// local one.
func TestSourcesDiffUnderFaults(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	kinds := []sourcetest.FaultKind{sourcetest.Drop, sourcetest.Status500, sourcetest.TooMany, sourcetest.Short, sourcetest.WrongRange}
	// Every third distinct request (file and range) fails once; its
	// retry is served. A shared count of all requests let concurrent
	// reads steer one read's retries onto fault after fault (8 in a row
	// once, under load: exit 2).
	var n, faults atomic.Int64
	var mu sync.Mutex
	seen := map[string]bool{}
	f.hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		n.Add(1)
		key := r.Method + " " + file + " " + r.Header.Get("Range")
		mu.Lock()
		retry := seen[key]
		seen[key] = true
		k := int64(len(seen))
		mu.Unlock()
		if retry || k%3 != 0 {
			return sourcetest.Fault{}
		}
		faults.Add(1)
		return sourcetest.Fault{Kind: kinds[(k/3)%int64(len(kinds))], RetryAfter: "0"}
	}
	code, out, errs := runSources(t, f.env, source.Options{}, "diff", f.base, f.ft, "--format", "json", "--progress", "none")
	require.Equal(t, 1, code, errs)
	want := decodeJSON(t, out)
	code, out, errs = runSources(t, f.env, fastSourceOpts(), "diff", "hf://org/base", "hf://org/ft", "--format", "json", "--progress", "none")
	require.Equal(t, 1, code, errs)
	got := decodeJSON(t, out)
	for _, d := range []map[string]any{want, got} {
		delete(d, "base")
		delete(d, "ft")
	}
	assert.Equal(t, want, got)
	t.Logf("%d requests, %d with faults", n.Load(), faults.Load())
	assert.Greater(t, faults.Load(), int64(10))

	// A file that changes mid-read ends in an error, never in a result.
	var m atomic.Int64
	f.hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if strings.HasSuffix(file, ".safetensors") && m.Add(1) > 8 {
			return sourcetest.Fault{Kind: sourcetest.NewVersion}
		}
		return sourcetest.Fault{}
	}
	code, out, errs = runSources(t, f.env, fastSourceOpts(), "diff", "hf://org/base", "hf://org/ft", "--format", "json", "--progress", "none")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, errs, "changed while it was being read")
}

// map, extract and cache build take every source form too: their output
// equals what the local checkpoint gives.
func TestSourcesMapExtractCacheEveryForm(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	code, wantMap, errs := runSources(t, f.env, source.Options{}, "map", f.base, "--mesh", "1x2", "--format", "json")
	require.Equal(t, 0, code, errs)
	stripSource := func(out string) map[string]any {
		doc := decodeJSON(t, out)
		delete(doc, "source")
		if v, ok := doc["vision"].(map[string]any); ok {
			delete(v, "source") // the vision part's document names the source too
		}
		return doc
	}
	dir := t.TempDir()
	code, _, errs = runSources(t, f.env, source.Options{}, "extract", f.base, "--match", "mtp.**", "--dtype", "bf16",
		"--out", filepath.Join(dir, "local.safetensors"), "--progress", "none")
	require.Equal(t, 0, code, errs)
	wantMTP, err := os.ReadFile(filepath.Join(dir, "local.safetensors"))
	require.NoError(t, err)
	code, _, errs = runSources(t, f.env, source.Options{}, "cache", "build", f.base, "--out", filepath.Join(dir, "cache-local"), "--progress", "none")
	require.Equal(t, 0, code, errs)
	for i, src := range []string{"hf:org/base", "hf://org/base", f.repoBase.Snapshot} {
		code, out, errs := runSources(t, f.env, source.Options{}, "map", src, "--mesh", "1x2", "--format", "json")
		assert.Equal(t, 0, code, "map %s: %s", src, errs)
		assert.Equal(t, stripSource(wantMap), stripSource(out), "map %s", src)

		p := filepath.Join(dir, "mtp"+string(rune('a'+i))+".safetensors")
		code, _, errs = runSources(t, f.env, source.Options{}, "extract", src, "--match", "mtp.**", "--dtype", "bf16", "--out", p, "--progress", "none")
		require.Equal(t, 0, code, "extract %s: %s", src, errs)
		got, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, wantMTP, got, "extract %s writes the same bytes", src)

		out2 := filepath.Join(dir, "cache"+string(rune('a'+i)))
		code, _, errs = runSources(t, f.env, source.Options{}, "cache", "build", src, "--out", out2, "--progress", "none")
		require.Equal(t, 0, code, "cache build %s: %s", src, errs)
		code, _, errs = runSources(t, f.env, source.Options{}, "cache", "verify", out2, "--source", src)
		assert.Equal(t, 0, code, "cache verify %s: %s", src, errs)
		code, _, errs = runSources(t, f.env, source.Options{}, "cache", "verify", out2, "--source", f.base)
		assert.Equal(t, 0, code, "a cache built from %s is the local checkpoint's: %s", src, errs)
	}
}

// TestSourcesOutlastABadLink: over a redirecting hub that fails about 40 %
// of its requests transiently (dropped connections, 500, 429 with
// Retry-After, short bodies, wrong ranges, stalled bodies), inspect and a
// streamed diff give the local answer in every run: a read is retried
// with backoff inside its time limit, resuming after the bytes it has,
// instead of giving up after a fixed number of attempts.
func TestSourcesOutlastABadLink(t *testing.T) {
	t.Parallel()
	f := newSourceForms(t)
	f.hub.Redirect = true
	kinds := []sourcetest.FaultKind{sourcetest.Drop, sourcetest.Status500, sourcetest.TooMany, sourcetest.Short, sourcetest.WrongRange, sourcetest.HangBody}
	// A read (a file and the end of its range, which resuming keeps) is
	// bad with probability 1/4: then its first 1 to 9 attempts fail, more
	// than the 6 attempts reads used to get.
	var n, faults atomic.Int64
	var mu sync.Mutex
	left := map[string]int{}
	var run atomic.Int64 // each run draws its own bad reads
	f.hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		n.Add(1)
		rg := r.Header.Get("Range")
		key := fmt.Sprint(run.Load(), file, rg[strings.LastIndex(rg, "-")+1:])
		mu.Lock()
		k, seen := left[key]
		if !seen {
			hf := fnv.New64a()
			hf.Write([]byte(key))
			h := hf.Sum64()
			if k = 0; h%4 == 0 {
				k = 1 + int((h>>8)%9)
			}
		}
		if k > 0 {
			left[key] = k - 1
		} else {
			left[key] = 0
		}
		mu.Unlock()
		if k == 0 {
			return sourcetest.Fault{}
		}
		faults.Add(1)
		return sourcetest.Fault{Kind: kinds[(uint64(k)+uint64(len(key)))%uint64(len(kinds))], RetryAfter: "0"}
	}
	opt := source.Options{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, ChunkSize: 32 << 10, IdleTimeout: 100 * time.Millisecond, Timeout: time.Minute}
	inspect := func(src string, o source.Options) map[string]any {
		code, out, errs := runSources(t, f.env, o, "inspect", src, "--format", "json")
		require.Equal(t, 0, code, "inspect %s: %s", src, errs)
		doc := decodeJSON(t, out)
		delete(doc, "source")
		if v, ok := doc["vision"].(map[string]any); ok {
			delete(v, "source") // the vision part's document names the source too
		}
		return doc
	}
	diffDoc := func(b, ft string, o source.Options) map[string]any {
		code, out, errs := runSources(t, f.env, o, "diff", b, ft, "--format", "json", "--progress", "none")
		require.Equal(t, 1, code, "diff %s %s: %s", b, ft, errs)
		doc := decodeJSON(t, out)
		delete(doc, "base")
		delete(doc, "ft")
		return doc
	}
	wantInspect := inspect(f.base, source.Options{})
	wantDiff := diffDoc(f.base, f.ft, source.Options{})
	for i := range 3 {
		run.Store(int64(i))
		assert.Equal(t, wantInspect, inspect("hf://org/base", opt), "inspect, run %d", i)
		assert.Equal(t, wantDiff, diffDoc("hf://org/base", "hf://org/ft", opt), "diff, run %d", i)
	}
	t.Logf("%d requests, %d with faults", n.Load(), faults.Load())
	assert.Greater(t, faults.Load(), n.Load()/4, "about 40 %% of the requests fail")
}

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSourcesJSONSrcNamed: a .json SRC that is not an index (a
// config.json, a ckpt contract, other JSON, an HTML page saved as .json)
// is named for what it is, exit 2, in the words the sniffing path uses for
// the same bytes named .bin, locally, over https:// and over hf://; a real
// index is still opened as an index.
func TestSourcesJSONSrcNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	code, _, errs := runApp(t, "contract", model, "--out", filepath.Join(model, "model.contract.json"))
	require.Equal(t, 0, code, errs)
	require.NoError(t, os.WriteFile(filepath.Join(model, "other.json"), []byte(`{"format": "unknown", "n": 3}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(model, "page.json"), []byte("<!DOCTYPE html><html><body>Sign in</body></html>"), 0o644))
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()
	env := map[string]string{"HF_ENDPOINT": hub.URL}

	for _, tc := range []struct{ file, what string }{
		{"config.json", "(it looks like a config.json)"},
		{"model.contract.json", "(it looks like a ckpt contract: use it with verify --against)"},
		{"other.json", "this is JSON text, not a safetensors file"},
		{"page.json", "this is an HTML page"},
	} {
		// The same bytes under another name take the sniffing path.
		data, err := os.ReadFile(filepath.Join(model, tc.file))
		require.NoError(t, err)
		bin := filepath.Join(dir, tc.file+".bin")
		require.NoError(t, os.WriteFile(bin, data, 0o644))
		code, _, errs := runSources(t, nil, source.Options{}, "inspect", bin)
		require.Equal(t, 2, code, errs)
		_, want, ok := strings.Cut(strings.TrimSpace(errs), bin+": ")
		require.True(t, ok, errs)
		require.Contains(t, want, tc.what)

		for _, src := range []string{filepath.Join(model, tc.file), hub.FileURL(tc.file), "hf://org/model/" + tc.file} {
			for _, cmd := range [][]string{{"inspect", src}, {"inspect", src, "--format", "json"}, {"verify", src}} {
				code, out, errs := runSources(t, env, fastSourceOpts(), cmd...)
				assert.Equal(t, 2, code, "%v: %s", cmd, errs)
				assert.Empty(t, out, cmd)
				assert.Contains(t, errs, tc.file+": "+want, cmd)
				assert.NotContains(t, errs, "weight_map", cmd)
			}
		}
	}
	// A real index is still an index, in every form.
	for _, src := range []string{filepath.Join(model, ckpt.IndexFile), hub.FileURL(ckpt.IndexFile), "hf://org/model/" + ckpt.IndexFile} {
		doc := inspectJSON(t, env, src)
		assert.Equal(t, true, doc["sharded"], src)
	}
}

// TestSourcesIndexFailureIsTheError: when the request for the index
// fails for any reason but 404 (5xx after every retry, a timeout, 401 or
// 403), that failure is the error, with its status, its retries and the
// hub's message; the source does not fall back to model.safetensors (and
// never asks for it). A 404 for the index still means "no index".
func TestSourcesIndexFailureIsTheError(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	quick := fastSourceOpts()
	quick.MaxAttempts = 3
	hang := fastSourceOpts()
	hang.IdleTimeout, hang.Timeout = 200*time.Millisecond, time.Second
	for _, tc := range []struct {
		name  string
		fault sourcetest.Fault
		opt   source.Options
		want  []string
	}{
		{"5xx", sourcetest.Fault{Kind: sourcetest.Status500}, quick, []string{"500 Internal Server Error", "giving up after 3 attempts"}},
		{"503", sourcetest.Fault{Kind: sourcetest.Status503, RetryAfter: "0"}, quick, []string{"503 Service Unavailable", "giving up after 3 attempts"}},
		{"timeout", sourcetest.Fault{Kind: sourcetest.Hang}, hang, []string{"timed out after 1s"}},
		{"403 gated", sourcetest.Fault{Kind: sourcetest.Reject, Status: http.StatusForbidden, ErrorCode: "GatedRepo",
			ErrorMessage: "Access to model org/model is restricted. You must have access to it and be authenticated to access it."}, quick,
			[]string{"403 Forbidden (GatedRepo): Access to model org/model is restricted. You must have access to it and be authenticated to access it; the repository may be private or gated: set HF_TOKEN"}},
		{"401 json body", sourcetest.Fault{Kind: sourcetest.Reject, Status: http.StatusUnauthorized, Body: `{"error":"Invalid credentials in Authorization header"}`}, quick,
			[]string{"401 Unauthorized: Invalid credentials in Authorization header"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hub := sourcetest.NewHub(model, "org/model")
			defer hub.Close()
			var mu sync.Mutex
			asked := map[string]int{}
			hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
				mu.Lock()
				asked[file]++
				mu.Unlock()
				if file == ckpt.IndexFile {
					return tc.fault
				}
				return sourcetest.Fault{}
			}
			for _, src := range []string{"hf://org/model", hub.URL + "/files/"} {
				code, out, errs := runSources(t, map[string]string{"HF_ENDPOINT": hub.URL}, tc.opt, "inspect", src)
				assert.Equal(t, 2, code, "%s: %s", src, errs)
				assert.Empty(t, out)
				assert.Contains(t, errs, ckpt.IndexFile+": ", src)
				for _, w := range tc.want {
					if tc.name == "timeout" && strings.Contains(errs, "would pass the 1s time limit") {
						// Under load the idle timeout can leave too little
						// of the limit for one more attempt: the same limit,
						// reached before the attempt instead of during it.
						continue
					}
					assert.Contains(t, errs, w, src)
				}
				assert.NotContains(t, errs, "404 Not Found", src) // not "404": the random port may hold it
				assert.NotContains(t, errs, "EntryNotFound", src)
			}
			hub.Quiesce()
			mu.Lock()
			defer mu.Unlock()
			assert.Zero(t, asked["model.safetensors"], "the source fell back to model.safetensors")
			assert.NotZero(t, asked[ckpt.IndexFile])
		})
	}

	// A missing repository with a token from a file names that file.
	tok := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tok, []byte("hf_x\n"), 0o600))
	hub0 := sourcetest.NewHub(model, "org/model")
	defer hub0.Close()
	code, _, errs := runSources(t, map[string]string{"HF_ENDPOINT": hub0.URL, "HF_TOKEN_PATH": tok}, quick, "inspect", "hf://org/other")
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "404 Not Found (RepoNotFound): Repository not found; no such repository (or the token from the file HF_TOKEN_PATH ("+tok+") has no access to it)")

	// 404 for the index: a single-file repository opens.
	single := filepath.Join(t.TempDir(), "single")
	require.NoError(t, os.MkdirAll(single, 0o755))
	data, err := os.ReadFile(filepath.Join(model, "model-00001-of-00004.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(single, "model.safetensors"), data, 0o644))
	hub := sourcetest.NewHub(single, "org/single")
	defer hub.Close()
	for _, src := range []string{"hf://org/single", hub.URL + "/files/"} {
		doc := inspectJSON(t, map[string]string{"HF_ENDPOINT": hub.URL}, src)
		assert.Equal(t, false, doc["sharded"], src)
	}
}

// TestSourcesTokenMessageNamesItsSource: a refused token is named by where
// it came from (HF_TOKEN, the file HF_TOKEN_PATH, $HF_HOME/token,
// ~/.cache/huggingface/token), and the hub's own message (X-Error-Message,
// or the JSON body's error) is quoted.
func TestSourcesTokenMessageNamesItsSource(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	dir := t.TempDir()
	write := func(p string) string {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("hf_wrong\n"), 0o600))
		return p
	}
	tokPath := write(filepath.Join(dir, "elsewhere", "tok"))
	hfHome := filepath.Join(dir, "hfhome")
	write(filepath.Join(hfHome, "token"))
	home := filepath.Join(dir, "home")
	write(filepath.Join(home, ".cache", "huggingface", "token"))
	nobody := filepath.Join(dir, "nobody")

	const gated = "Access to model org/model is restricted and you are not in the authorized list. Visit https://huggingface.co/org/model to ask for access."
	for _, fault := range []sourcetest.Fault{
		{Kind: sourcetest.Reject, Status: http.StatusForbidden, ErrorCode: "GatedRepo", ErrorMessage: gated, Body: `{"error":"` + gated + `"}`},
		{Kind: sourcetest.Reject, Status: http.StatusForbidden, Body: `{"error":"` + gated + `"}`},
	} {
		hub := sourcetest.NewHub(model, "org/model")
		defer hub.Close()
		hub.Inject = func(*http.Request, string) sourcetest.Fault { return fault }
		for _, tc := range []struct {
			env  map[string]string
			want string
		}{
			{map[string]string{"HF_TOKEN": "hf_wrong", "HF_TOKEN_PATH": tokPath}, "the token from HF_TOKEN was not accepted for this repository"},
			{map[string]string{"HF_TOKEN_PATH": tokPath, "HF_HOME": hfHome}, "the token from the file HF_TOKEN_PATH (" + tokPath + ") was not accepted for this repository"},
			{map[string]string{"HF_HOME": hfHome, "HOME": home}, "the token from the file $HF_HOME/token (" + filepath.Join(hfHome, "token") + ") was not accepted for this repository"},
			{map[string]string{"HOME": home}, "the token from the file ~/.cache/huggingface/token (" + filepath.Join(home, ".cache", "huggingface", "token") + ") was not accepted for this repository"},
			{map[string]string{"HOME": nobody}, "the repository may be private or gated: set HF_TOKEN, or run `hf auth login`"},
		} {
			tc.env["HF_ENDPOINT"] = hub.URL
			for _, src := range []string{"hf://org/model", hub.URL + "/org/model/resolve/main/" + ckpt.IndexFile} {
				code, _, errs := runSources(t, tc.env, fastSourceOpts(), "inspect", src)
				assert.Equal(t, 2, code, errs)
				assert.Contains(t, errs, "403 Forbidden", tc.env)
				assert.Contains(t, errs, strings.TrimSuffix(gated, ".")+"; "+tc.want, "the hub's message is quoted: %v", tc.env)
				assert.NotContains(t, errs, "the token in HF_TOKEN", tc.env)
				if tc.env["HF_TOKEN"] == "" {
					assert.NotContains(t, errs, "from HF_TOKEN was", tc.env)
				}
			}
		}
	}
}

// TestIndexBesideSingleFileNamed: a directory with both an index and a
// model.safetensors is named (#27): verify has a warning finding
// index.single_file, inspect a warning (stderr and JSON), the other
// commands a warning on stderr; each says which file ckpt reads (the
// index) and what transformers and vLLM load.
func TestIndexBesideSingleFileNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	clean := filepath.Join(dir, "clean")
	require.NoError(t, synth.Write(clean, synth.Small()))
	// A stale single-file export left beside the shards.
	data, err := os.ReadFile(filepath.Join(model, "model-00001-of-00004.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(model, "model.safetensors"), data, 0o644))
	cache := filepath.Join(dir, "hfcache")
	_, err = sourcetest.WriteCache(cache, "org/model", formsCommit, model, false)
	require.NoError(t, err)
	env := map[string]string{"HF_HUB_CACHE": cache}

	wantParts := []string{"holds both " + ckpt.IndexFile + " and model.safetensors", "ckpt reads the index (the 4 shards it lists)",
		"transformers' from_pretrained loads model.safetensors alone", "vLLM loads the shards the index lists"}
	for _, src := range []string{model, "hf:org/model"} {
		code, out, errs := runSources(t, env, source.Options{}, "verify", src, "--format", "json")
		require.Equal(t, 0, code, errs)
		doc := decodeJSON(t, out)
		var found map[string]any
		for _, f := range doc["findings"].([]any) {
			if m := f.(map[string]any); m["id"] == "index.single_file" {
				found = m
			}
		}
		require.NotNil(t, found, "%s: no index.single_file finding", src)
		assert.Equal(t, "warn", found["status"])
		assert.Equal(t, []any{ckpt.IndexFile, "model.safetensors"}, found["files"])
		for _, w := range wantParts {
			assert.Contains(t, found["message"], w, src)
		}

		code, _, _ = runSources(t, env, source.Options{}, "verify", src, "--strict")
		assert.Equal(t, 1, code, "--strict: the warning fails")

		code, out, errs = runSources(t, env, source.Options{}, "inspect", src, "--format", "json")
		require.Equal(t, 0, code, errs)
		warnings, _ := decodeJSON(t, out)["warnings"].([]any)
		require.Len(t, warnings, 1, out)
		for _, w := range wantParts {
			assert.Contains(t, warnings[0], w)
			assert.Contains(t, errs, w)
		}
		assert.Contains(t, errs, "ckpt: warning: ")
	}
	// cache identify plans the source too (it said nothing).
	idCache := filepath.Join(dir, "idcache")
	code, _, errs := runApp(t, "cache", "build", clean, "--out", idCache, "--progress", "none", "--fsync=false")
	require.Equal(t, 0, code, errs)
	for _, args := range [][]string{
		{"cache", "identify", idCache, "--source", model},
		{"diff", model, clean, "--mode", "header"},
		{"extract", model, "--match", "lm_head.weight", "--out", filepath.Join(dir, "lm_head.safetensors")},
		{"contract", model, "--out", filepath.Join(dir, "k.json")},
	} {
		code, _, errs := runApp(t, args...)
		assert.Equal(t, 0, code, "%v: %s", args, errs)
		assert.Contains(t, errs, "ckpt: warning: "+model+" holds both", args)
		assert.Contains(t, errs, "transformers' from_pretrained loads model.safetensors alone", args)
	}
	// Without the single file: no warning.
	code, out, errs := runApp(t, "verify", clean, "--format", "json")
	require.Equal(t, 0, code, errs)
	assert.NotContains(t, out, "index.single_file")
	code, _, errs = runApp(t, "diff", clean, clean, "--mode", "header")
	require.Equal(t, 0, code, errs)
	assert.NotContains(t, errs, "warning")
}

// A 401/403 from a plain URL on another host than the hub's endpoint: no
// token is ever sent there, so the hint does not tell the user to set one.
func TestSourcesPlainURLRefusedNoTokenHint(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()
	hub.Inject = func(*http.Request, string) sourcetest.Fault {
		return sourcetest.Fault{Kind: sourcetest.Reject, Status: http.StatusUnauthorized, Body: `{"error":"login required"}`}
	}
	env := map[string]string{"HF_ENDPOINT": "https://hub.invalid", "HF_TOKEN": "hf_secret"}
	code, _, errs := runSources(t, env, fastSourceOpts(), "inspect", hub.URL+"/files/"+ckpt.IndexFile)
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "401")
	assert.Contains(t, errs, "ckpt sends a Hugging Face token only to the hub's endpoint")
	assert.NotContains(t, errs, "set HF_TOKEN")
	assert.NotContains(t, errs, "hf auth login")
}

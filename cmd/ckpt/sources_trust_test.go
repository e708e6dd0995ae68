package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
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

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Port()
}

// TestTrustTokenOnlyToItsOrigin: the hub token goes to the endpoint's
// exact origin (scheme, host, port) and never after a redirect to another
// one: not to a CDN on a subdomain of the hub's host (cdn-lfs.hub.example
// behind hub.example, which net/http's own redirect policy would send it
// to), not to the hub's host on another port. Names are resolved by the
// test's client, all to the loopback address.
func TestTrustTokenOnlyToItsOrigin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	const token = "hf_trust_token"
	hub := sourcetest.NewHub(base, "org/base")
	defer hub.Close()
	hub.AddRepo("org/ft", ft)
	hub.Token, hub.Redirect = token, true
	cdn := hub.Serve() // the CDN, on its own port
	defer cdn.Close()
	second := hub.Serve() // the hub's host on another port
	defer second.Close()
	var mu sync.Mutex
	all, authed := map[string]int{}, map[string]int{}
	hub.OnRequest = func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		all[r.Host]++
		if r.Header.Get("Authorization") != "" {
			authed[r.Host]++
		}
	}
	client := sourcetest.Client(map[string]string{"hub.example": "127.0.0.1", "cdn-lfs.hub.example": "127.0.0.1"})
	opt := source.Options{Client: client, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 2}
	front := "hub.example:" + portOf(t, hub.URL)
	env := map[string]string{"HF_ENDPOINT": "http://" + front, "HF_TOKEN": token}

	for _, to := range []string{"cdn-lfs.hub.example:" + portOf(t, cdn.URL), "hub.example:" + portOf(t, second.URL)} {
		hub.Quiesce()
		mu.Lock()
		hub.RedirectTo = "http://" + to
		clear(all)
		clear(authed)
		mu.Unlock()
		code, out, errs := runSources(t, env, opt, "inspect", "hf://org/base", "--format", "json")
		require.Equal(t, 0, code, "inspect, redirected to %s: %s", to, errs)
		assert.Contains(t, out, `"sharded": true`)
		code, _, errs = runSources(t, env, opt, "diff", "hf://org/base", "hf://org/ft", "--format", "json", "--progress", "none")
		require.Equal(t, 1, code, "diff, redirected to %s: %s", to, errs)
		hub.Quiesce()
		mu.Lock()
		assert.Positive(t, all[to], "the reads went to %s", to)
		assert.Zero(t, authed[to], "the token must not follow a redirect to %s", to)
		assert.Positive(t, authed[front], "the token goes to the endpoint %s", front)
		for host := range authed {
			assert.Equal(t, front, host, "only the endpoint's origin sees the token")
		}
		mu.Unlock()
	}

	// URLs: the token goes to a URL of the endpoint's origin, not to a
	// subdomain of its host on the same port nor to its host on another.
	hub.Redirect = false
	code, _, errs := runSources(t, env, opt, "inspect", "http://"+front+"/files/"+ckpt.IndexFile)
	assert.Equal(t, 0, code, errs)
	// the same origin, its host in other case: the token goes too
	code, _, errs = runSources(t, env, opt, "inspect", "http://HUB.Example:"+portOf(t, hub.URL)+"/files/"+ckpt.IndexFile)
	assert.Equal(t, 0, code, errs)
	for _, other := range []string{"cdn-lfs.hub.example:" + portOf(t, hub.URL), "hub.example:" + portOf(t, second.URL), "HUB.example:" + portOf(t, second.URL)} {
		mu.Lock()
		clear(authed)
		mu.Unlock()
		code, _, errs := runSources(t, env, opt, "inspect", "http://"+other+"/files/"+ckpt.IndexFile)
		assert.Equal(t, 2, code, errs)
		assert.Contains(t, errs, "401 Unauthorized", other)
		assert.Contains(t, errs, "exact scheme, host and port", other)
		hub.Quiesce()
		mu.Lock()
		assert.Empty(t, authed, "no token to %s", other)
		mu.Unlock()
	}
}

// TestTrustRedirectLoop: a request follows at most 10 redirects; a loop
// fails at once (it does not heal, so it is not retried for the whole
// time limit of a read).
func TestTrustRedirectLoop(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
	}))
	defer srv.Close()
	start := time.Now()
	code, _, errs := runSources(t, nil, source.Options{Timeout: 30 * time.Second}, "inspect", srv.URL+"/m/model.safetensors")
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, "stopped after 10 redirects")
	assert.Less(t, time.Since(start), 5*time.Second, "a redirect loop is not retried")
	assert.Equal(t, int64(11), hits.Load(), "the first request and 10 redirects")

	// Ten redirects are followed.
	var chain atomic.Int64
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()
	hops := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chain.Add(1)
		n := strings.Count(r.URL.Path, "/hop")
		if n < 10 {
			http.Redirect(w, r, "/hop"+r.URL.Path, http.StatusFound)
			return
		}
		http.Redirect(w, r, hub.URL+"/files/"+r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], http.StatusFound)
	}))
	defer hops.Close()
	code, _, errs = runSources(t, nil, source.Options{}, "inspect", hops.URL+"/model-00001-of-00004.safetensors")
	assert.Equal(t, 2, code, "the 11th redirect is refused: %s", errs)
	assert.Contains(t, errs, "stopped after 10 redirects")
	hops2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := strings.Count(r.URL.Path, "/hop")
		if n < 9 {
			http.Redirect(w, r, "/hop"+r.URL.Path, http.StatusFound)
			return
		}
		http.Redirect(w, r, hub.URL+"/files/"+r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], http.StatusFound)
	}))
	defer hops2.Close()
	code, _, errs = runSources(t, nil, source.Options{}, "inspect", hops2.URL+"/model-00001-of-00004.safetensors")
	assert.Equal(t, 0, code, "ten redirects are followed: %s", errs)
}

// TestTrustUserinfoRedacted: a SRC with credentials in its URL
// (https://user:pw@host/…, or a token as user name) is read with them,
// and the password appears nowhere ckpt writes: not in any command's
// stdout (every format), stderr, error message, report file, contract,
// cache manifest, packed archive, extracted file.
func TestTrustUserinfoRedacted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	hub := sourcetest.NewHub(base, "org/base")
	defer hub.Close()
	hub.AddRepo("org/ft", ft)
	var sawBasic atomic.Bool
	hub.OnRequest = func(r *http.Request) {
		if _, pw, ok := r.BasicAuth(); ok && pw == "s3cretpw" {
			sawBasic.Store(true)
		}
	}
	opt := source.Options{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 2}
	host := strings.TrimPrefix(hub.URL, "http://")
	for _, cred := range []struct{ userinfo, secret string }{{"alice:s3cretpw", "s3cretpw"}, {"hf_usertoken", "hf_usertoken"}} {
		out := t.TempDir()
		root := "http://" + cred.userinfo + "@" + host
		src := root + "/files/" + ckpt.IndexFile
		ftSrc := root + "/org/ft/resolve/main/"
		cacheDir := filepath.Join(out, "cache")
		var transcript []string
		run := func(wantCode int, args ...string) {
			t.Helper()
			code, stdout, stderr := runSources(t, nil, opt, args...)
			assert.Equal(t, wantCode, code, "%v: %s", args, stderr)
			transcript = append(transcript, stdout, stderr)
		}
		for _, f := range []string{"text", "table", "json", "csv", "markdown"} {
			run(0, "inspect", src, "--format", f)
			run(0, "verify", src, "--format", f)
			run(0, "map", src, "--format", f)
		}
		run(0, "inspect", src, "--format", "jsonl")
		run(0, "verify", src, "--read-data", "--format", "jsonl", "--progress", "plain")
		run(0, "contract", src)
		run(0, "contract", src, "-o", filepath.Join(out, "contract.json"))
		run(1, "verify", ftSrc, "--against", filepath.Join(out, "contract.json"), "--format", "json")
		for _, f := range []string{"text", "json", "jsonl", "csv", "markdown"} {
			run(1, "diff", src, ftSrc, "--format", f, "--progress", "plain")
		}
		run(1, "diff", src, ftSrc, "--by", "layer", "--format", "html", "-o", filepath.Join(out, "r.html"))
		run(1, "diff", src, ftSrc, "--format", "markdown", "-o", filepath.Join(out, "r.md"))
		run(0, "extract", src, "--match", "mtp.**", "--dtype", "bf16", "-o", filepath.Join(out, "mtp.safetensors"), "--progress", "plain")
		run(0, "extract", src, "--match", "mtp.**", "-o", filepath.Join(out, "mtp")+string(filepath.Separator), "--format", "json")
		run(0, "cache", "build", src, "-o", cacheDir, "--progress", "plain")
		run(0, "cache", "build", src, "-o", cacheDir, "--format", "json")
		run(0, "cache", "verify", cacheDir, "--source", src, "--format", "json")
		run(0, "cache", "verify", cacheDir, "--source", src)
		run(0, "cache", "identify", cacheDir, "--source", src, "--format", "json")
		run(0, "cache", "identify", cacheDir, "--source", src)
		run(0, "cache", "ls", cacheDir, "--format", "json")
		run(0, "map", src, "--against-cache", cacheDir)
		run(1, "map", src, "--against-cache", cacheDir, "--mesh", "1x4") // the plan has problems: not compared
		run(0, "cache", "pack", cacheDir, "-o", filepath.Join(out, "cache.tar.zst"))
		run(0, "cache", "unpack", filepath.Join(out, "cache.tar.zst"), "-o", filepath.Join(out, "unpacked"))
		// Errors that name the source: a missing file, a refused request,
		// a URL that does not parse, a scheme without a host, offline.
		run(2, "inspect", root+"/files/nope.safetensors")
		run(2, "inspect", root+"/files/model.safetensors.index.json%zz")
		run(2, "inspect", "http://"+cred.userinfo+"@/files/x.safetensors")
		run(2, "inspect", root+"/files/config.txt")
		run(2, "inspect", src, "--match", "nothing.**")
		run(2, "map", src, "--match", "nothing.**")
		run(2, "verify", ftSrc, "--against", filepath.Join(out, "contract.json"), "--match", "nothing.**")
		run(2, "extract", src, "--match", "nothing.**", "-o", filepath.Join(out, "none.safetensors"))
		run(2, "diff", src, ftSrc, "--match", "nothing.**")
		code, _, stderr := runSources(t, map[string]string{"HF_HUB_OFFLINE": "1"}, opt, "inspect", src)
		assert.Equal(t, 2, code)
		transcript = append(transcript, stderr)
		hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
			return sourcetest.Fault{Kind: sourcetest.Reject, Status: http.StatusForbidden, Body: `{"error":"no"}`}
		}
		run(2, "inspect", src)
		hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
			return sourcetest.Fault{Kind: sourcetest.Status503, RetryAfter: "0"}
		}
		run(2, "inspect", src)
		hub.Inject = nil
		// The connection itself fails.
		run(2, "inspect", "http://"+cred.userinfo+"@127.0.0.1:1/files/"+ckpt.IndexFile)

		all := strings.Join(transcript, "\n")
		assert.Empty(t, linesWith(all, cred.secret), "stdout and stderr of every command")
		assert.Contains(t, all, ckpt.Redacted+"@", "the source is named, redacted")
		var files int
		require.NoError(t, filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			require.NoError(t, err)
			if d.IsDir() {
				return nil
			}
			files++
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Empty(t, linesWith(string(data), cred.secret), "file %s", p)
			return nil
		}))
		assert.Greater(t, files, 150, "reports, contract, extracts, two caches")
		manifest, err := os.ReadFile(filepath.Join(out, "unpacked", "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))
		require.NoError(t, err, "the unpacked archive's manifest")
		assert.Contains(t, string(manifest), ckpt.Redacted+"@"+host, "the manifest names the source, redacted")
	}
	assert.True(t, sawBasic.Load(), "the credentials are still sent to the URL's host")
}

// TestTrustSignedURLRedacted: a hub's redirect to a signed CDN URL
// (X-Amz-Signature, Signature and Key-Pair-Id, token, Expires) whose later
// reads fail: the query is a credential (it reads the file until it
// expires), so no message, finding, retry or request line shows it; each
// still names the file by its path.
func TestTrustSignedURLRedacted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	hub := sourcetest.NewHub(base, "org/base")
	defer hub.Close()
	hub.AddRepo("org/ft", ft)
	hub.Redirect = true
	hub.SignedQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=amzsecret0123&Signature=cfsecret4567&Key-Pair-Id=KPSECRET89&token=toksecretab"
	secrets := []string{"amzsecret", "cfsecret", "KPSECRET", "toksecret", "Expires=", "X-Amz-"}
	cdn := hub.Serve()
	hub.RedirectTo = cdn.URL
	cache := filepath.Join(t.TempDir(), "cache")
	code, _, errs := runApp(t, "cache", "build", base, "-o", cache, "--progress", "none")
	require.Equal(t, 0, code, errs)
	opt := source.Options{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxAttempts: 2,
		StuckAttempts: 2, StuckBackoffBase: time.Millisecond, StuckBackoffMax: time.Millisecond}
	env := map[string]string{"HF_ENDPOINT": hub.URL}
	var transcript []string
	named := `/org/base/[^ ]*model[-.][^ ]*(safetensors|json)`
	check := func(what string, code, want int, out, errs string) {
		t.Helper()
		assert.Equal(t, want, code, "%s: %s", what, errs)
		all := out + "\n" + errs
		for _, s := range secrets {
			assert.Empty(t, linesWith(all, s), "%s: the signed query (%s)", what, s)
		}
		if named != "" {
			assert.Regexp(t, named, all, "%s names the file", what)
		}
		transcript = append(transcript, all)
	}
	// The CDN answers the first read of each file (its header) and fails
	// every later one.
	for _, fault := range []sourcetest.Fault{{Kind: sourcetest.Status500}, {Kind: sourcetest.Reject, Status: http.StatusForbidden, Body: "denied"}} {
		hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
			if strings.HasPrefix(r.URL.Path, "/cdn/") && !strings.HasPrefix(r.Header.Get("Range"), "bytes=0-") {
				return fault
			}
			return sourcetest.Fault{}
		}
		for _, args := range [][]string{
			{"verify", "hf://org/base", "--read-data", "--format", "text"},
			{"verify", "hf://org/base", "--read-data", "--format", "json"},
			{"verify", "hf://org/base", "--read-data", "--format", "jsonl", "-v"},
		} {
			code, out, errs := runSources(t, env, opt, append(args, "--progress", "none")...)
			check(fmt.Sprint(fault.Kind, args), code, 1, out, errs)
		}
		for _, args := range [][]string{
			{"diff", "hf://org/base", "hf://org/ft", "--format", "json"},
			{"extract", "hf://org/base", "--match", "mtp.**", "--dtype", "bf16", "-o", filepath.Join(t.TempDir(), "mtp.safetensors")},
			{"cache", "build", "hf://org/base", "-o", filepath.Join(t.TempDir(), "c")},
			{"cache", "verify", cache, "--source", "hf://org/base", "--read-data", "--format", "json"},
		} {
			code, out, errs := runSources(t, env, opt, append(args, "--progress", "none")...)
			check(fmt.Sprint(fault.Kind, args), code, 2, out, errs)
		}
	}
	// The CDN is gone: the redirect's own request fails to connect.
	hub.Inject = nil
	cdn.Close()
	for _, args := range [][]string{{"inspect", "hf://org/base"}, {"inspect", "hf://org/base", "-v"}} {
		code, out, errs := runSources(t, env, opt, args...)
		check(fmt.Sprint("no CDN ", args), code, 2, out, errs)
	}
	// A SRC that is itself a signed URL: its query is sent, never written
	// (stdout, stderr, the cache manifest).
	hub.Redirect = false
	signed := hub.URL + "/files/" + ckpt.IndexFile + "?" + hub.SignedQuery
	built := filepath.Join(t.TempDir(), "signed")
	named = `/files/` + regexp.QuoteMeta(ckpt.IndexFile+"?"+ckpt.Redacted)
	for _, args := range [][]string{
		{"inspect", signed, "--format", "json"},
		{"verify", signed},
	} {
		code, out, errs := runSources(t, env, opt, args...)
		check(fmt.Sprint("signed SRC ", args), code, 0, out, errs)
	}
	code, out, errs := runSources(t, env, opt, "cache", "build", signed, "-o", built)
	named = ""
	check("signed SRC cache build", code, 0, out, errs)
	manifest, err := os.ReadFile(filepath.Join(built, "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))
	require.NoError(t, err)
	for _, s := range secrets {
		assert.NotContains(t, string(manifest), s, "the manifest's source")
	}
	assert.Contains(t, string(manifest), ckpt.IndexFile+"?"+ckpt.Redacted)
	// The messages did quote the CDN's URLs, by their paths.
	all := strings.Join(transcript, "\n")
	assert.Contains(t, all, "/cdn/org/base/model-00002-of-00004.safetensors?"+ckpt.Redacted)
	assert.Contains(t, all, "/cdn/org/base/model.safetensors.index.json?"+ckpt.Redacted+`": dial tcp`)
}

// linesWith returns the lines of s that contain sub.
func linesWith(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

package source_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
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

var (
	smallOnce sync.Once
	smallDir  string
	smallErr  error
)

// smallFixture writes synth.Small() once per test binary; tests must
// not modify it (copy it first).
func smallFixture(t *testing.T) string {
	t.Helper()
	smallOnce.Do(func() {
		smallDir, smallErr = os.MkdirTemp("", "ckpt-source-test-")
		if smallErr == nil {
			smallErr = synth.Write(filepath.Join(smallDir, "m"), synth.Small())
		}
	})
	require.NoError(t, smallErr)
	return filepath.Join(smallDir, "m")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if smallDir != "" {
		os.RemoveAll(smallDir)
	}
	os.Exit(code)
}

// copyDir copies a flat fixture directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

const shard = "model-00001-of-00004.safetensors"

// fastOpts makes retries quick and requests small, so that a read of one
// shard takes many requests.
func fastOpts() source.Options {
	return source.Options{PrefixSize: 4 << 10, ChunkSize: 16 << 10, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		StuckBackoffBase: time.Millisecond, StuckBackoffMax: 5 * time.Millisecond,
		MaxRetryAfter: 2 * time.Second, IdleTimeout: 2 * time.Second, Timeout: 20 * time.Second}
}

// readAll reads a blob in uneven pieces; it returns what it read and the
// first error.
func readAll(b ckpt.Blob) ([]byte, error) {
	out := make([]byte, b.Size())
	step := int64(7001)
	for off := int64(0); off < b.Size(); off += step {
		end := min(off+step, b.Size())
		n, err := b.ReadAt(out[off:end], off)
		if err != nil && !(errors.Is(err, io.EOF) && n == int(end-off)) {
			return out[:off+int64(n)], err
		}
	}
	return out, nil
}

// faultOn injects fault k into the requests for file whose 1-based number
// satisfies when.
func faultOn(file string, k sourcetest.FaultKind, retryAfter string, when func(n int64) bool) func(*http.Request, string) sourcetest.Fault {
	var n atomic.Int64
	return func(r *http.Request, f string) sourcetest.Fault {
		if f != file {
			return sourcetest.Fault{}
		}
		if i := n.Add(1); when(i) {
			if k == alternating5xx {
				return sourcetest.Fault{Kind: []sourcetest.FaultKind{sourcetest.Status500, sourcetest.Status503}[i%2], RetryAfter: retryAfter}
			}
			return sourcetest.Fault{Kind: k, RetryAfter: retryAfter}
		}
		return sourcetest.Fault{}
	}
}

// alternating5xx is a fault of faultOn: 500 and 503 in turn.
const alternating5xx = sourcetest.FaultKind(1000)

func TestHTTPBlobFaults(t *testing.T) {
	t.Parallel()
	dir := smallFixture(t)
	want, err := os.ReadFile(filepath.Join(dir, shard))
	require.NoError(t, err)
	require.Greater(t, len(want), 64<<10, "fixture shard must need several chunks")
	nth := func(ns ...int64) func(int64) bool {
		return func(n int64) bool {
			for _, x := range ns {
				if n == x {
					return true
				}
			}
			return false
		}
	}
	always := func(int64) bool { return true }
	from := func(k int64) func(int64) bool { return func(n int64) bool { return n >= k } }
	cases := []struct {
		name     string
		kind     sourcetest.FaultKind
		after    string
		when     func(int64) bool
		opts     func(*source.Options)
		wantErr  error  // errors.Is target; nil with errText "" means success
		errText  string // substring of the error
		minDelay time.Duration
		maxDelay time.Duration
	}{
		{name: "clean"},
		{name: "connection dropped mid-body", kind: sourcetest.Drop, when: nth(1, 3, 4)},
		{name: "500s", kind: sourcetest.Status500, when: nth(2, 3, 5)},
		{name: "503 with Retry-After date", kind: sourcetest.Status503, after: time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), when: nth(2)},
		{name: "429 with Retry-After", kind: sourcetest.TooMany, after: "1", when: nth(2), minDelay: 900 * time.Millisecond},
		{name: "429 with Retry-After capped", kind: sourcetest.TooMany, after: "3600", when: nth(2), opts: func(o *source.Options) { o.MaxRetryAfter = 300 * time.Millisecond },
			minDelay: 250 * time.Millisecond, maxDelay: 3 * time.Second},
		{name: "wrong Content-Range once", kind: sourcetest.WrongRange, when: nth(2)},
		{name: "short body", kind: sourcetest.Short, when: nth(1, 2, 6)},
		{name: "stalled body then fine", kind: sourcetest.HangBody, when: nth(3), opts: func(o *source.Options) { o.IdleTimeout = 300 * time.Millisecond }},
		// The same status every time, nothing received: 6 attempts, as
		// huggingface_hub makes (its backoff is 23 s; fastOpts' is ms).
		{name: "500 forever", kind: sourcetest.Status500, when: from(2), opts: func(o *source.Options) { o.Timeout = time.Minute },
			errText: "giving up after 6 attempts, each failing the same way", maxDelay: 3 * time.Second},
		{name: "500 forever, MaxAttempts", kind: sourcetest.Status500, when: from(2), opts: func(o *source.Options) { o.MaxAttempts = 3 }, errText: "giving up after 3 attempts"},
		// Failing in changing ways: retried for as long as the read's
		// time limit allows.
		{name: "500 and 503 in turn forever", kind: alternating5xx, when: from(2), opts: func(o *source.Options) { o.Timeout = time.Second },
			wantErr: errTimeout, minDelay: 900 * time.Millisecond, maxDelay: 3 * time.Second},
		{name: "wrong Content-Range forever", kind: sourcetest.WrongRange, when: from(2), errText: "Content-Range"},
		{name: "short bodies forever", kind: sourcetest.Short, when: from(2), errText: "body ended after"},
		{name: "ETag changes mid-read", kind: sourcetest.NewVersion, when: from(4), wantErr: source.ErrChanged},
		{name: "server ignores Range", kind: sourcetest.IgnoreRange, when: always, opts: func(o *source.Options) { o.MaxDiscard = 1 << 30 }},
		{name: "server ignores Range, far offsets", kind: sourcetest.IgnoreRange, when: always, opts: func(o *source.Options) { o.MaxDiscard = 64 << 10 }, wantErr: source.ErrNoRange},
		{name: "hanging server", kind: sourcetest.Hang, when: from(2), opts: func(o *source.Options) { o.IdleTimeout, o.Timeout = 200*time.Millisecond, time.Second },
			errText: "", wantErr: errTimeout, maxDelay: 3 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hub := sourcetest.NewHub(dir, "org/model")
			defer hub.Close()
			if tc.kind != sourcetest.None {
				hub.Inject = faultOn(shard, tc.kind, tc.after, tc.when)
			}
			o := fastOpts()
			if tc.opts != nil {
				tc.opts(&o)
			}
			ctx := context.Background()
			s, err := source.NewHTTPStore(ctx, hub.URL+"/files", "", o)
			require.NoError(t, err)
			start := time.Now()
			b, err := s.Open(ctx, shard)
			var got []byte
			if err == nil {
				require.Equal(t, int64(len(want)), b.Size())
				got, err = readAll(b)
			}
			elapsed := time.Since(start)
			t.Logf("%d requests, %d bytes served, %v, err=%v", hub.Requests.Load(), hub.BytesServed.Load(), elapsed, err)
			// Whatever happened, every byte handed out is right.
			require.LessOrEqual(t, len(got), len(want))
			require.Equal(t, want[:len(got)], got, "bytes read through HTTP differ from the file")
			switch {
			case tc.wantErr == errTimeout:
				require.Error(t, err)
				assert.Contains(t, err.Error(), "time")
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
			case tc.errText != "":
				require.ErrorContains(t, err, tc.errText)
			default:
				require.NoError(t, err)
				require.Len(t, got, len(want))
			}
			if err != nil {
				assert.Contains(t, err.Error(), shard, "errors name the file")
			}
			if tc.minDelay > 0 {
				assert.GreaterOrEqual(t, elapsed, tc.minDelay)
			}
			if tc.maxDelay > 0 {
				assert.Less(t, elapsed, tc.maxDelay)
			}
		})
	}
}

var errTimeout = errors.New("timeout")

func TestHTTPIgnoreRangeReadsOnlyThePrefix(t *testing.T) {
	t.Parallel()
	dir := smallFixture(t)
	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	hub.Inject = func(*http.Request, string) sourcetest.Fault { return sourcetest.Fault{Kind: sourcetest.IgnoreRange} }
	o := fastOpts()
	o.MaxDiscard = 32 << 10
	s, err := source.NewHTTPStore(context.Background(), hub.URL+"/files/", "", o)
	require.NoError(t, err)
	b, err := s.Open(context.Background(), shard)
	require.NoError(t, err)
	_, received := s.Stats()
	assert.LessOrEqual(t, received, int64(4<<10), "open must take only the prefix of a 200 response")
	buf := make([]byte, 100)
	_, err = b.ReadAt(buf, 20000)
	require.NoError(t, err, "a near offset is reached by discarding")
	_, err = b.ReadAt(buf, b.Size()-200)
	require.ErrorIs(t, err, source.ErrNoRange)
	assert.Contains(t, err.Error(), "does not support HTTP Range")
}

func TestHTTPPinnedETag412(t *testing.T) {
	t.Parallel()
	dir := copyDir(t, smallFixture(t))
	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	s, err := source.NewHTTPStore(context.Background(), hub.URL+"/files/", "", fastOpts())
	require.NoError(t, err)
	b, err := s.Open(context.Background(), shard)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, shard))
	require.NoError(t, err)
	data[len(data)-1] ^= 1
	require.NoError(t, hub.Update(shard, data)) // a new version on the server
	buf := make([]byte, 1000)
	_, err = b.ReadAt(buf, int64(len(data)-1000))
	require.ErrorIs(t, err, source.ErrChanged)
	assert.Contains(t, err.Error(), "412")
}

func TestHTTPNotFound(t *testing.T) {
	t.Parallel()
	hub := sourcetest.NewHub(smallFixture(t), "org/model")
	defer hub.Close()
	ctx := context.Background()
	s, err := source.NewHTTPStore(ctx, hub.URL+"/org/model/resolve/main/", "", fastOpts())
	require.NoError(t, err)
	_, err = s.Open(ctx, "nope.safetensors")
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), "EntryNotFound")
	assert.Contains(t, err.Error(), "nope.safetensors")

	s, err = source.NewHTTPStore(ctx, hub.URL+"/org/other/resolve/main/", "", fastOpts())
	require.NoError(t, err)
	_, err = s.Open(ctx, "config.json")
	require.Error(t, err)
	assert.NotErrorIs(t, err, fs.ErrNotExist, "a missing repository is not a missing file")
	assert.Contains(t, err.Error(), "RepoNotFound")
}

func TestHTTPConcurrentOpenReusesConnections(t *testing.T) {
	t.Parallel()
	hub := sourcetest.NewHub(smallFixture(t), "org/model")
	defer hub.Close()
	o := source.Options{Getenv: mapEnv(map[string]string{"HF_ENDPOINT": hub.URL}), MaxConcurrent: 3}
	ctx := context.Background()
	openers := source.Openers(o) // one client, as in one command
	for range 3 {
		c, err := ckpt.Open(ctx, "hf://org/model", ckpt.Options{}, openers...)
		require.NoError(t, err)
		require.Len(t, c.Files, 4)
		require.NoError(t, c.Close())
	}
	// index + config + 4 shards per open, one request each: the index
	// probe is answered from the store's cache of small files.
	assert.Equal(t, int64(3*6), hub.Requests.Load())
	// Without reuse this would be 18 connections; the transport may dial
	// a spare while another request finishes, hence the slack.
	t.Logf("%d requests over %d connections", hub.Requests.Load(), hub.Conns.Load())
	assert.LessOrEqual(t, hub.Conns.Load(), int64(2*3), "connections are reused")
}

func TestHTTPToken(t *testing.T) {
	t.Parallel()
	hub := sourcetest.NewHub(smallFixture(t), "org/model")
	defer hub.Close()
	hub.Token = "s3cret"
	ctx := context.Background()
	env := map[string]string{"HF_ENDPOINT": hub.URL, "HF_TOKEN": "s3cret"}
	c, err := ckpt.Open(ctx, "hf://org/model", ckpt.Options{}, source.Openers(source.Options{Getenv: mapEnv(env)})...)
	require.NoError(t, err)
	c.Close()
	c, err = ckpt.Open(ctx, hub.FileURL(ckpt.IndexFile), ckpt.Options{}, source.Openers(source.Options{Getenv: mapEnv(env)})...)
	require.NoError(t, err, "the token goes to the endpoint's host")
	c.Close()

	_, err = ckpt.Open(ctx, "hf://org/model", ckpt.Options{}, source.Openers(source.Options{Getenv: mapEnv(map[string]string{"HF_ENDPOINT": hub.URL})})...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "HF_TOKEN")
	assert.NotContains(t, err.Error(), "s3cret")

	// Another host (same server, other name) does not get the token.
	_, port, err := net.SplitHostPort(hub.Listener.Addr().String())
	require.NoError(t, err)
	other := "http://localhost:" + port
	_, err = ckpt.Open(ctx, other+"/files/"+ckpt.IndexFile, ckpt.Options{}, source.Openers(source.Options{Getenv: mapEnv(env)})...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
}

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestHTTPCancel(t *testing.T) {
	t.Parallel()
	hub := sourcetest.NewHub(smallFixture(t), "org/model")
	defer hub.Close()
	hub.Inject = faultOn(shard, sourcetest.Hang, "", func(n int64) bool { return n >= 2 })
	ctx, cancel := context.WithCancel(context.Background())
	s, err := source.NewHTTPStore(ctx, hub.URL+"/files/", "", fastOpts())
	require.NoError(t, err)
	b, err := s.Open(ctx, shard)
	require.NoError(t, err)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = b.ReadAt(make([]byte, 1000), 100000)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), time.Second)
}

// A header larger than the speculative prefix takes exactly one more
// request; one that fits takes none.
func TestHTTPHeaderTakesAtMostTwoRequests(t *testing.T) {
	t.Parallel()
	dir := smallFixture(t)
	for _, prefix := range []int64{1 << 10, 64 << 10} {
		hub := sourcetest.NewHub(dir, "org/model")
		o := fastOpts()
		o.PrefixSize = prefix
		s, err := source.NewHTTPStore(context.Background(), hub.URL+"/files/", "", o)
		require.NoError(t, err)
		b, err := s.Open(context.Background(), shard)
		require.NoError(t, err)
		h, err := ckpt.ReadHeader(b, b.Size(), shard)
		require.NoError(t, err)
		require.Greater(t, int64(h.Size), int64(1<<10), "the header must outgrow the small prefix")
		want := int64(1)
		if int64(h.Size)+8 > prefix {
			want = 2
		}
		assert.Equal(t, want, hub.Requests.Load(), "prefix %d, header %d bytes", prefix, h.Size)
		hub.Close()
	}
}

// The hub answers resolve URLs of LFS files with a redirect to a CDN on
// another host; reads follow it, keep the token to the hub, and stay
// pinned by checking every response's ETag.
func TestHTTPRedirectToCDN(t *testing.T) {
	t.Parallel()
	dir := smallFixture(t)
	cdn := sourcetest.NewHub(dir, "org/model")
	defer cdn.Close()
	var sawAuthAtCDN atomic.Bool
	cdn.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if r.Header.Get("Authorization") != "" {
			sawAuthAtCDN.Store(true)
		}
		return sourcetest.Fault{}
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		// localhost: another host name for the same machine.
		http.Redirect(w, r, strings.Replace(cdn.FileURL(name), "127.0.0.1", "localhost", 1), http.StatusFound)
	}))
	defer front.Close()
	env := mapEnv(map[string]string{"HF_ENDPOINT": front.URL, "HF_TOKEN": "tok"})
	c, err := ckpt.Open(context.Background(), "hf://org/model", ckpt.Options{}, source.Openers(source.Options{Getenv: env})...)
	require.NoError(t, err)
	defer c.Close()
	local, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer local.Close()
	for _, name := range []string{"model.language_model.embed_tokens.weight", "mtp.fc.weight"} {
		a, ok := c.Lookup(name)
		require.True(t, ok, name)
		b, _ := local.Lookup(name)
		x, y := make([]byte, a.NBytes()), make([]byte, b.NBytes())
		_, err = a.ReadAt(x, 0)
		require.NoError(t, err)
		_, err = b.ReadAt(y, 0)
		require.NoError(t, err)
		require.Equal(t, y, x, name)
	}
	assert.False(t, sawAuthAtCDN.Load(), "the token must not follow a redirect to another host")
}

// Against a hub that redirects resolve URLs to signed CDN URLs, as the
// real one does: each file is resolved once (its first request), and every
// later read is one request to the CDN, not a resolve plus a redirect; a
// 403 from the CDN (an expired or revoked signature) resolves the file
// again and the read succeeds.
func TestHTTPOneRequestPerRead(t *testing.T) {
	t.Parallel()
	dir := smallFixture(t)
	want, err := os.ReadFile(filepath.Join(dir, shard))
	require.NoError(t, err)
	for _, expire := range []bool{false, true} {
		hub := sourcetest.NewHub(dir, "org/model")
		hub.Redirect = true
		var cdnReads atomic.Int64
		hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
			if expire && strings.HasPrefix(r.URL.Path, "/cdn/") && file == shard && cdnReads.Add(1) == 20 {
				return sourcetest.Fault{Kind: sourcetest.Reject, Status: http.StatusForbidden, Body: "Request has expired"}
			}
			return sourcetest.Fault{}
		}
		st, err := source.NewHTTPStore(context.Background(), hub.URL+"/org/model/resolve/main", "", fastOpts())
		require.NoError(t, err)
		f, err := st.Open(context.Background(), shard)
		require.NoError(t, err)
		assert.Equal(t, int64(1), hub.Resolves.Load(), "opening resolves the file")
		assert.Equal(t, int64(1), hub.CDN.Load())
		hub.ResetCounters()
		const reads = 100
		step := int64(len(want)) / reads
		for i := int64(0); i < reads; i++ {
			buf := make([]byte, 300)
			_, err := f.ReadAt(buf, i*step)
			require.NoError(t, err)
			require.Equal(t, want[i*step:i*step+300], buf)
		}
		hub.Quiesce()
		t.Logf("expire=%v: %d reads: %d requests (%d resolve, %d CDN)", expire, reads, hub.Requests.Load(), hub.Resolves.Load(), hub.CDN.Load())
		if expire {
			assert.Equal(t, int64(1), hub.Resolves.Load(), "the refused signed URL is resolved again, once")
			assert.Equal(t, int64(reads), hub.CDN.Load(), "the first read is in the prefix; one more for the refused one")
		} else {
			assert.Zero(t, hub.Resolves.Load(), "reads go to the CDN directly")
			assert.Equal(t, int64(reads-1), hub.CDN.Load(), "one request per read (the first is in the prefix)")
		}
		hub.Close()
	}
}

// TestHTTPRefusedHints: a 403 the hub answers itself is about the
// repository (private or gated: a token hint); one from the CDN the hub
// redirected the download to is not (the hub granted access by
// redirecting): its hint names that server and says the token is not
// sent there.
func TestHTTPRefusedHints(t *testing.T) {
	t.Parallel()
	dir := smallFixture(t)
	for _, tc := range []struct {
		name      string
		cdn       bool // the CDN refuses, not the hub
		want, not string
	}{
		{"hub", false, "the repository may be private or gated", "redirected"},
		{"cdn", true, "where the hub redirected the download", "gated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := sourcetest.NewHub(dir, "org/model")
			defer hub.Close()
			hub.Redirect = tc.cdn // (a redirect is answered before any fault)
			cdn := hub.Serve()
			hub.RedirectTo = cdn.URL
			hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
				if file == shard {
					return sourcetest.Fault{Kind: sourcetest.Reject, Status: http.StatusForbidden, Body: "denied"}
				}
				return sourcetest.Fault{}
			}
			opt := fastOpts()
			opt.Getenv = mapEnv(map[string]string{"HF_ENDPOINT": hub.URL})
			_, err := ckpt.Open(context.Background(), "hf://org/model", ckpt.Options{}, source.Openers(opt)...)
			var he *source.HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, http.StatusForbidden, he.Status)
			assert.Contains(t, he.Hint, tc.want)
			assert.NotContains(t, he.Hint, tc.not)
			if tc.cdn {
				assert.Contains(t, he.Hint, "refused by "+cdn.URL+",")
			}
		})
	}
}

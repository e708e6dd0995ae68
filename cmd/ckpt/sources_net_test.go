package main

import (
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stuckOpts makes the schedule of failures that do not heal fast: the
// defaults wait 1, 2, 4, 8, 8 s (23 s; source's TestStuckBackoffIsHubs),
// these 10, 20, 40, 80, 80 ms, the same shape.
func stuckOpts() source.Options {
	return source.Options{StuckBackoffBase: 10 * time.Millisecond, StuckBackoffMax: 80 * time.Millisecond}
}

var retryLine = regexp.MustCompile(`(?m)^ckpt: GET (\S+) failed: (.*); retry (\d) of 5 in (\S+)$`)

// checkRetries checks that stderr has one line per retry, 1 to 5 of 5,
// each saying what failed and when the next attempt is.
func checkRetries(t *testing.T, stderr, url, reason string) {
	t.Helper()
	m := retryLine.FindAllStringSubmatch(stderr, -1)
	require.Len(t, m, 5, stderr)
	for i, l := range m {
		assert.Equal(t, url, l[1])
		assert.Contains(t, l[2], reason)
		assert.Equal(t, string(rune('1'+i)), l[3])
		assert.Equal(t, []string{"10ms", "20ms", "40ms", "80ms", "80ms"}[i], l[4])
	}
}

// TestNetNoNetworkGivesUp: with no network (no name resolves) or nothing
// listening, `inspect hf://org/name` and a URL fail after the 6 attempts
// huggingface_hub makes, printing each retry on stderr (-q: only the
// error), instead of retrying for the 5-minute limit of a read silently.
// With the default waits (23 s) that is under 30 s.
func TestNetNoNetworkGivesUp(t *testing.T) {
	t.Parallel()
	opt := stuckOpts()
	opt.Client = sourcetest.Client(nil) // resolves nothing: "no such host"
	env := map[string]string{"HF_ENDPOINT": "https://hub.example"}
	start := time.Now()
	code, out, errs := runSources(t, env, opt, "inspect", "hf://org/name")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Less(t, time.Since(start), 10*time.Second)
	index := "https://hub.example/org/name/resolve/main/" + ckpt.IndexFile
	checkRetries(t, errs, index, "lookup hub.example: no such host")
	assert.Contains(t, errs, "ckpt: opening "+index+": giving up after 6 attempts, each failing the same way")
	assert.Equal(t, 6, strings.Count(errs, "\n"), "5 retries and the error: %s", errs)

	code, _, errs = runSources(t, env, opt, "inspect", "hf://org/name", "-q")
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, strings.Count(errs, "\n"), "-q: the error alone: %s", errs)
	assert.Contains(t, errs, "no such host")

	// Connection refused: a loopback port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	code, _, errs = runSources(t, nil, stuckOpts(), "inspect", "http://"+addr+"/m/model.safetensors")
	assert.Equal(t, 2, code)
	checkRetries(t, errs, "http://"+addr+"/m/config.json", "connection refused") // the config is read first
	assert.Contains(t, errs, "giving up after 6 attempts, each failing the same way")
}

// TestNet503GivesUp: a hub answering 503 to every request for the index
// fails after 6 attempts naming the 503 (under 60 s with the default
// waits), each retry on stderr; a 503 that changes into a drop, then
// heals, is retried and read.
func TestNet503GivesUp(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()
	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if file == ckpt.IndexFile {
			return sourcetest.Fault{Kind: sourcetest.Status503}
		}
		return sourcetest.Fault{}
	}
	env := map[string]string{"HF_ENDPOINT": hub.URL}
	code, _, errs := runSources(t, env, stuckOpts(), "inspect", "hf://org/model")
	assert.Equal(t, 2, code)
	index := hub.URL + "/org/model/resolve/main/" + ckpt.IndexFile
	checkRetries(t, errs, index, "503 Service Unavailable")
	assert.Contains(t, errs, "giving up after 6 attempts, each failing the same way: GET "+index+": 503 Service Unavailable")

	// Changing failures keep today's per-read deadline: 503, then a
	// dropped body, 503, a drop, 503 ... healed at the 8th attempt.
	var n int
	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if file != ckpt.IndexFile {
			return sourcetest.Fault{}
		}
		n++
		switch {
		case n >= 8:
			return sourcetest.Fault{}
		case n%2 == 1:
			return sourcetest.Fault{Kind: sourcetest.Status503}
		}
		return sourcetest.Fault{Kind: sourcetest.Drop}
	}
	opt := stuckOpts()
	opt.BackoffBase, opt.BackoffMax = time.Millisecond, 5*time.Millisecond
	code, _, errs = runSources(t, env, opt, "inspect", "hf://org/model")
	assert.Equal(t, 0, code, errs)
	assert.Contains(t, errs, "retry 7 (retries go on for up to 5m0s per read)", "the 8th attempt came")
}

// TestNetVerbose: -v (or HF_DEBUG=1) logs every request on stderr —
// method, URL without credentials, range, status, bytes, attempt — and
// nothing else changes; without it, or with -q, no request is logged.
func TestNetVerbose(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()
	var first bool
	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if file == "config.json" && !first {
			first = true
			return sourcetest.Fault{Kind: sourcetest.Status500}
		}
		return sourcetest.Fault{}
	}
	src := strings.Replace(hub.URL, "http://", "http://alice:s3cretpw@", 1) + "/files/" + ckpt.IndexFile
	base := strings.Replace(hub.URL, "http://", "http://alice:xxxxx@", 1) + "/files/"
	opt := stuckOpts()
	code, want, errs := runSources(t, nil, opt, "inspect", src, "--format", "json")
	require.Equal(t, 0, code, errs)
	assert.NotContains(t, errs, "ckpt: http:")
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"-v"}},
		{nil, []string{"--verbose"}},
		{map[string]string{"HF_DEBUG": "1"}, nil},
	} {
		first = false
		code, out, errs := runSources(t, tc.env, opt, append([]string{"inspect", src, "--format", "json"}, tc.args...)...)
		require.Equal(t, 0, code, errs)
		assert.Equal(t, want, out, "stdout is the same")
		assert.NotContains(t, errs, "s3cretpw")
		assert.Regexp(t, `(?m)^ckpt: http: GET `+regexp.QuoteMeta(base+ckpt.IndexFile)+` bytes=0-65535: 206 Partial Content, \d+ bytes, \d+m?s$`, errs, tc)
		assert.Regexp(t, `(?m)^ckpt: http: GET `+regexp.QuoteMeta(base+"config.json")+` bytes=0-65535: 500 Internal Server Error, 0 bytes, \d+m?s$`, errs, tc)
		assert.Regexp(t, `(?m)^ckpt: http: GET `+regexp.QuoteMeta(base+"config.json")+` bytes=0-65535: 206 Partial Content, \d+ bytes, \d+m?s, attempt 2$`, errs, tc)
		assert.Regexp(t, `(?m)^ckpt: GET `+regexp.QuoteMeta(base+"config.json")+` failed: 500 Internal Server Error; retry 1 of 5 in 10ms$`, errs, tc)
		assert.GreaterOrEqual(t, strings.Count(errs, "ckpt: http: GET "), 7, "index, config twice, 4 shards")
	}
	first = false
	code, _, errs = runSources(t, map[string]string{"HF_DEBUG": "1"}, opt, "inspect", src, "-q")
	require.Equal(t, 0, code, errs)
	assert.Empty(t, errs, "-q silences requests and retries")
}

// TestNetTimeoutsFromEnv: HF_HUB_ETAG_TIMEOUT bounds the first request of
// a file (its metadata, as for huggingface_hub's HEAD) and
// HF_HUB_DOWNLOAD_TIMEOUT the requests that read it, in seconds.
func TestNetTimeoutsFromEnv(t *testing.T) {
	t.Parallel()
	model := filepath.Join(t.TempDir(), "model")
	require.NoError(t, synth.Write(model, synth.Small()))
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()
	const shard = "model-00002-of-00004.safetensors"
	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if file == "config.json" {
			return sourcetest.Fault{Kind: sourcetest.Hang}
		}
		return sourcetest.Fault{}
	}
	env := map[string]string{"HF_ENDPOINT": hub.URL, "HF_HUB_ETAG_TIMEOUT": "0.15", "HF_HUB_DOWNLOAD_TIMEOUT": "0.25"}
	opt := source.Options{Timeout: 600 * time.Millisecond, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}
	code, _, errs := runSources(t, env, opt, "inspect", "hf://org/model")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "config.json")
	assert.Contains(t, errs, "no response for 150ms (idle timeout)")

	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if file == shard && !strings.HasPrefix(r.Header.Get("Range"), "bytes=0-") {
			return sourcetest.Fault{Kind: sourcetest.Hang} // every read but the first
		}
		return sourcetest.Fault{}
	}
	o := opt
	o.PrefixSize = 1 << 10 // the shard's data is read after its header
	code, _, errs = runSources(t, env, o, "verify", "hf://org/model", "--read-data", "--progress", "none")
	assert.Equal(t, 2, code, errs)
	assert.Contains(t, errs, shard)
	assert.Contains(t, errs, "no response for 250ms (idle timeout)")
}

// TestNetProgressBarsOff: HF_HUB_DISABLE_PROGRESS_BARS=1 turns the
// default progress off, as for huggingface_hub's bars; an explicit
// --progress still shows it.
func TestNetProgressBarsOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	code, _, errs := runSources(t, nil, source.Options{}, "diff", base, ft)
	require.Equal(t, 1, code, errs)
	assert.Contains(t, errs, "diff: 100.0%")
	off := map[string]string{"HF_HUB_DISABLE_PROGRESS_BARS": "1"}
	code, _, errs = runSources(t, off, source.Options{}, "diff", base, ft)
	require.Equal(t, 1, code, errs)
	assert.NotContains(t, errs, "diff:")
	code, _, errs = runSources(t, off, source.Options{}, "diff", base, ft, "--progress", "plain")
	require.Equal(t, 1, code, errs)
	assert.Contains(t, errs, "diff: 100.0%")
}

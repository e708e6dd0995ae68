package source

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Options configure the HTTP sources. The zero value is usable: every
// field has a default.
type Options struct {
	// Getenv reads HF_ENDPOINT, HF_TOKEN, HF_TOKEN_PATH, HF_HUB_OFFLINE,
	// HF_HUB_CACHE, HF_HOME, HOME, CKPT_HTTP_TIMEOUT, HF_HUB_ETAG_TIMEOUT
	// and HF_HUB_DOWNLOAD_TIMEOUT (nil: no environment).
	Getenv func(string) string
	// Client is the HTTP client (nil: one client with its own Transport,
	// shared by every store the openers create, so connections are reused).
	Client *http.Client
	// Timeout bounds one operation — opening a file or one ReadAt —
	// including all its retries and backoff (default 5 minutes, or
	// $CKPT_HTTP_TIMEOUT as a Go duration such as "90s").
	Timeout time.Duration
	// IdleTimeout bounds the wait for a response's headers and for each
	// piece of its body when reading a file; a request that makes no
	// progress for this long is abandoned and retried (default
	// $HF_HUB_DOWNLOAD_TIMEOUT seconds, as huggingface_hub's download
	// timeout, else 30 s).
	IdleTimeout time.Duration
	// OpenIdleTimeout is IdleTimeout for the first request of a file, the
	// one that learns its size and ETag (huggingface_hub's metadata
	// request; default $HF_HUB_ETAG_TIMEOUT seconds, else IdleTimeout).
	OpenIdleTimeout time.Duration
	// PrefixSize is the speculative first range read when a file is opened
	// (default 64 KiB). A safetensors header that fits is read with that
	// one request; a larger one takes one more.
	PrefixSize int64
	// ChunkSize is the largest range requested at once; larger reads are
	// split (default 8 MiB).
	ChunkSize int64
	// MaxConcurrent bounds concurrent requests per store (default 64: a
	// sampled diff against a hub far away keeps many small reads in
	// flight; callers bound their own reads below it).
	MaxConcurrent int
	// MaxAttempts, when > 0, bounds the attempts of one read. By default
	// (0) a read that keeps failing transiently in changing ways or while
	// making progress (dropped connections, short bodies, stalls, 5xx and
	// 429 among other failures) is retried with backoff, resuming after
	// the bytes already received, for as long as Timeout allows.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the exponential backoff between
	// such attempts (defaults 200 ms and 10 s, with jitter).
	BackoffBase, BackoffMax time.Duration
	// A failure that does not heal — the host name does not resolve, the
	// connection is refused or the network unreachable, or every attempt
	// answers the same status (5xx, 429) with no byte received — is given
	// StuckAttempts attempts in all (default 6), StuckBackoffBase apart,
	// doubling up to StuckBackoffMax (defaults 1 s and 8 s: 23 s of
	// waiting), or the server's Retry-After: huggingface_hub's
	// http_backoff (max_retries 5, base_wait_time 1, max_wait_time 8).
	StuckAttempts                     int
	StuckBackoffBase, StuckBackoffMax time.Duration
	// MaxRetryAfter caps a server's Retry-After (default 60 s).
	MaxRetryAfter time.Duration
	// MaxDiscard is how many leading bytes may be read and thrown away
	// when a server ignores Range and a read starts past the prefix
	// (default 8 MiB); beyond that the read fails.
	MaxDiscard int64
	// UserAgent is sent with every request (default "ckpt").
	UserAgent string
	// OnRetry, when set, is told of every failed attempt that will be
	// made again, before the wait; OnRequest of every request when it
	// ends. Both may be called concurrently; the package never prints.
	OnRetry   func(Retry)
	OnRequest func(RequestLog)
}

// Retry is a failed attempt of a read that will be made again.
type Retry struct {
	Method, URL string // the URL without credentials or query
	Attempt     int    // the attempt that failed, from 1
	// Of is how many attempts this read is given in all; 0 when it is
	// bounded by Timeout instead.
	Of      int
	Wait    time.Duration // until the next attempt
	Timeout time.Duration // the read's time limit
	Reason  string        // what failed, without the URL
	Err     error
}

// RequestLog is one HTTP request of a read.
type RequestLog struct {
	Method, URL string // the URL without credentials or query
	Range       string // the Range header sent
	Attempt     int    // of the read, from 1
	Status      int    // 0 when no response arrived
	Bytes       int64  // body bytes received for the read
	Duration    time.Duration
	Err         error  // nil when the request gave what was asked
	Reason      string // what failed, without the URL ("" with Err nil)
}

// envSeconds reads a positive number of seconds from the environment, as
// huggingface_hub reads its timeouts.
func (o Options) envSeconds(k string) time.Duration {
	v := strings.TrimSpace(o.getenv(k))
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 || f > 1e6 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

func (o Options) getenv(k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

// withDefaults fills unset fields.
func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		if d, err := time.ParseDuration(o.getenv("CKPT_HTTP_TIMEOUT")); err == nil && d > 0 {
			o.Timeout = d
		} else {
			o.Timeout = 5 * time.Minute
		}
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = o.envSeconds("HF_HUB_DOWNLOAD_TIMEOUT")
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Second
	}
	if o.OpenIdleTimeout <= 0 {
		o.OpenIdleTimeout = o.envSeconds("HF_HUB_ETAG_TIMEOUT")
	}
	if o.OpenIdleTimeout <= 0 {
		o.OpenIdleTimeout = o.IdleTimeout
	}
	if o.PrefixSize <= 0 {
		o.PrefixSize = 64 << 10
	}
	if o.PrefixSize < 16 {
		o.PrefixSize = 16
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 8 << 20
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = 64
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 200 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 10 * time.Second
	}
	if o.StuckAttempts <= 0 {
		o.StuckAttempts = 6
	}
	if o.StuckBackoffBase <= 0 {
		o.StuckBackoffBase = time.Second
	}
	if o.StuckBackoffMax <= 0 {
		o.StuckBackoffMax = 8 * time.Second
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 60 * time.Second
	}
	if o.MaxDiscard <= 0 {
		o.MaxDiscard = 8 << 20
	}
	if o.UserAgent == "" {
		o.UserAgent = "ckpt"
	}
	if o.Client == nil {
		o.Client = newClient(o.MaxConcurrent)
	}
	return o
}

// newClient returns an HTTP client whose Transport keeps up to
// maxConcurrent idle connections per host, so that concurrent range
// requests reuse connections instead of opening new ones.
func newClient(maxConcurrent int) *http.Client {
	if maxConcurrent <= 0 {
		maxConcurrent = 8
	}
	d := &net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * maxConcurrent,
		MaxIdleConnsPerHost:   maxConcurrent + 2,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr}
}

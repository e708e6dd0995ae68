package source

import (
	"net"
	"net/http"
	"time"
)

// Options configure the HTTP sources. The zero value is usable: every
// field has a default.
type Options struct {
	// Getenv reads HF_ENDPOINT, HF_TOKEN, HF_TOKEN_PATH, HF_HUB_OFFLINE,
	// HF_HUB_CACHE, HF_HOME, HOME and CKPT_HTTP_TIMEOUT (nil: no
	// environment).
	Getenv func(string) string
	// Client is the HTTP client (nil: one client with its own Transport,
	// shared by every store the openers create, so connections are reused).
	Client *http.Client
	// Timeout bounds one operation — opening a file or one ReadAt —
	// including all its retries and backoff (default 5 minutes, or
	// $CKPT_HTTP_TIMEOUT as a Go duration such as "90s").
	Timeout time.Duration
	// IdleTimeout bounds the wait for a response's headers and for each
	// piece of its body; a request that makes no progress for this long is
	// abandoned and retried (default 30 s).
	IdleTimeout time.Duration
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
	// (0) a read that keeps failing transiently (dropped connections, 5xx,
	// 429, short bodies, stalls) is retried with backoff, resuming after
	// the bytes already received, for as long as Timeout allows.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the exponential backoff between
	// attempts (defaults 200 ms and 10 s).
	BackoffBase, BackoffMax time.Duration
	// MaxRetryAfter caps a server's Retry-After (default 60 s).
	MaxRetryAfter time.Duration
	// MaxDiscard is how many leading bytes may be read and thrown away
	// when a server ignores Range and a read starts past the prefix
	// (default 8 MiB); beyond that the read fails.
	MaxDiscard int64
	// UserAgent is sent with every request (default "ckpt").
	UserAgent string
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
		o.IdleTimeout = 30 * time.Second
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
		o.Client = NewClient(o.MaxConcurrent)
	}
	return o
}

// NewClient returns an HTTP client whose Transport keeps up to
// maxConcurrent idle connections per host, so that concurrent range
// requests reuse connections instead of opening new ones.
func NewClient(maxConcurrent int) *http.Client {
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

package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// HTTPStore is a ckpt.Store over a directory URL: file NAME is read from
// BASE/NAME with HTTP Range requests. It cannot list (List returns nil), so
// ckpt.OpenStore probes the index and, only if that is a 404,
// model.safetensors.
type HTTPStore struct {
	ctx      context.Context
	base     *url.URL // ends in "/"
	opt      Options
	client   *http.Client // opt.Client with the store's redirect policy
	auth     string       // Authorization header value, "" for none
	sem      chan struct{}
	requests atomic.Int64
	received atomic.Int64

	// tokenFrom says where the token came from ("HF_TOKEN", "the file
	// HF_TOKEN_PATH (...)"), for the message of a refused request.
	tokenFrom string
	// hub is set for the Hugging Face endpoint (hf:// and URLs of its
	// origin): the only origin a token is sent to.
	hub bool

	mu    sync.Mutex
	small map[string]*httpBlob // files that fit in their prefix, by name
}

// NewHTTPStore returns a store for the files under base, a directory URL
// (a trailing "/" is added if missing). token, if not empty, is sent as
// "Authorization: Bearer <token>". ctx bounds every request of the store,
// including reads of its blobs (io.ReaderAt takes no context): cancel it to
// abort them.
func NewHTTPStore(ctx context.Context, base string, token string, opt Options) (*HTTPStore, error) {
	return newHTTPStore(ctx, base, token, "", opt)
}

// newHTTPStore is NewHTTPStore with where the token came from (see
// hubTokenFrom), which a refused request names.
func newHTTPStore(ctx context.Context, base, token, tokenFrom string, opt Options) (*HTTPStore, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("source URL %s: %w", ckpt.Quote(ckpt.Redact(base)), err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source URL %s: want http:// or https:// with a host", ckpt.Quote(ckpt.Redact(base)))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	opt = opt.withDefaults()
	s := &HTTPStore{ctx: ctx, base: u, opt: opt, sem: make(chan struct{}, opt.MaxConcurrent), small: map[string]*httpBlob{}}
	if token != "" {
		s.auth, s.tokenFrom = "Bearer "+token, tokenFrom
	}
	s.client = s.redirectPolicy(opt.Client)
	return s, nil
}

// maxRedirects is how many redirects one request follows (a redirect loop
// fails at once, without retries).
const maxRedirects = 10

// errRedirects ends a request that redirected more than maxRedirects times.
var errRedirects = fmt.Errorf("stopped after %d redirects (a redirect loop?)", maxRedirects)

// redirectPolicy returns a copy of c (same Transport, so connections are
// still shared) that follows at most maxRedirects redirects and sends the
// Authorization header only to the store's own origin: net/http would
// forward it to a subdomain (cdn-lfs.hub.example behind hub.example) and to
// the same host on another port or scheme.
func (s *HTTPStore) redirectPolicy(c *http.Client) *http.Client {
	cc := *c
	inner := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return errRedirects
		}
		if !sameOrigin(req.URL, s.base) {
			req.Header.Del("Authorization")
		}
		if inner != nil {
			return inner(req, via)
		}
		return nil
	}
	return &cc
}

// origin is a URL's scheme, host and port (the scheme's default port when
// it names none), lower case: "https://hub.example:443".
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool { return origin(a) == origin(b) }

// fileURL returns the URL of a file.
func (s *HTTPStore) fileURL(name string) string {
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	u := *s.base
	u.Path = s.base.Path + name
	u.RawPath = s.base.EscapedPath() + strings.Join(segs, "/")
	return u.String()
}

// Location is the file's URL without credentials (ckpt.Redact).
func (s *HTTPStore) Location(name string) string { return ckpt.Redact(s.fileURL(name)) }

// List returns nil: an HTTP directory cannot be listed.
func (s *HTTPStore) List(ctx context.Context) ([]string, error) { return nil, nil }

// Stats reports the requests made and the body bytes received so far.
func (s *HTTPStore) Stats() (requests, bytes int64) {
	return s.requests.Load(), s.received.Load()
}

// Open fetches the first Options.PrefixSize bytes of name, which gives its
// size and ETag, and returns a Blob reading the rest with Range requests
// pinned to that ETag. A missing file (404) matches fs.ErrNotExist.
func (s *HTTPStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	if err := ckpt.CheckName(name); err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.Location(name), err)
	}
	s.mu.Lock()
	if b, ok := s.small[name]; ok {
		s.mu.Unlock()
		return b, nil
	}
	s.mu.Unlock()
	b := &httpBlob{s: s, name: name, url: s.fileURL(name), loc: s.Location(name), pin: pin{size: -1}}
	buf := make([]byte, s.opt.PrefixSize)
	ctx, stop := mergeCancel(ctx, s.ctx)
	defer stop()
	res, err := s.fetch(ctx, b.url, &b.pin, 0, buf, s.opt.OpenIdleTimeout)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", b.loc, err)
	}
	b.pin = pin{etag: res.etag, lastMod: res.lastMod, size: res.size, ifMatch: !res.redir}
	b.setTarget(res.final)
	b.prefix = buf[:res.n:res.n]
	b.noRange = res.noRange
	if int64(len(b.prefix)) == b.pin.size {
		s.mu.Lock()
		s.small[name] = b
		s.mu.Unlock()
	}
	return b, nil
}

// mergeCancel returns a context that ends when either ctx or other does.
func mergeCancel(ctx, other context.Context) (context.Context, context.CancelFunc) {
	if other == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(other, func() { cancel(context.Cause(other)) })
	return ctx, func() { stop(); cancel(nil) }
}

// httpBlob reads one remote file. After Open it is immutable, so ReadAt is
// safe for concurrent use.
type httpBlob struct {
	s       *HTTPStore
	name    string
	url     string
	loc     string
	pin     pin
	prefix  []byte // bytes [0, len(prefix)) from the first response
	noRange bool   // the server ignored Range on the first request

	// target is where the file's URL redirected to (a signed CDN URL for
	// the hub's LFS files; "" when it did not redirect), until expires:
	// reads go there directly, one request each, instead of through the
	// hub's resolve endpoint and its redirect every time.
	mu      sync.Mutex
	target  string
	expires time.Time
}

// targetMargin is how long before its expiry a redirect target is
// resolved again.
const targetMargin = 30 * time.Second

// defaultTargetTTL is the lifetime assumed for a redirect target whose
// URL says none (Expires, or X-Amz-Date with X-Amz-Expires).
const defaultTargetTTL = 10 * time.Minute

// setTarget records the URL a request was answered from, if the blob's URL
// redirected there.
func (b *httpBlob) setTarget(final string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if final == "" || final == b.url {
		b.target = ""
		return
	}
	b.target, b.expires = final, targetExpiry(final, time.Now())
}

// readURL is the URL to read from: the redirect target while it is fresh,
// else the blob's own URL (whose redirect then renews the target).
func (b *httpBlob) readURL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.target != "" && time.Until(b.expires) > targetMargin {
		return b.target
	}
	return b.url
}

// dropTarget forgets a target that was refused (expired early, revoked).
func (b *httpBlob) dropTarget(t string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.target == t {
		b.target = ""
	}
}

// targetExpiry reads the expiry of a signed URL: CloudFront's Expires
// (Unix seconds) or S3's X-Amz-Date plus X-Amz-Expires; else now plus
// defaultTargetTTL.
func targetExpiry(raw string, now time.Time) time.Time {
	u, err := url.Parse(raw)
	if err != nil {
		return now.Add(defaultTargetTTL)
	}
	q := u.Query()
	if v, err := strconv.ParseInt(q.Get("Expires"), 10, 64); err == nil {
		return time.Unix(v, 0)
	}
	if d, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date")); err == nil {
		if sec, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64); err == nil {
			return d.Add(time.Duration(sec) * time.Second)
		}
	}
	return now.Add(defaultTargetTTL)
}

// refused reports whether err is a refusal that a fresh redirect target
// may not get: 401, 403, 404 or 410 from a target URL.
func refused(err error) bool {
	var he *HTTPError
	if !errors.As(err, &he) {
		return false
	}
	switch he.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusGone:
		return true
	}
	return false
}

func (b *httpBlob) Size() int64 { return b.pin.size }

// Close does nothing: connections belong to the store's client.
func (b *httpBlob) Close() error { return nil }

// ETag is the version the blob is pinned to ("" if the server sent none).
func (b *httpBlob) ETag() string { return b.pin.etag }

// ReadAt reads len(p) bytes at off: from the cached prefix where possible,
// the rest with Range requests of at most Options.ChunkSize bytes.
func (b *httpBlob) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("reading %s: negative offset %d", b.loc, off)
	}
	if off >= b.pin.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want, eof := p, false
	if rest := b.pin.size - off; int64(len(p)) > rest {
		want, eof = p[:rest], true
	}
	n := 0
	if off < int64(len(b.prefix)) {
		n = copy(want, b.prefix[off:])
	}
	for n < len(want) {
		if err := b.s.ctx.Err(); err != nil {
			return n, fmt.Errorf("reading %s at byte %d: %w", b.loc, off+int64(n), err)
		}
		chunk := min(int64(len(want)-n), b.s.opt.ChunkSize)
		start := off + int64(n)
		pn := b.pin
		u := b.readURL()
		res, err := b.s.fetch(b.s.ctx, u, &pn, start, want[n:n+int(chunk)], b.s.opt.IdleTimeout)
		if err != nil && u != b.url && refused(err) {
			// The signed target expired or was revoked: resolve again.
			b.dropTarget(u)
			n += res.n
			start = off + int64(n)
			chunk = min(int64(len(want)-n), b.s.opt.ChunkSize)
			pn = b.pin
			u = b.url
			res, err = b.s.fetch(b.s.ctx, u, &pn, start, want[n:n+int(chunk)], b.s.opt.IdleTimeout)
		}
		if u == b.url && res.final != "" {
			b.setTarget(res.final)
		}
		n += res.n
		if err != nil {
			return n, fmt.Errorf("reading bytes %d-%d of %s: %w", start, start+chunk-1, b.loc, err)
		}
		if res.n != int(chunk) {
			return n, fmt.Errorf("reading bytes %d-%d of %s: got %d bytes: %w", start, start+chunk-1, b.loc, res.n, io.ErrUnexpectedEOF)
		}
	}
	if eof {
		return n, io.EOF
	}
	return n, nil
}

// redactURLError removes the credentials from the URL of a client error
// (net/http masks the password as "***" but keeps a user name, which may
// be a token).
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = ckpt.Redact(ue.URL)
	}
	return err
}

var _ ckpt.Store = (*HTTPStore)(nil)

// The optional interfaces readers find with a type assertion, which the
// compiler would not otherwise hold the stores to.
var (
	_ ckpt.LocalStore   = (*cacheStore)(nil)
	_ ckpt.DigestStore  = (*cacheStore)(nil)
	_ ckpt.PartialStore = (*cacheStore)(nil)
)

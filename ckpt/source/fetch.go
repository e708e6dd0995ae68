package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// pin is what every response for one file must agree with.
type pin struct {
	etag    string // "" when the server sent none
	lastMod string // used only without an ETag
	size    int64  // -1 until known
	ifMatch bool   // send If-Match (not after a cross-host redirect)
}

// result describes one successful response.
type result struct {
	n       int   // bytes written to dst
	size    int64 // total file size
	etag    string
	lastMod string
	noRange bool   // the server answered 200 to a Range request
	redir   bool   // the response came from another host
	final   string // the URL that answered, after redirects
}

// fetch reads len(dst) bytes at start (fewer only if the file ends first
// and p.size is unknown), retrying transient failures with backoff and
// resuming after the bytes already received, within opt.Timeout; a
// failure that repeats unchanged with nothing received (stuckSignature)
// is given opt.StuckAttempts attempts. idle bounds each request's waits.
func (s *HTTPStore) fetch(ctx context.Context, url string, p *pin, start int64, dst []byte, idle time.Duration) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opt.Timeout)
	defer cancel()
	var res result
	got := 0
	var last error
	stuck, changing := "", false // the failure every attempt had so far; set once they differ or bytes came
	for attempt := 1; ; attempt++ {
		r, retryAfter, err := s.once(ctx, url, p, start+int64(got), dst[got:], attempt, idle)
		if got == 0 {
			res = r
		} else {
			res.noRange = res.noRange || r.noRange
			if r.final != "" {
				res.final = r.final
			}
		}
		got += r.n
		res.n = got
		if err == nil {
			return res, nil
		}
		if p.size < 0 && r.size >= 0 && got > 0 {
			// Learned the size on a first attempt that broke off: pin it,
			// and ask only for what the file has.
			p.size, p.etag, p.lastMod = r.size, r.etag, r.lastMod
			if rest := p.size - start; rest < int64(len(dst)) {
				dst = dst[:max(rest, int64(got))]
			}
		}
		if ctx.Err() != nil && last != nil {
			// The time limit ran out during this attempt: say what kept
			// failing before it, not only that time ran out.
			return res, fmt.Errorf("%w, after %d attempts (last error: %v)", s.ctxErr(ctx), attempt, last)
		}
		last = err
		if !isRetryable(err) {
			return res, err
		}
		sig := stuckSignature(err, r.n)
		switch {
		case changing:
		case sig == "" || got > 0 || (attempt > 1 && sig != stuck):
			changing = true
		default:
			stuck = sig
		}
		of := s.opt.MaxAttempts
		if !changing && (of <= 0 || of > s.opt.StuckAttempts) {
			of = s.opt.StuckAttempts
		}
		if of > 0 && attempt >= of {
			if !changing && of == s.opt.StuckAttempts {
				return res, fmt.Errorf("giving up after %d attempts, each failing the same way: %w", attempt, last)
			}
			return res, fmt.Errorf("giving up after %d attempts: %w", attempt, last)
		}
		wait := s.backoff(attempt, retryAfter)
		if !changing {
			wait = s.stuckBackoff(attempt, retryAfter)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return res, fmt.Errorf("giving up: the next attempt (in %v) would pass the %v time limit: %w", wait.Round(time.Millisecond), s.opt.Timeout, last)
		}
		if s.opt.OnRetry != nil {
			s.opt.OnRetry(Retry{Method: http.MethodGet, URL: logURL(url), Attempt: attempt, Of: of, Wait: wait, Timeout: s.opt.Timeout,
				Reason: failureReason(err), Err: err})
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, fmt.Errorf("%w, after %d attempts (last error: %v)", s.ctxErr(ctx), attempt, last)
		case <-t.C:
		}
	}
}

func (s *HTTPStore) ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %v (total time limit per read)", s.opt.Timeout)
	}
	return ctx.Err()
}

// backoff is exponential with jitter, or the server's Retry-After (capped).
func (s *HTTPStore) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, s.opt.MaxRetryAfter)
	}
	d := s.opt.BackoffBase << (attempt - 1)
	if d > s.opt.BackoffMax || d <= 0 {
		d = s.opt.BackoffMax
	}
	return d/2 + rand.N(d/2+1)
}

// stuckBackoff is huggingface_hub's backoff for a failure that repeats
// (utils/_http.py, _http_backoff_base: sleep_time starts at
// base_wait_time and doubles up to max_wait_time, no jitter), or the
// server's Retry-After (capped).
func (s *HTTPStore) stuckBackoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, s.opt.MaxRetryAfter)
	}
	d := s.opt.StuckBackoffBase
	for i := 1; i < attempt && d < s.opt.StuckBackoffMax; i++ {
		d *= 2
	}
	return min(d, s.opt.StuckBackoffMax)
}

// stuckSignature names a failure that another attempt is not expected to
// heal when it repeats: the host name does not resolve, the connection is
// refused or the network or host unreachable, a 5xx or 429 status with no
// byte received (n). "" for any other failure.
func stuckSignature(err error, n int) string {
	var dns *net.DNSError
	var he *HTTPError
	switch {
	case errors.As(err, &dns):
		return "dns " + dns.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	case errors.As(err, &he) && n == 0:
		return "status " + strconv.Itoa(he.Status)
	}
	return ""
}

// failureReason says what failed, without the URL the message of a client
// error or an HTTP status repeats.
func failureReason(err error) string {
	var ue *neturl.Error
	var he *HTTPError
	switch {
	case errors.As(err, &he):
		s := fmt.Sprintf("%d %s", he.Status, http.StatusText(he.Status))
		if he.Message != "" {
			s += ": " + he.Message
		}
		return s
	case errors.As(err, &ue):
		return ue.Err.Error()
	}
	return err.Error()
}

// logURL is a URL for reports: without credentials, and without its query
// (a signed CDN URL's signature), as every message has it (ckpt.Redact).
func logURL(raw string) string { return ckpt.Redact(raw) }

// parseRetryAfter reads seconds or an HTTP date.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > 1<<20 {
			n = 1 << 20
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// watchdog cancels a request that makes no progress for d.
type watchdog struct {
	t     *time.Timer
	d     time.Duration
	fired atomic.Bool
}

func newWatchdog(d time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{d: d}
	w.t = time.AfterFunc(d, func() { w.fired.Store(true); cancel() })
	return w
}

func (w *watchdog) kick() { w.t.Reset(w.d) }
func (w *watchdog) stop() { w.t.Stop() }

type kickReader struct {
	r io.Reader
	w *watchdog
}

func (k kickReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.w.kick()
	}
	return n, err
}

// once makes one request for [start, start+len(dst)), the attempt-th of
// its read, abandoned after idle without progress.
func (s *HTTPStore) once(ctx context.Context, url string, p *pin, start int64, dst []byte, attempt int,
	idle time.Duration) (res result, retryAfter time.Duration, err error) {
	res.size = -1
	status := 0
	if s.opt.OnRequest != nil {
		began := time.Now()
		defer func() {
			l := RequestLog{Method: http.MethodGet, URL: logURL(url), Range: fmt.Sprintf("bytes=%d-%d", start, start+int64(len(dst))-1),
				Attempt: attempt, Status: status, Bytes: int64(res.n), Duration: time.Since(began), Err: err}
			if err != nil {
				l.Reason = failureReason(err)
			}
			s.opt.OnRequest(l)
		}()
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return res, 0, s.ctxErr(ctx)
	}
	defer func() { <-s.sem }()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wd := newWatchdog(idle, cancel)
	defer wd.stop()
	transient := func(err error) error {
		if ctx.Err() != nil {
			return s.ctxErr(ctx)
		}
		if wd.fired.Load() {
			return &retryable{fmt.Errorf("no response for %v (idle timeout)", idle)}
		}
		return &retryable{err}
	}

	end := start + int64(len(dst)) - 1
	req, err := s.rangeRequest(rctx, url, p, start, end)
	if err != nil {
		return res, 0, err
	}
	s.requests.Add(1)
	resp, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, errRedirects) {
			return res, 0, redactURLError(err) // a loop does not heal
		}
		return res, 0, transient(redactURLError(err))
	}
	defer func() {
		// Drain a little so the connection can be reused; a long remainder
		// (a server ignoring Range) is cut off by closing.
		io.CopyN(io.Discard, resp.Body, 64<<10)
		resp.Body.Close()
	}()
	res.redir = resp.Request != nil && !sameOrigin(resp.Request.URL, s.base)
	if resp.Request != nil {
		res.final = resp.Request.URL.String()
	}
	res.etag = resp.Header.Get("ETag")
	res.lastMod = resp.Header.Get("Last-Modified")
	status = resp.StatusCode

	if done, retryAfter, err := s.checkResponse(resp, url, p, start, end, &res); done || err != nil {
		return res, retryAfter, err
	}
	body := io.Reader(kickReader{resp.Body, wd})
	want, err := s.window(resp, body, url, p, start, dst, &res, transient)
	if err != nil {
		return res, 0, err
	}
	n, err := io.ReadFull(body, want)
	res.n = n
	if err != nil {
		return res, 0, transient(fmt.Errorf("body ended after %d of %d bytes (at byte %d): %w", n, len(want), start+int64(n), err))
	}
	s.received.Add(int64(n))
	return res, 0, nil
}

// rangeRequest is the GET of bytes [start, end] of url: identity encoding,
// If-Match on the pinned ETag, and the token only to the endpoint's origin.
func (s *HTTPStore) rangeRequest(ctx context.Context, url string, p *pin, start, end int64) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, end))
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", s.opt.UserAgent)
	if p.etag != "" && p.ifMatch {
		req.Header.Set("If-Match", p.etag)
	}
	if s.auth != "" && sameOrigin(req.URL, s.base) {
		// Only to the endpoint's own origin (a signed CDN URL carries its
		// own credentials, and the token is not the CDN's to see); the
		// client's redirect policy removes it from a redirect elsewhere.
		req.Header.Set("Authorization", s.auth)
	}
	return req, nil
}

// checkResponse checks the status of resp and that it is the version p
// pins, filling res's size; done is true for the empty file (416 at
// byte 0 of a file of size 0), whose read is then complete.
func (s *HTTPStore) checkResponse(resp *http.Response, url string, p *pin, start, end int64, res *result) (done bool, retryAfter time.Duration, err error) {
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent || code == http.StatusOK:
	case code == http.StatusPreconditionFailed:
		return false, 0, fmt.Errorf("%w: the server no longer has version %s (412 Precondition Failed)", ErrChanged, p.etag)
	case code == http.StatusRequestedRangeNotSatisfiable:
		total, ok := parseUnsatisfied(resp.Header.Get("Content-Range"))
		if ok && total == 0 && p.size <= 0 && start == 0 {
			res.size = 0
			return true, 0, nil
		}
		if ok && p.size >= 0 && total != p.size {
			return false, 0, fmt.Errorf("%w: size %d, was %d", ErrChanged, total, p.size)
		}
		return false, 0, fmt.Errorf("server refused bytes %d-%d (416 Range Not Satisfiable, Content-Range %q)", start, end, resp.Header.Get("Content-Range"))
	case code == http.StatusTooManyRequests || code >= 500:
		return false, parseRetryAfter(resp.Header.Get("Retry-After")), &retryable{s.httpError(resp, url)}
	default:
		return false, 0, s.httpError(resp, url)
	}
	// The same version as before?
	if p.etag != "" && res.etag != p.etag {
		return false, 0, fmt.Errorf("%w: ETag is now %s, was %s", ErrChanged, orNone(res.etag), p.etag)
	}
	if p.etag == "" && p.lastMod != "" && res.lastMod != p.lastMod {
		return false, 0, fmt.Errorf("%w: Last-Modified is now %s, was %s", ErrChanged, orNone(res.lastMod), p.lastMod)
	}
	return false, 0, nil
}

// window checks the extent of resp's body (206: its Content-Range; 200:
// the whole file, skipped up to start) and returns the part of dst the
// body fills.
func (s *HTTPStore) window(resp *http.Response, body io.Reader, url string, p *pin, start int64, dst []byte, res *result,
	transient func(error) error) ([]byte, error) {
	end := start + int64(len(dst)) - 1
	want := dst
	if resp.StatusCode == http.StatusPartialContent {
		cr := resp.Header.Get("Content-Range")
		a, b, total, ok := parseContentRange(cr)
		if !ok {
			return nil, &retryable{fmt.Errorf("response to Range bytes=%d-%d has no valid Content-Range (%q)", start, end, cr)}
		}
		if p.size >= 0 && total != p.size {
			return nil, fmt.Errorf("%w: size is now %d, was %d", ErrChanged, total, p.size)
		}
		wantEnd := end
		if p.size < 0 && total >= 0 && total-1 < end {
			wantEnd = total - 1 // first request of a file smaller than the prefix
		}
		if a != start || b != wantEnd {
			return nil, &retryable{fmt.Errorf("asked for bytes %d-%d, server sent Content-Range %q", start, end, cr)}
		}
		res.size = total
		want = dst[:wantEnd-start+1]
	} else { // 200: the whole file, Range ignored
		res.noRange = true
		total := resp.ContentLength
		if total < 0 {
			return nil, fmt.Errorf("%w, and sends no Content-Length: cannot read %s without downloading all of it", ErrNoRange, ckpt.Redact(url))
		}
		if p.size >= 0 && total != p.size {
			return nil, fmt.Errorf("%w: size is now %d, was %d", ErrChanged, total, p.size)
		}
		res.size = total
		if start > 0 {
			if start > s.opt.MaxDiscard {
				return nil, fmt.Errorf("%w: reading bytes %d-%d of %s would mean downloading and discarding the %d bytes before them (limit %d)",
					ErrNoRange, start, end, ckpt.Redact(url), start, s.opt.MaxDiscard)
			}
			if _, err := io.CopyN(io.Discard, body, start); err != nil {
				return nil, transient(fmt.Errorf("skipping to byte %d of a response that ignored Range: %w", start, err))
			}
		}
		if start+int64(len(dst)) > total {
			if p.size >= 0 {
				return nil, fmt.Errorf("%w: bytes %d-%d are past its end (%d)", ErrChanged, start, end, total)
			}
			want = dst[:max(total-start, 0)]
		}
	}
	return want, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// parseContentRange parses "bytes A-B/TOTAL" (TOTAL may be "*": -1).
func parseContentRange(v string) (a, b, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	as, bs, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	a, err1 = strconv.ParseInt(as, 10, 64)
	b, err2 = strconv.ParseInt(bs, 10, 64)
	total = -1
	if tot != "*" {
		total, err3 = strconv.ParseInt(tot, 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil || a < 0 || b < a || (total >= 0 && b >= total) {
		return 0, 0, 0, false
	}
	return a, b, total, true
}

// parseUnsatisfied parses "bytes */TOTAL".
func parseUnsatisfied(v string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes */")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil && n >= 0
}

func (s *HTTPStore) httpError(resp *http.Response, url string) error {
	e := &HTTPError{URL: ckpt.Redact(url), Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message")}
	if e.Message == "" {
		e.Message = bodyError(resp.Body)
	}
	e.Message = oneLine(e.Message)
	refused := resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden
	switch {
	case refused && s.hub && resp.Request != nil && !sameOrigin(resp.Request.URL, s.base):
		// The hub redirected the download elsewhere (its CDN, with a
		// signed URL) and that server refused it: not the repository's
		// access, which the hub itself granted by redirecting.
		e.Hint = "refused by " + resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + ", where the hub redirected the download (a signed URL that " +
			"expired, or a server that refuses this network), not by the hub; a Hugging Face token is not sent there"
	case !s.hub && refused:
		e.Hint = "the server refused the request; ckpt sends a Hugging Face token only to the hub's endpoint (HF_ENDPOINT: its exact scheme, host and port), " +
			"never to other origins"
	case refused || e.Code == "GatedRepo":
		if s.auth == "" {
			e.Hint = "the repository may be private or gated: set HF_TOKEN, or run `hf auth login`"
		} else {
			e.Hint = s.tokenName() + " was not accepted for this repository"
		}
	case e.Code == "RepoNotFound" && s.auth == "":
		e.Hint = "no such repository (or it is private: set HF_TOKEN, or run `hf auth login`)"
	case e.Code == "RepoNotFound":
		e.Hint = "no such repository (or " + s.tokenName() + " has no access to it)"
	case e.Code == "RevisionNotFound":
		e.Hint = "no such revision"
	}
	return e
}

// tokenName is "the token from WHERE", or "the token" when the store was
// given a token without its origin.
func (s *HTTPStore) tokenName() string {
	if s.tokenFrom == "" {
		return "the token"
	}
	return "the token from " + s.tokenFrom
}

// bodyError is the "error" string of a JSON error body, as the hub sends
// with its 4xx responses ({"error": "Access to model ... is restricted"});
// "" for any other body.
func bodyError(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 8<<10))
	var doc struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return ""
	}
	msg, _ := doc.Error.(string)
	return msg
}

// oneLine makes a server's message safe to print on one line and caps
// its length.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}

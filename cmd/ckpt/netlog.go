package main

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt/source"
)

// netReporter prints on stderr what the HTTP sources report: a line per
// retry (what failed, when the next attempt is), and with -v/--verbose or
// HF_DEBUG a line per request. -q silences both. The openers are made with
// its hooks (withHooks) before the command line is parsed; set points it
// at the run's stderr.
type netReporter struct {
	mu      sync.Mutex
	w       io.Writer // nil: print nothing
	term    bool      // w is a terminal: clear a progress bar's line first
	verbose bool
}

// withHooks returns opt reporting to n.
func (n *netReporter) withHooks(opt source.Options) source.Options {
	opt.OnRetry, opt.OnRequest = n.retry, n.request
	return opt
}

// set says where to print (nil: nowhere) and whether to log requests.
func (n *netReporter) set(w io.Writer, term, verbose bool) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if w == io.Discard {
		w = nil
	}
	n.w, n.term, n.verbose = w, term, verbose
}

func (n *netReporter) printf(requestLog bool, format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.w == nil || (requestLog && !n.verbose) {
		return
	}
	if n.term {
		fmt.Fprint(n.w, "\r\033[K")
	}
	fmt.Fprintf(n.w, format, args...)
}

// retry prints "ckpt: GET URL failed: REASON; retry 1 of 5 in 1s".
func (n *netReporter) retry(r source.Retry) {
	which := fmt.Sprintf("retry %d of %d", r.Attempt, r.Of-1)
	if r.Of <= 0 {
		which = fmt.Sprintf("retry %d (retries go on for up to %v per read)", r.Attempt, r.Timeout)
	}
	n.printf(false, "ckpt: %s %s failed: %s; %s in %v\n", r.Method, r.URL, r.Reason, which, roundWait(r.Wait))
}

// request prints "ckpt: http: GET URL bytes=A-B: 206 Partial Content,
// N bytes, 12ms" (", attempt K" from the second attempt of a read on).
func (n *netReporter) request(r source.RequestLog) {
	var b strings.Builder
	fmt.Fprintf(&b, "ckpt: http: %s %s %s: ", r.Method, r.URL, r.Range)
	if r.Status > 0 {
		fmt.Fprintf(&b, "%d %s, ", r.Status, http.StatusText(r.Status))
	} else {
		b.WriteString("no response, ")
	}
	fmt.Fprintf(&b, "%d bytes, %v", r.Bytes, r.Duration.Round(time.Millisecond))
	if r.Attempt > 1 {
		fmt.Fprintf(&b, ", attempt %d", r.Attempt)
	}
	if r.Err != nil && (r.Status == 0 || !strings.HasPrefix(r.Reason, strconv.Itoa(r.Status))) {
		fmt.Fprintf(&b, ": %s", r.Reason)
	}
	n.printf(true, "%s\n", b.String())
}

// roundWait shows a wait to the millisecond below a second, else to the
// tenth of a second.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// envTrue reads a boolean variable as huggingface_hub does (constants.py
// _is_true: 1, ON, YES, TRUE in any case).
func envTrue(getenv func(string) string, k string) bool {
	if getenv == nil {
		return false
	}
	switch strings.ToUpper(strings.TrimSpace(getenv(k))) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

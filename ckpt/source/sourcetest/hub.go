// Package sourcetest provides test doubles for the remote and cached
// sources of package source: a fake Hugging Face hub (an HTTP server with
// Range, ETag, Content-Range, hub 404 error codes and fault injection) and
// a generator of Hugging Face cache trees.
package sourcetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultKind is a way for the fake hub to misbehave on one request.
type FaultKind int

const (
	None        FaultKind = iota // no fault: serve the request as asked
	Drop                         // send headers and half the body, then close the connection
	Status500                    // 500 Internal Server Error
	Status503                    // 503 with Retry-After
	TooMany                      // 429 Too Many Requests with Retry-After
	WrongRange                   // 206 with bytes shifted by one and a Content-Range for them
	Short                        // 206 whose body (and Content-Length) is shorter than its Content-Range
	NewVersion                   // serve a changed file (other bytes, other ETag), ignoring If-Match
	IgnoreRange                  // 200 with the whole file
	Hang                         // never answer (until the client gives up)
	HangBody                     // send headers and part of the body, then stall
	Reject                       // answer Fault.Status with the hub's error headers and Fault.Body
)

// Fault is what Hub.Inject returns for a request.
type Fault struct {
	Kind       FaultKind
	RetryAfter string // for TooMany / Status503
	// For Reject: the status, the hub's X-Error-Code and X-Error-Message
	// (each sent when not empty) and the body (such as the hub's JSON
	// {"error": "..."}).
	Status                  int
	ErrorCode, ErrorMessage string
	Body                    string
}

// Hub is a fake hub serving the files of Dir as
//
//	GET /{Repo}/resolve/{rev}/{path}   (rev "main" or Commit)
//	GET /files/{path}                  (plain URLs)
//
// with single byte ranges, strong ETags (the SHA-256 of the content,
// quoted, as the hub does for LFS files), If-Match, 404 + X-Error-Code
// (EntryNotFound, RepoNotFound, RevisionNotFound) and faults chosen by
// Inject. It counts requests, connections and body bytes served.
type Hub struct {
	*httptest.Server
	Dir    string
	Repo   string // "org/name"
	Commit string
	// Token, if set, must be carried as "Authorization: Bearer Token" by
	// every request but those to the CDN path (signed URLs, as the real
	// hub's CDN takes no token).
	Token string
	// Inject chooses a fault for a request (nil: none). It may be called
	// concurrently.
	Inject func(r *http.Request, file string) Fault

	// Redirect makes resolve URLs answer as the real hub does for LFS
	// files: 302 Found to a signed URL on the hub's CDN path
	// (/cdn/{repo}/{path}?Expires=UNIX&X-Sig=...), valid for RedirectTTL
	// (default an hour); the CDN path serves the bytes and answers 403
	// once its URL has expired. Set before the first request.
	Redirect    bool
	RedirectTTL time.Duration
	// RedirectTo, when set, is the origin the redirects point to
	// ("http://cdn-lfs.hub.example:8081": a CDN on another host or port,
	// served by the same Hub through another listener, see Serve) instead
	// of the hub's own.
	RedirectTo string
	// SignedQuery, when set, is the signature part of the redirects'
	// query, after Expires (default "X-Sig=fake"): a test may sign as a
	// CDN does ("X-Amz-Signature=...", "Signature=...&Key-Pair-Id=...").
	SignedQuery string
	// OnRequest, when set, sees every request before it is answered (to
	// record which host received which headers). It may be called
	// concurrently.
	OnRequest func(r *http.Request)
	// Latency delays every response by this long (a hub far away);
	// Bandwidth, when > 0, caps each response body at this many bytes per
	// second.
	Latency   time.Duration
	Bandwidth int64

	// Resolves counts requests to resolve URLs, CDN those to the CDN
	// path (Requests counts all).
	Resolves atomic.Int64
	CDN      atomic.Int64

	Requests    atomic.Int64
	BytesServed atomic.Int64
	Conns       atomic.Int64
	inflight    atomic.Int64

	mu     sync.Mutex
	repos  map[string]string // more repositories: id → directory
	files  map[string]served
	hangCh chan struct{}
}

// NewHub starts a hub serving dir as repo (e.g. "org/model").
func NewHub(dir, repo string) *Hub {
	h := &Hub{Dir: dir, Repo: repo, Commit: strings.Repeat("c0ffee", 7)[:40], files: map[string]served{}, hangCh: make(chan struct{})}
	h.Server = httptest.NewUnstartedServer(h)
	h.Server.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			h.Conns.Add(1)
		}
	}
	h.Server.Start()
	return h
}

// Close releases hanging handlers and stops the server.
func (h *Hub) Close() {
	h.mu.Lock()
	select {
	case <-h.hangCh:
	default:
		close(h.hangCh)
	}
	h.mu.Unlock()
	h.Server.CloseClientConnections()
	h.Server.Close()
}

// Quiesce waits (up to 5 s) until no handler is running, so that the
// counters include the last bytes of responses a client has already read.
func (h *Hub) Quiesce() {
	for i := 0; i < 500 && h.inflight.Load() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// ResetCounters waits for running handlers and zeroes the counters.
func (h *Hub) ResetCounters() {
	h.Quiesce()
	h.Requests.Store(0)
	h.BytesServed.Store(0)
	h.Conns.Store(0)
	h.Resolves.Store(0)
	h.CDN.Store(0)
}

// Serve starts another listener for the same hub (a CDN on another port,
// or the hub's host on a second port); the caller closes it.
func (h *Hub) Serve() *httptest.Server { return httptest.NewServer(h) }

// HubSource is "hf://Repo" for this hub (set HF_ENDPOINT to h.URL).
func (h *Hub) HubSource() string { return "hf://" + h.Repo }

// FileURL is the plain URL of a file.
func (h *Hub) FileURL(name string) string { return h.URL + "/files/" + name }

// ETag returns the quoted SHA-256 of a served file (for files above 64
// MiB, an ETag made of its size and modification time).
func (h *Hub) ETag(name string) (string, error) {
	c, err := h.content(name)
	return c.etag, err
}

// AddRepo serves dir as another repository id (resolve URLs only).
func (h *Hub) AddRepo(id, dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.repos == nil {
		h.repos = map[string]string{}
	}
	h.repos[id] = dir
}

// content returns a file's content and ETag (cached until Update). name
// is relative to Dir, or "\x00<dir>\x00<name>" for another repository.
// Files up to largeFile bytes are held in memory with the SHA-256 of their
// content as ETag; larger ones (such as sparse full-scale fixtures) are
// read from disk range by range, with an ETag made of their size and
// modification time.
func (h *Hub) content(name string) (served, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.files[name]; ok {
		return c, nil
	}
	dir, rel := h.Dir, name
	if parts := strings.Split(name, "\x00"); len(parts) == 3 {
		dir, rel = parts[1], parts[2]
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	st, err := os.Stat(p)
	if err != nil {
		return served{}, err
	}
	var c served
	if st.Size() > largeFile {
		c = served{path: p, size: st.Size(), etag: fmt.Sprintf(`"big-%x-%x"`, st.Size(), st.ModTime().UnixNano())}
	} else {
		data, err := os.ReadFile(p)
		if err != nil {
			return served{}, err
		}
		sum := sha256.Sum256(data)
		c = served{data: data, size: int64(len(data)), etag: `"` + hex.EncodeToString(sum[:]) + `"`}
	}
	h.files[name] = c
	return c, nil
}

// largeFile is the size above which the hub serves a file from disk.
const largeFile = 64 << 20

// served is a file's content: in memory (data), or on disk (path).
type served struct {
	data []byte
	path string
	size int64
	etag string
	xor  bool // NewVersion: every byte XOR 0x5a
}

// bytes returns the content's bytes [a, b).
func (c served) bytes(a, b int64) ([]byte, error) {
	var out []byte
	if c.path == "" {
		out = c.data[a:b]
	} else {
		f, err := os.Open(c.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		out = make([]byte, b-a)
		if _, err := f.ReadAt(out, a); err != nil {
			return nil, err
		}
	}
	if c.xor {
		changed := make([]byte, len(out))
		for i, x := range out {
			changed[i] = x ^ 0x5a
		}
		out = changed
	}
	return out, nil
}

func notFound(w http.ResponseWriter, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, http.StatusNotFound)
}

// ServeHTTP implements the routes.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	h.Requests.Add(1)
	if h.OnRequest != nil {
		h.OnRequest(r)
	}
	if h.Token != "" && !strings.HasPrefix(r.URL.Path, "/cdn/") && r.Header.Get("Authorization") != "Bearer "+h.Token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if h.Latency > 0 {
		select {
		case <-time.After(h.Latency):
		case <-r.Context().Done():
			return
		}
	}
	p := r.URL.Path
	var file string
	switch {
	case strings.HasPrefix(p, "/files/"):
		file = strings.TrimPrefix(p, "/files/")
	case strings.HasPrefix(p, "/cdn/"):
		h.CDN.Add(1)
		var ok bool
		if file, ok = h.cdnFile(w, r); !ok {
			return
		}
	default:
		h.Resolves.Add(1)
		rest, ok := strings.CutPrefix(p, "/"+h.Repo+"/resolve/")
		key := ""
		if !ok {
			h.mu.Lock()
			for id, dir := range h.repos {
				if r, found := strings.CutPrefix(p, "/"+id+"/resolve/"); found {
					rest, ok, key = r, true, "\x00"+dir+"\x00"
				}
			}
			h.mu.Unlock()
		}
		if !ok {
			notFound(w, "RepoNotFound", "Repository not found")
			return
		}
		rev, f, ok := strings.Cut(rest, "/")
		if !ok {
			notFound(w, "EntryNotFound", "Entry not found")
			return
		}
		if rev != "main" && rev != h.Commit {
			notFound(w, "RevisionNotFound", "Invalid rev id: "+rev)
			return
		}
		file = key + f
		if h.Redirect {
			if _, err := h.content(file); err != nil {
				notFound(w, "EntryNotFound", "Entry not found")
				return
			}
			repo, _ := strings.CutSuffix(strings.TrimPrefix(p, "/"), "/resolve/"+rest)
			ttl := h.RedirectTTL
			if ttl <= 0 {
				ttl = time.Hour
			}
			sig := h.SignedQuery
			if sig == "" {
				sig = "X-Sig=fake"
			}
			loc := fmt.Sprintf("%s/cdn/%s/%s?Expires=%d&%s", h.RedirectTo, repo, f, time.Now().Add(ttl).Unix(), sig)
			if c, err := h.content(file); err == nil {
				w.Header().Set("X-Linked-Etag", c.etag)
				w.Header().Set("X-Linked-Size", strconv.FormatInt(c.size, 10))
			}
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusFound)
			return
		}
	}
	if rel := file[strings.LastIndex(file, "\x00")+1:]; rel == "" || path.Clean(rel) != rel || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/../") {
		notFound(w, "EntryNotFound", "Entry not found")
		return
	}
	c, err := h.content(file)
	if err != nil {
		notFound(w, "EntryNotFound", "Entry not found")
		return
	}
	var f Fault
	if h.Inject != nil {
		f = h.Inject(r, file[strings.LastIndex(file, "\x00")+1:])
	}
	h.serve(w, r, c, f)
}

// cdnFile maps a CDN URL to the file it serves (relative to Dir, or
// "\x00<dir>\x00<name>" for another repository), answering 403 for an
// expired URL and 404 for an unknown repository.
func (h *Hub) cdnFile(w http.ResponseWriter, r *http.Request) (string, bool) {
	exp, err := strconv.ParseInt(r.URL.Query().Get("Expires"), 10, 64)
	if err != nil || time.Now().Unix() >= exp {
		http.Error(w, "Request has expired", http.StatusForbidden)
		return "", false
	}
	rest := strings.TrimPrefix(r.URL.Path, "/cdn/")
	if f, ok := strings.CutPrefix(rest, h.Repo+"/"); ok {
		return f, true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, dir := range h.repos {
		if f, ok := strings.CutPrefix(rest, id+"/"); ok {
			return "\x00" + dir + "\x00" + f, true
		}
	}
	http.Error(w, "no such object", http.StatusNotFound)
	return "", false
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request, c served, f Fault) {
	etag := c.etag
	switch f.Kind {
	case Status500:
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	case Reject:
		if f.ErrorCode != "" {
			w.Header().Set("X-Error-Code", f.ErrorCode)
		}
		if f.ErrorMessage != "" {
			w.Header().Set("X-Error-Message", f.ErrorMessage)
		}
		if strings.HasPrefix(f.Body, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(f.Status)
		io.WriteString(w, f.Body)
		return
	case Status503, TooMany:
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		code := http.StatusTooManyRequests
		if f.Kind == Status503 {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, "slow down", code)
		return
	case Hang:
		h.hang(r)
		return
	case NewVersion:
		c.xor, etag = true, `"v2-`+strings.Trim(etag, `"`)[:8]+`"`
	}
	w.Header().Set("ETag", etag)
	w.Header().Set("Accept-Ranges", "bytes")
	if f.Kind != NewVersion {
		if im := r.Header.Get("If-Match"); im != "" && im != "*" && im != etag {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
	}
	size := c.size
	start, end, ok, hasRange := parseRange(r.Header.Get("Range"), size)
	if !hasRange || f.Kind == IgnoreRange {
		data, err := c.bytes(0, size)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		h.write(w, r, data, f)
		return
	}
	if !ok {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
		return
	}
	cr := fmt.Sprintf("bytes %d-%d/%d", start, end, size)
	if f.Kind == WrongRange {
		s2, e2 := start+1, end+1
		if e2 >= size {
			s2, e2 = start-1, end-1
		}
		if s2 >= 0 {
			start, end = s2, e2
			cr = fmt.Sprintf("bytes %d-%d/%d", s2, e2, size)
		}
	}
	body, err := c.bytes(start, end+1)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if f.Kind == Short {
		body = body[:len(body)/2]
	}
	w.Header().Set("Content-Range", cr)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusPartialContent)
	h.write(w, r, body, f)
}

func (h *Hub) write(w http.ResponseWriter, r *http.Request, body []byte, f Fault) {
	if r.Method == http.MethodHead {
		return
	}
	switch f.Kind {
	case Drop:
		half := body[:len(body)/2]
		n, _ := w.Write(half)
		h.BytesServed.Add(int64(n))
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	case HangBody:
		n, _ := w.Write(body[:len(body)/2])
		h.BytesServed.Add(int64(n))
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		h.hang(r)
		return
	}
	// Write in pieces so that a client that stops reading (a server that
	// ignored Range) is not charged for bytes it never took.
	for len(body) > 0 {
		k := min(len(body), 32<<10)
		if h.Bandwidth > 0 {
			time.Sleep(time.Duration(int64(k) * int64(time.Second) / h.Bandwidth))
		}
		n, err := w.Write(body[:k])
		h.BytesServed.Add(int64(n))
		if err != nil {
			return
		}
		body = body[k:]
	}
}

func (h *Hub) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-h.hangCh:
	case <-time.After(time.Minute):
	}
}

// parseRange parses a single "bytes=a-b", "bytes=a-" or "bytes=-n".
func parseRange(v string, size int64) (start, end int64, ok, present bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, false
	}
	as, bs, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false, false
	}
	var err error
	switch {
	case as == "":
		n, err := strconv.ParseInt(bs, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, false, true
		}
		start, end = max(size-n, 0), size-1
	default:
		if start, err = strconv.ParseInt(as, 10, 64); err != nil {
			return 0, 0, false, true
		}
		end = size - 1
		if bs != "" {
			if end, err = strconv.ParseInt(bs, 10, 64); err != nil {
				return 0, 0, false, true
			}
			end = min(end, size-1)
		}
	}
	if start < 0 || start >= size || end < start {
		return 0, 0, false, true
	}
	return start, end, true, true
}

// Update replaces a served file's content (and so its ETag).
func (h *Hub) Update(name string, data []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.files, name)
	return os.WriteFile(filepath.Join(h.Dir, filepath.FromSlash(name)), data, 0o644)
}

// Client returns an HTTP client that resolves the host names in hosts
// (name → IP address, such as "cdn-lfs.hub.example" → "127.0.0.1") itself
// and fails every other name as the resolver of a machine without network
// does (a *net.DNSError that is not found), so that tests can give a
// loopback hub, its CDN and a second port names of their own and never
// touch the real network.
func Client(hosts map[string]string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ip, ok := hosts[strings.ToLower(host)]
			if !ok {
				if net.ParseIP(host) == nil {
					return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}}
				}
				ip = host
			}
			return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
		},
		MaxIdleConnsPerHost: 16,
	}
	return &http.Client{Transport: tr}
}

package source

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
)

var (
	// ErrChanged means the remote file changed while it was being read:
	// its ETag (or size) differs from the one seen when it was opened.
	ErrChanged = errors.New("remote file changed while it was being read")
	// ErrNoRange means the server ignores Range requests and a read would
	// need more than Options.MaxDiscard bytes to be downloaded and dropped.
	ErrNoRange = errors.New("server does not support HTTP Range requests")
)

// HTTPError is an HTTP response that ended a request. A 404 matches
// fs.ErrNotExist unless the hub says the repository or revision is missing
// (the file's absence is then not the problem).
type HTTPError struct {
	URL     string
	Status  int
	Code    string // the hub's X-Error-Code, if any
	Message string // the hub's X-Error-Message, if any
	Hint    string
}

// Error is the message of the HTTPError.
func (e *HTTPError) Error() string {
	s := fmt.Sprintf("GET %s: %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s = strings.TrimSuffix(s, ".") + "; " + e.Hint
	}
	return s
}

// Is makes a missing file match fs.ErrNotExist.
func (e *HTTPError) Is(target error) bool {
	return target == fs.ErrNotExist && e.Status == http.StatusNotFound && e.Code != "RepoNotFound" && e.Code != "RevisionNotFound"
}

// retryable marks errors worth another attempt.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

func isRetryable(err error) bool {
	var r *retryable
	return errors.As(err, &r)
}

package source

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The expiry of a redirect target is read from its signed URL; a target
// near its expiry is not used (the blob's URL is resolved again).
func TestTargetExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		url  string
		want time.Time
	}{
		{"https://cdn-lfs.hf.co/repos/ab/cd?Expires=1764583200&Signature=x", time.Unix(1764583200, 0)},
		{"https://cas-bridge.xethub.hf.co/x?X-Amz-Algorithm=AWS4&X-Amz-Date=20261201T095500Z&X-Amz-Expires=3600&X-Amz-Signature=y", time.Date(2026, 12, 1, 10, 55, 0, 0, time.UTC)},
		{"https://cdn.example/x", now.Add(defaultTargetTTL)},
		{"https://cdn.example/x?Expires=soon", now.Add(defaultTargetTTL)},
	} {
		assert.True(t, c.want.Equal(targetExpiry(c.url, now)), "%s: %v", c.url, targetExpiry(c.url, now))
	}

	b := &httpBlob{url: "https://hub/resolve/main/f"}
	assert.Equal(t, b.url, b.readURL(), "no target yet")
	b.setTarget(b.url)
	assert.Equal(t, b.url, b.readURL(), "no redirect, no target")
	fresh := time.Now().Add(time.Hour).Unix()
	b.setTarget("https://cdn/f?Expires=" + itoa(fresh))
	assert.Equal(t, "https://cdn/f?Expires="+itoa(fresh), b.readURL())
	stale := time.Now().Add(targetMargin / 2).Unix()
	b.setTarget("https://cdn/f?Expires=" + itoa(stale))
	assert.Equal(t, b.url, b.readURL(), "about to expire: resolve again")
	b.setTarget("https://cdn/f?Expires=" + itoa(fresh))
	b.dropTarget("https://cdn/f?Expires=" + itoa(fresh))
	assert.Equal(t, b.url, b.readURL(), "refused: resolve again")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestStuckBackoffIsHubs: a failure that repeats unchanged waits 1, 2, 4,
// 8 and 8 s between its 6 attempts by default (23 s, huggingface_hub's
// http_backoff with max_retries 5, base_wait_time 1, max_wait_time 8), a
// server's Retry-After instead when it sends one (capped).
func TestStuckBackoffIsHubs(t *testing.T) {
	t.Parallel()
	s := &HTTPStore{opt: Options{Client: http.DefaultClient}.withDefaults()}
	assert.Equal(t, 6, s.opt.StuckAttempts)
	var total time.Duration
	var waits []time.Duration
	for attempt := 1; attempt < s.opt.StuckAttempts; attempt++ {
		w := s.stuckBackoff(attempt, 0)
		waits = append(waits, w)
		total += w
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}, waits)
	assert.Equal(t, 23*time.Second, total)
	assert.Equal(t, 3*time.Second, s.stuckBackoff(1, 3*time.Second))
	assert.Equal(t, s.opt.MaxRetryAfter, s.stuckBackoff(1, time.Hour))
}

package source

import (
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

package source

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSameOrigin: the origin the token is bound to is the scheme, the host
// (without case) and the port, the scheme's default when none is written;
// a subdomain, another port or another scheme is another origin.
func TestSameOrigin(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://hub.example", "https://hub.example:443/org/m/resolve/main/x", true},
		{"http://hub.example", "http://hub.example:80/x", true},
		{"https://hub.example", "https://HUB.Example/x", true},
		{"HTTPS://hub.example", "https://hub.example/x", true},
		{"https://hub.example", "https://cdn-lfs.hub.example/x", false},
		{"https://hub.example", "https://hub.example:8443/x", false},
		{"https://hub.example", "http://hub.example/x", false},
		{"http://hub.example", "https://hub.example/x", false},
		{"http://hub.example:443", "https://hub.example/x", false},
		{"https://hub.example", "https://hub.example.evil/x", false},
	} {
		a, err := url.Parse(c.a)
		require.NoError(t, err)
		b, err := url.Parse(c.b)
		require.NoError(t, err)
		assert.Equal(t, c.same, sameOrigin(a, b), "%s vs %s", c.a, c.b)
		assert.Equal(t, c.same, sameOrigin(b, a), "%s vs %s", c.b, c.a)
	}
}

package ckpt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://user:pw@host/a/b", "https://user:xxxxx@host/a/b"},
		{"https://TOKEN@host:8080/a", "https://xxxxx@host:8080/a"},
		{"http://u:p%40ss@host", "http://u:xxxxx@host"},
		{"https://u:p@ss@host/x", "https://u:xxxxx@host/x"}, // the last '@' ends the userinfo
		{"https://user:@host/", "https://user:xxxxx@host/"},
		{"https://host/path@v2/x", "https://host/path@v2/x"}, // '@' in the path
		{"hf://org/name@main/x.safetensors", "hf://org/name@main/x.safetensors"},
		{"hf:org/name@rev", "hf:org/name@rev"},
		{"./model@v1/x.safetensors", "./model@v1/x.safetensors"},
		{"https://host?q=a@b", "https://host?xxxxx"},
		// A signed URL's query is a credential: the path stays.
		{"https://cdn-lfs.hf.co/repos/ab/cd/f.safetensors?Expires=1764583200&Signature=s1g&Key-Pair-Id=K2", "https://cdn-lfs.hf.co/repos/ab/cd/f.safetensors?xxxxx"},
		{`GET "https://cas-bridge.xethub.hf.co/x?X-Amz-Algorithm=AWS4&X-Amz-Signature=y": 403 Forbidden`, `GET "https://cas-bridge.xethub.hf.co/x?xxxxx": 403 Forbidden`},
		{"https://u:pw@cdn/f?token=t0k#frag and http://h/g?a=b", "https://u:xxxxx@cdn/f?xxxxx#frag and http://h/g?xxxxx"},
		{"https://h/x?", "https://h/x?"},
		{"https://h/x: is it there?", "https://h/x: is it there?"},
		{"https://archive/web/https://u:pw@h/x?sig=1", "https://archive/web/https://u:xxxxx@h/x?xxxxx"},
		{"hf://org/name/x.safetensors?", "hf://org/name/x.safetensors?"},
		{"https://u:pw@host%zz/bad", "https://u:xxxxx@host%zz/bad"}, // not a valid URL: redacted anyway
		{`opening "https://a:b@h/x": GET https://a:b@h/x: 404`, `opening "https://a:xxxxx@h/x": GET https://a:xxxxx@h/x: 404`},
		{`Get "http://u:***@h/x": dial tcp`, `Get "http://u:xxxxx@h/x": dial tcp`},
		{"no url here", "no url here"},
		{"://u:p@h", "://u:p@h"}, // no scheme: not a URL
		{"1http://u:p@h", "1http://u:xxxxx@h"},
	} {
		assert.Equal(t, tc.want, Redact(tc.in), tc.in)
	}
}

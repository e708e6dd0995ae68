package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputSpellings: -o/--out is the one spelling of an output; the old
// spellings still work, hidden, with a note on stderr.
func TestOutputSpellings(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	tests := []struct {
		name     string
		args     func(out string) []string
		wantNote string
	}{
		{"contract --out", func(out string) []string { return []string{"contract", base, "--out", out} }, ""},
		{"contract -o", func(out string) []string { return []string{"contract", base, "-o", out} }, ""},
		{"contract --output (deprecated)", func(out string) []string { return []string{"contract", base, "--output", out} }, "ckpt: note: --output is deprecated, use -o/--out"},
		{"extract -o", func(out string) []string {
			return []string{"extract", base, "--match", "mtp.**", "-o", out, "--progress", "none"}
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.safetensors")
			code, _, stderr := runApp(t, tc.args(out)...)
			require.Equal(t, 0, code, stderr)
			_, err := os.Stat(out)
			require.NoError(t, err)
			if tc.wantNote != "" {
				assert.Contains(t, stderr, tc.wantNote)
			} else {
				assert.NotContains(t, stderr, "deprecated")
			}
		})
	}
}

// TestVerifyArchFlag: verify's architecture profile is --arch (--profile
// names the mapping profile of map and cache); --profile still works.
func TestVerifyArchFlag(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	code, _, stderr := runApp(t, "verify", base, "--arch", "none")
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = runApp(t, "verify", base, "--profile", "none")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "ckpt: note: --profile is deprecated, use --arch")
	code, _, stderr = runApp(t, "verify", base, "--profile", "llama")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "unknown --arch")
	_, stdout, _ := runApp(t, "verify", "--help")
	assert.Contains(t, stdout, "--arch")
	assert.NotContains(t, stdout, "--profile", "the old spelling is hidden")
}

// TestDidYouMean: a mistyped subcommand or flag exits 2 naming the closest
// one.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"inspekt", "x"}, `unknown command "inspekt" for "ckpt"; did you mean inspect?`},
		{[]string{"cache", "biuld"}, `unknown command "biuld" for "ckpt cache"; did you mean build?`},
		{[]string{"inspect", "--fromat", "json", "x"}, "unknown flag: --fromat; did you mean --format?"},
		{[]string{"verify", "x", "--arc", "none"}, "unknown flag: --arc; did you mean --arch?"},
		{[]string{"cache", "build", "x", "--mesh", "1x2", "--rehash"}, "unknown flag: --rehash (see ckpt cache build --help)"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "ckpt" (see ckpt --help)`},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr, tc.want, tc.args)
	}
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"fromat", "format", 2}, {"format", "format", 0}, {"arc", "arch", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		assert.Equal(t, tc.d, levenshtein(tc.a, tc.b), "%s/%s", tc.a, tc.b)
	}
}

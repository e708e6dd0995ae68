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

package main

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSizeValue: a size flag parses as it is set and never fails in Set;
// the error waits for the command's check.
func TestSizeValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		text string
		n    int64
		err  string
	}{
		{nil, "", 0, ""},
		{[]string{"--size", "5G"}, "5G", 5e9, ""},
		{[]string{"--size", "500Mi"}, "500Mi", 500 << 20, ""},
		{[]string{"--size", "1Q", "--size", "2k"}, "2k", 2000, ""}, // the last one counts, as with StringVar
		{[]string{"--size", "1Q"}, "1Q", 0, `invalid size "1Q" (want a number of bytes with an optional unit`},
		{[]string{"--size", ""}, "", 0, ""},
	}
	for _, tc := range tests {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var text string
		var v sizeValue
		sizeFlag(f, &v, &text, "size", "a size")
		require.NoError(t, f.Parse(tc.args), tc.args)
		assert.Equal(t, tc.text, text, tc.args)
		assert.Equal(t, "string", f.Lookup("size").Value.Type())
		assert.Equal(t, "", f.Lookup("size").DefValue)
		n, err := v.Size()
		if tc.err == "" {
			assert.NoError(t, err, tc.args)
			assert.Equal(t, tc.n, n, tc.args)
			continue
		}
		assert.ErrorContains(t, err, tc.err, tc.args)
	}
}

// TestGlobsValue: the globs compile once, into one matcher of --match and
// --exclude; a glob that does not compile is the error of the check (the
// --match ones first), in ckpt.NewMatcher's words; parsing never fails.
func TestGlobsValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args           []string
		match, exclude []string
		in, out        []string // names selected and not
		err            string
	}{
		{nil, nil, nil, []string{"a.b", "x"}, nil, ""},
		{[]string{"--match", "mtp.**", "--match", "a.*"}, []string{"mtp.**", "a.*"}, nil, []string{"mtp.x.y", "a.b"}, []string{"a.b.c", "x"}, ""},
		{[]string{"--match", "**", "--exclude", "*.bias"}, []string{"**"}, []string{"*.bias"}, []string{"w.weight"}, []string{"w.bias"}, ""},
		{[]string{"--exclude", "[", "--match", "{"}, []string{"{"}, []string{"["}, nil, nil, `invalid --match glob "{": `},
		{[]string{"--match", "ok", "--exclude", "[", "--exclude", "{"}, []string{"ok"}, []string{"[", "{"}, nil, nil, `invalid --exclude glob "[": `},
	}
	for _, tc := range tests {
		f := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var match, exclude []string
		var mv, xv globsValue
		globsFlag(f, &mv, &match, "match", "m")
		globsFlag(f, &xv, &exclude, "exclude", "x")
		require.NoError(t, f.Parse(tc.args), tc.args)
		assert.Equal(t, tc.match, match, tc.args)
		assert.Equal(t, tc.exclude, exclude, tc.args)
		assert.Equal(t, "stringArray", f.Lookup("match").Value.Type())
		assert.Equal(t, "[]", f.Lookup("match").DefValue)
		m, err := selection(&mv, &xv)
		m2, err2 := selection(&mv, &xv) // compiled once: the same globs, the same error
		assert.Equal(t, err, err2)
		assert.Equal(t, m, m2)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.args)
			assert.Nil(t, m)
			continue
		}
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.match, m.Include(), tc.args)
		assert.Equal(t, tc.exclude, m.Exclude(), tc.args)
		for _, n := range tc.in {
			assert.True(t, m.Match(n), "%v selects %s", tc.args, n)
		}
		for _, n := range tc.out {
			assert.False(t, m.Match(n), "%v leaves out %s", tc.args, n)
		}
	}
}

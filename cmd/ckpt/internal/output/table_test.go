package output

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNumbers(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1000", -1234567: "-1234567", 24699207680: "24699207680"} {
		assert.Equal(t, want, Int(n), "plain digits")
	}
	for s, want := range map[string]string{"0": "0", "999": "999", "1000": "1,000", "-1234567": "-1,234,567", "24699207680": "24,699,207,680", "-100": "-100"} {
		assert.Equal(t, want, grouped(s))
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 30866663264: "28.7 GiB"} {
		assert.Equal(t, want, Bytes(n))
	}
	assert.Equal(t, "[]", Shape(nil))
	assert.Equal(t, "[248320,5120]", Shape([]int64{248320, 5120}), "one field, no inner spaces")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	f, err := Resolve("auto", true, Table, Text)
	require.NoError(t, err)
	assert.Equal(t, Table, f)
	f, err = Resolve("", false, Table, Text)
	require.NoError(t, err)
	assert.Equal(t, Text, f)
	_, err = Resolve("yaml", false, Table, Text)
	assert.ErrorContains(t, err, "yaml")
}

func TestGridFormats(t *testing.T) {
	t.Parallel()
	g := &Grid{Title: "t", Header: []string{"name", "n"}, Rows: [][]string{{"a|b", "1"}, {"c,d", "22"}}, Right: map[int]bool{1: true}}
	var b bytes.Buffer
	require.NoError(t, g.Render(&b, Markdown))
	assert.Contains(t, b.String(), "### t")
	assert.Contains(t, b.String(), `a\|b`)
	assert.Contains(t, b.String(), "---:|", "numbers right-aligned")
	b.Reset()
	require.NoError(t, g.Render(&b, CSV))
	assert.Equal(t, "name,n\na|b,1\n\"c,d\",22\n", b.String())
	b.Reset()
	require.NoError(t, g.Render(&b, Text))
	assert.Equal(t, "t\nname  n\na|b   1\nc,d   22\n", b.String())
	assert.Error(t, g.Render(&b, JSON))
}

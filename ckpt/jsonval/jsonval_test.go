package jsonval

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInt(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
		ok   bool
	}{
		{json.Number("42"), 42, true},
		{json.Number("1e3"), 1000, true},
		{json.Number("1.5"), 0, false},
		{float64(128), 128, true},
		{2.5, 0, false},
		{7, 7, true},
		{int64(-3), -3, true},
		{"64", 64, true},
		{"x", 0, false},
		{nil, 0, false},
		{true, 0, false},
	} {
		n, ok := Int(tc.in)
		assert.Equal(t, tc.ok, ok, "%#v", tc.in)
		assert.Equal(t, tc.want, n, "%#v", tc.in)
	}
}

func TestLists(t *testing.T) {
	assert.Equal(t, []string{"a", "b"}, Strings([]any{"a", 1.0, "b"}))
	assert.Nil(t, Strings("a"))
	assert.Equal(t, []int64{1, 3}, Ints([]any{1.0, "x", 2.5, "3"}))
	assert.Nil(t, Ints(map[string]any{}))
}

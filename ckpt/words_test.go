package ckpt

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWordsOf(t *testing.T) {
	const readData Option = "verify.Options.ReadData"
	cases := []struct {
		name  string
		words Words
		want  string
	}{
		{"nil words: the Go spelling", nil, "verify.Options.ReadData"},
		{"no word for it: the Go spelling", Words{"other.Options.X": "--x"}, "verify.Options.ReadData"},
		{"the caller's word", Words{readData: "--read-data"}, "--read-data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.words.Of(readData))
		})
	}
}

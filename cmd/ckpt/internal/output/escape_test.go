package output

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEscapeCSV(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                  "",
		"model.w":           "model.w",
		"=1+1":              "'=1+1",
		"+cmd":              "'+cmd",
		"-2+3":              "'-2+3",
		"@SUM(A1)":          "'@SUM(A1)",
		"\t=x":              "'\t=x",
		"\r=x":              "'\r=x",
		"-0.5":              "-0.5", // a number ckpt wrote stays a number
		"-1e-05":            "-1e-05",
		"+3":                "+3",
		"-Inf":              "-Inf",
		"-":                 "-", // not applicable
		"a=1":               "a=1",
		"'already quoted":   "'already quoted",
		"−2 (U+2212 minus)": "−2 (U+2212 minus)",
	} {
		assert.Equal(t, want, EscapeCSV(in), "%q", in)
	}
}

func TestEscapeMarkdown(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"model.layers.0.mlp.down_proj.weight": "model.layers.0.mlp.down_proj.weight",
		"[2,64]":                              "[2,64]",
		"-0.25":                               "-0.25",
		"17.5–23.6":                           "17.5–23.6",
		"-":                                   "-",
		"![x](http://e/x.png)":                `!\[x\](http\://e/x.png)`,
		"<b>":                                 `\<b\>`,
		"a*b*":                                `a\*b\*`,
		"a._b_.c":                             `a.\_b\_.c`,
		"a_b":                                 "a_b",
		"~~s~~":                               `\~\~s\~\~`,
		"`c`":                                 "\\`c\\`",
		"&amp;":                               `\&amp;`,
		"a|b":                                 `a\|b`,
		`a\b`:                                 `a\\b`,
		"# h":                                 `\# h`,
		"#h":                                  "#h",
		"> q":                                 `\> q`,
		"- i":                                 `\- i`,
		"+ i":                                 `\+ i`,
		"---":                                 `\---`,
		"1. i":                                `1\. i`,
		"12) i":                               `12\) i`,
		"www.e.x":                             `www\.e.x`,
		"x@e.x":                               `x\@e.x`,
		"mailto:x":                            `mailto\:x`,
		"ratio: 2":                            "ratio: 2",
		"a\nb":                                `a\\nb`,
		"r\u202egnp":                          `r\\u202egnp`,
	} {
		assert.Equal(t, want, EscapeMarkdown(in), "%q", in)
	}
}

func TestEscapeTerm(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ok.é":             "ok.é",
		"a\x1b[31m":        `a\x1b[31m`,
		"c1\u009b":         `c1\u009b`,
		"rlo\u202e":        `rlo\u202e`,
		"lri\u2066x\u2069": `lri\u2066x\u2069`,
		"lrm\u200e\u200f":  `lrm\u200e\u200f`,
		"alm\u061c":        `alm\u061c`,
		"bad\xff":          `bad\xff`,
		`"quoted" \ name`:  `"quoted" \ name`,
	} {
		assert.Equal(t, want, EscapeTerm(in), "%q", in)
	}
}

func TestEscapeFor(t *testing.T) {
	t.Parallel()
	const s = "=**x**\u202e"
	for format, want := range map[string]string{
		Markdown: `=\*\*x\*\*\\u202e`,
		CSV:      "'=**x**\u202e",
		Text:     `=**x**\u202e`,
		Table:    `=**x**\u202e`,
	} {
		assert.Equal(t, want, EscapeFor(format)(s), format)
	}
}

package main

import (
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/russross/blackfriday/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileNames are tensor names (and config keys) that carry markup for
// every format ckpt writes: Markdown images, links, raw HTML, emphasis,
// autolinks, block starts; spreadsheet formulas; terminal controls and
// bidirectional overrides (Trojan Source).
func hostileNames() []string {
	return []string{
		"![img](http://evil.example/x.png)",
		"[link](http://evil.example)",
		"<img src=x onerror=alert(1)>",
		"**bold**.__strong__._em_",
		"~~strike~~",
		"`code`",
		"&lt;b&gt;",
		"a|b",
		"# heading",
		"> quote",
		"1. item",
		"- item",
		"[ref]: http://evil.example",
		"www.evil.example",
		"http://evil.example/a",
		"mail@evil.example",
		`=HYPERLINK("http://evil.example","x")`,
		"+cmd|' /C calc'!A0",
		"-2+3+cmd|' /C calc'!A0",
		"@SUM(1+1)",
		"\t=tab",
		"\r=cr",
		"evil\u202Egnp.exe",
		"rtl\u2066x\u2069.y\u202A\u202B\u202C\u202D",
		"c0\x1b]0;title\x07",
		"c1\u009bx",
		"lrm\u200Ex\u200Fy\u061Cz",
		"```\n<img src=y>\n```",
	}
}

// bidi and control characters no output may carry raw.
var rawControls = regexp.MustCompile("[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u0080-\u009f]")

// hostileLine matches a line that holds text of hostileNames.
var hostileLine = regexp.MustCompile(`evil|onerror|strike|bold|heading|quote| item|SUM\(|HYPERLINK|lt;b`)

// hostilePair writes a base and a fine-tune whose tensors have the hostile
// names (each changed in the fine-tune) and whose config.json has them as
// keys (each value changed).
func hostilePair(t *testing.T) (base, ft string) {
	t.Helper()
	dir := t.TempDir()
	base, ft = filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	for i, d := range []string{base, ft} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		var mts []ckpt.MemTensor
		// a quantisation whose unquantised modules are the names (inspect's
		// quantization line copies them)
		cfg := map[string]any{"model_type": "x", "quantization_config": map[string]any{
			"quant_method": "fp8", "weight_block_size": []int{128, 128}, "modules_to_not_convert": hostileNames()}}
		var names []string
		for _, n := range hostileNames() {
			// and as a tensor kind of a decoder layer (the --by layer
			// heatmap's columns)
			names = append(names, n, "model.language_model.layers.0."+n+".weight")
		}
		for _, n := range names {
			data := make([]byte, 8)
			binary.LittleEndian.PutUint32(data, math.Float32bits(1))
			binary.LittleEndian.PutUint32(data[4:], math.Float32bits(float32(1+i)))
			mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: n, DType: numfmt.F32, Shape: []int64{2}}, Data: data})
			cfg[n] = i
		}
		require.NoError(t, ckpt.WriteFile(filepath.Join(d, "model.safetensors"), mts, nil))
		b, err := json.Marshal(cfg)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, "config.json"), b, 0o644))
	}
	return base, ft
}

// TestMarkdownEscapesInputs: diff --format markdown (and inspect's, and
// --by layer's) copies no markup from tensor names or config keys: every
// character that could open a link, an image, raw HTML, emphasis, code,
// an autolink or a block is backslash-escaped, and a Markdown renderer
// (blackfriday, as a check) makes no link, image, HTML element, emphasis,
// heading or quote of them; the names read back as they are. (Before:
// the report held live images, links and HTML.)
func TestMarkdownEscapesInputs(t *testing.T) {
	t.Parallel()
	base, ft := hostilePair(t)
	for _, args := range [][]string{
		{"diff", base, ft, "--format", "markdown"},
		{"diff", base, ft, "--format", "markdown", "--by", "layer"},
		{"inspect", base, "--format", "markdown"},
		{"verify", base, "--format", "markdown", "--arch", "none"},
		{"map", base, "--format", "markdown"},
	} {
		code, stdout, stderr := runQuiet(t, args...)
		require.Contains(t, []int{0, 1}, code, "%v: %s", args, stderr)
		assert.NotRegexp(t, rawControls, stdout, "%v", args)
		if args[0] == "map" {
			require.Contains(t, stdout, "problem (", "map names the unmapped hostile tensors")
		}
		assertMarkdownInert(t, fmt.Sprint(args), stdout, slices.Contains(args, "layer"))
	}
	// The names read back, unescaped, in the diff's rows.
	code, stdout, _ := runApp(t, "diff", base, ft, "--format", "markdown", "--progress", "none")
	require.Equal(t, 1, code)
	unescape := regexp.MustCompile(`\\([!-/:-@\[-` + "`" + `{-~])`)
	text := unescape.ReplaceAllString(stdout, "$1")
	for _, n := range hostileNames() {
		assert.Contains(t, text, ckpt.EscapeName(n), "the name %q reads as it is", n)
	}
}

// assertMarkdownInert checks a Markdown document (stdout of the command
// line args) for markup copied from hostile names: a renderer (blackfriday)
// makes no link, image, HTML element, emphasis, heading or quote of it,
// and every line that holds hostile text has the characters that open
// inline markup only escaped (ckpt's own table pipes and list markers
// aside), but in a code block (heatmap: the one of diff --by layer).
func assertMarkdownInert(t *testing.T, args, stdout string, heatmap bool) {
	t.Helper()
	html := string(blackfriday.Run([]byte(stdout)))
	if heatmap {
		assert.Equal(t, 1, strings.Count(html, "<pre>"), "%v: the heatmap is one code block, its fence not closed by a name", args)
	}
	for _, bad := range []string{"<img", "<a ", "<em>", "<strong>", "<del>", "<code>", "<blockquote>", "<h1>", "<ol>", "onerror=alert(1)>"} {
		assert.NotContains(t, html, bad, "%v: rendered", args)
	}
	// Every line: the characters that open inline markup appear only
	// escaped (ckpt's own table pipes and list markers aside), but in
	// the heatmap's code block, where nothing is markup.
	fence := ""
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.TrimSuffix(l, "text"); strings.HasPrefix(l, "```") && strings.Trim(f, "`") == "" {
			if fence == "" {
				fence = f
			} else if f == fence {
				fence = ""
			}
			continue
		}
		if fence != "" || !hostileLine.MatchString(l) {
			continue // ckpt's own text (a profile's '@') is not checked
		}
		cells := strings.TrimPrefix(strings.TrimSpace(l), "- ")
		cells = strings.ReplaceAll(cells, `\\`, "")
		cells = regexp.MustCompile(`\\.`).ReplaceAllString(cells, "")
		assert.NotRegexp(t, "[<>`~&@*]|\\]\\(|!\\[|https?:/", cells, "%v: unescaped markup in %q", args, l)
	}
}

// TestCSVEscapesInputs: a CSV cell copied from an input that begins with
// '=', '+', '-', '@', a tab or a carriage return starts with a single
// quote (OWASP's CSV injection guidance); numbers and ckpt's own cells are
// as they were. (Before: "=HYPERLINK(...)" reached the spreadsheet.)
func TestCSVEscapesInputs(t *testing.T) {
	t.Parallel()
	base, ft := hostilePair(t)
	for _, args := range [][]string{
		{"diff", base, ft, "--format", "csv"},
		{"inspect", base, "--format", "csv"},
	} {
		code, stdout, stderr := runQuiet(t, args...)
		require.Contains(t, []int{0, 1}, code, "%v: %s", args, stderr)
		rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
		require.NoError(t, err, "%v", args)
		require.Greater(t, len(rows), 1)
		names := 0
		for _, r := range rows[1:] {
			for _, c := range r {
				if c == "" || c == "-" || isNum(c) {
					continue
				}
				assert.NotContains(t, "=+-@\t\r", c[:1], "%v: cell %q", args, c)
				if strings.HasPrefix(c, "'") {
					names++
				}
			}
		}
		assert.Positive(t, names, "%v: the formula-like names are there, quoted", args)
		assert.Contains(t, stdout, `'=HYPERLINK(""http://evil.example"",""x"")`, "%v", args)
		assert.Contains(t, stdout, "'+cmd|", "%v", args)
		assert.Contains(t, stdout, "'-2+3+cmd|", "%v", args)
		assert.Contains(t, stdout, "'@SUM(1+1)", "%v", args)
	}
	// A number stays a number: the F32 values' statistics of the diff.
	code, stdout, _ := runApp(t, "diff", base, ft, "--format", "csv", "--progress", "none")
	require.Equal(t, 1, code)
	assert.Contains(t, stdout, ",1,1,0.7071", "numeric cells are untouched")
}

func isNum(s string) bool {
	var f float64
	return json.Unmarshal([]byte(s), &f) == nil
}

// TestTerminalEscapesInputs: text and table output (a terminal's) shows
// control characters and bidirectional controls of tensor names and
// config keys escaped (\u202e, \x1b), in inspect, verify, diff and map;
// so does the HTML page. (Before: a right-to-left override in a tensor
// name reached the terminal and the page raw.)
func TestTerminalEscapesInputs(t *testing.T) {
	t.Parallel()
	base, ft := hostilePair(t)
	for _, args := range [][]string{
		{"diff", base, ft, "--format", "text"},
		{"diff", base, ft, "--format", "table"},
		{"diff", base, ft, "--format", "text", "--by", "layer"},
		{"inspect", base, "--format", "text"},
		{"inspect", base, "--format", "table"},
		{"verify", base, "--format", "text", "--arch", "none"},
		{"map", base, "--format", "text"},
		{"diff", base, ft, "--format", "html"},
		{"diff", base, ft, "--format", "html", "--by", "layer"},
		{"diff", base, ft, "--format", "table", "--by", "layer"},
	} {
		code, stdout, stderr := runQuiet(t, args...)
		assert.Contains(t, []int{0, 1}, code, "%v: %s", args, stderr)
		assert.NotRegexp(t, rawControls, stdout, "%v: stdout", args)
		assert.NotRegexp(t, rawControls, stderr, "%v: stderr", args)
		if args[0] == "diff" || args[0] == "inspect" {
			assert.Contains(t, stdout, `evil\u202egnp.exe`, "%v", args)
		}
	}
	code, stdout, _ := runApp(t, "diff", base, ft, "--format", "html", "--progress", "none")
	require.Equal(t, 1, code)
	assert.NotContains(t, stdout, "<img src=x")
	assert.Contains(t, stdout, "&lt;img src=x onerror=alert(1)&gt;")
}

// runQuiet runs the command line with --progress none where the command
// has the flag.
func runQuiet(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	if args[0] == "diff" || args[0] == "verify" {
		args = append(args, "--progress", "none")
	}
	return runApp(t, args...)
}

// hostileSegment is a file name (no '/') that carries markup for Markdown
// and controls for the terminal: a folder, a source or an output path
// named so is copied text, as a tensor name is.
const hostileSegment = "![img](evil.png) <img src=x onerror=alert(1)> **bold** _em_ [link](www.evil.example) a|b `code` ~~strike~~ &lt;b&gt; evil\u202egnp c0\x1b]0;t\x07"

// cacheInputs builds, under a folder named hostileSegment, a source, its
// cache root (two device folders), a copy of the 1x2 folder missing a
// file, one with an extra file, and a mapping profile whose name is
// hostile; it returns the command lines that copy them into their output
// (format is appended).
func cacheInputs(t *testing.T) [][]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), hostileSegment)
	src := filepath.Join(dir, "model")
	require.NoError(t, synth.Write(src, synth.Small()))
	root, other, extra := filepath.Join(dir, "cache"), filepath.Join(dir, "other"), filepath.Join(dir, "extra")
	for _, args := range [][]string{
		{"cache", "build", src, "-o", root},
		{"cache", "build", src, "-o", root, "--mesh", "1x1"},
		{"cache", "build", src, "-o", other},
		{"cache", "build", src, "-o", extra},
	} {
		code, _, stderr := runApp(t, append(args, "--progress", "none")...)
		require.Equal(t, 0, code, "%v: %s", args, stderr)
	}
	folder := filepath.Join(root, "P300", "tensor_cache_bfp8_mesh1x2")
	otherFolder := filepath.Join(other, "P300", "tensor_cache_bfp8_mesh1x2")
	extraFolder := filepath.Join(extra, "P300", "tensor_cache_bfp8_mesh1x2")
	var bins []string // (not filepath.Glob: the folder's name is a pattern)
	ents, err := os.ReadDir(otherFolder)
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tensorbin") {
			bins = append(bins, filepath.Join(otherFolder, e.Name()))
		}
	}
	require.Greater(t, len(bins), 1)
	require.NoError(t, os.Remove(bins[0]))
	data, err := os.ReadFile(bins[1])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(extraFolder, "<img src=x onerror=alert(1)> evil\u202e.tensorbin"), data, 0o644))
	code, dump, _ := runApp(t, "map", "--dump")
	require.Equal(t, 0, code)
	var prof map[string]any
	require.NoError(t, json.Unmarshal([]byte(dump), &prof))
	prof["name"] = "<img src=x onerror=alert(1)>@evil **bold**\u202e"
	b, err := json.Marshal(prof)
	require.NoError(t, err)
	rules := filepath.Join(dir, "rules.json")
	require.NoError(t, os.WriteFile(rules, b, 0o644))
	return [][]string{
		{"cache", "verify", folder, "--source", src},
		{"cache", "verify", root, "--source", src},
		{"cache", "verify", extraFolder, "--source", src},
		{"cache", "ls", extraFolder},
		{"cache", "compare", folder, otherFolder},
		{"cache", "identify", folder},
		{"cache", "identify", folder, "--rules", rules},
		{"cache", "identify", otherFolder, "--source", src},
		{"map", src, "--against-cache", otherFolder},
		{"map", src, "--rules", rules, "--summary"},
		{"extract", src, "--match", "mtp.**", "-o", filepath.Join(dir, "mtp") + string(filepath.Separator)},
	}
}

// freshOut gives extract's output folder of args a name of its own for
// run n (a directory output must be new or empty).
func freshOut(args []string, n int) []string {
	args = slices.Clone(args)
	if args[0] == "extract" {
		o := args[len(args)-1]
		args[len(args)-1] = strings.TrimSuffix(o, string(filepath.Separator)) + fmt.Sprint(n) + string(filepath.Separator)
	}
	return args
}

// TestMarkdownEscapesCacheInputs: the prose lines of the cache commands,
// map and extract with --format markdown (the verdicts naming the folder,
// the source, the profile of a --rules file, the files written) escape
// what they copy as their tables do; in text and table output they show
// control and bidirectional characters escaped. (Before: cache verify,
// compare and identify escaped them for the terminal only, and the
// verdict of cache verify, map's profile line and cache build's paths not
// even that.)
func TestMarkdownEscapesCacheInputs(t *testing.T) {
	t.Parallel()
	for _, args := range cacheInputs(t) {
		for i, f := range []string{"markdown", "text", "table"} {
			args := append(freshOut(args, i), "--format", f)
			code, stdout, stderr := runQuiet(t, args...)
			require.Contains(t, []int{0, 1}, code, "%v: %s", args, stderr)
			assert.NotRegexp(t, rawControls, stdout, "%v: stdout", args)
			assert.NotRegexp(t, rawControls, stderr, "%v: stderr", args)
			require.True(t, hostileLine.MatchString(stdout), "%v copies a hostile name", args)
			if f == "markdown" {
				assertMarkdownInert(t, fmt.Sprint(args), stdout, false)
			} else {
				assert.Contains(t, stdout, `\u202e`, "%v: the hostile name, escaped", args)
			}
		}
	}
}

// TestStderrLinesEscaped: warnings and notes reach stderr with the
// control characters of what they quote escaped (an archive's manifest, a
// tensor name, a source's path can carry terminal controls), one line
// each; a message without any prints as it is.
func TestStderrLinesEscaped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		say  func(a *App)
		want string
	}{
		{"warning", func(a *App) { a.warn("12 files came from x\x1b]0;owned\x07.tar.zst") },
			"ckpt: warning: 12 files came from x\\x1b]0;owned\\a.tar.zst\n"},
		{"note", func(a *App) { a.note("checking \u202eevil", "plain \"quoted\" name") },
			"ckpt: note: checking \\u202eevil\nckpt: note: plain \"quoted\" name\n"},
		{"newline", func(a *App) { a.warn("two\nlines") }, "ckpt: warning: two\\nlines\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb strings.Builder
			tc.say(&App{Err: &errb})
			assert.Equal(t, tc.want, errb.String())
		})
	}
}

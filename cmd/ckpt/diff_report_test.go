package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	deepOnce         sync.Once
	deepBase, deepFT string
	deepErr          error
	ansiRe           = regexp.MustCompile(`\x1b\[[0-9;]*m`)
)

const deepLayers = 64

// deepPair is a 64-layer pair of the tiny Qwen3.5 shape (the 27B's layer
// count; hidden 128), the light fine-tune (a few tensors changed, the MTP
// head shipped as bf16), written once next to fixturePair's (TestMain
// removes both).
func deepPair(t *testing.T) (base, ft string) {
	t.Helper()
	fixturePair(t)
	deepOnce.Do(func() {
		o := synth.Small()
		o.Layers, o.Vision, o.LayersPerShard = deepLayers, false, 16
		deepBase, deepFT = filepath.Join(pairDir, "deep", "base"), filepath.Join(pairDir, "deep", "ft")
		if deepErr = synth.Write(deepBase, o); deepErr != nil {
			return
		}
		o.FineTune = true
		deepErr = synth.Write(deepFT, o)
	})
	require.NoError(t, deepErr)
	return deepBase, deepFT
}

// TestDiffHTMLReport (#25.5): --format html -o writes one self-contained
// page with a heatmap row for every decoder layer and the MTP layer, the
// summary and the config differences; nothing on stdout, a note on
// stderr, exit 1 (differences).
func TestDiffHTMLReport(t *testing.T) {
	t.Parallel()
	base, ft := deepPair(t)
	out := filepath.Join(t.TempDir(), "r.html")
	code, stdout, stderr := runApp(t, "diff", base, ft, "--by", "layer", "--format", "html", "-o", out, "--progress", "none")
	require.Equal(t, 1, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "ckpt: wrote the diff report to "+out+"\n", stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	page := string(b)
	require.True(t, strings.HasPrefix(page, "<!DOCTYPE html>"))
	for i := range deepLayers {
		// two heatmaps (rel_l2, changed fraction), and the per-layer table
		assert.Equal(t, 2, strings.Count(page, fmt.Sprintf(`<tr data-layer="%d">`, i)), "layer %d", i)
		assert.Contains(t, page, fmt.Sprintf("<tr><td>%d</td><td class=\"r\">", i), "layer %d in the per-layer table", i)
	}
	assert.Equal(t, 2, strings.Count(page, `<tr data-layer="mtp 0">`))
	assert.Contains(t, page, `id="verdict">differences found<`)
	assert.Contains(t, page, "quantization_config.modules_to_not_convert")
	assert.Regexp(t, `<td class="l[1-4]" title="1 mlp.down_proj: changed, rel_l2 `, page, "the fine-tune's change of layer 1")
	assert.Contains(t, page, `<td class="rq" title="mtp 0 mlp.up_proj: requant_identical`)
	for _, ref := range []string{"src=", "href=", "url(", "@import", "<script", "http://", "https://"} {
		assert.NotContains(t, page, ref, "self-contained")
	}
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")

	// To stdout without -o; the same page.
	code, stdout, _ = runApp(t, "diff", base, ft, "--by", "layer", "--format", "html", "--progress", "none")
	require.Equal(t, 1, code)
	assert.Equal(t, page, stdout)
}

// TestDiffOutErrors: an -o that cannot be written is exit 3, before
// anything is compared; a bad --format is still a usage error.
func TestDiffOutErrors(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")
	code, stdout, stderr := runApp(t, "diff", base, ft, "--format", "html", "-o", missing, "--progress", "none")
	assert.Equal(t, 3, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "cannot write output")
	assert.Contains(t, stderr, missing)
	code, _, stderr = runApp(t, "diff", base, ft, "--format", "pdf", "-o", filepath.Join(t.TempDir(), "r.pdf"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "html")
	// -o works for the other formats too: json to a file.
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, _ = runApp(t, "diff", base, ft, "--format", "json", "-o", out, "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"schema_version"`)
}

// TestDiffByLayerStrip (#25.5): --by layer adds the heatmap strip, one row
// per decoder layer and the MTP layer, within 80 columns: ASCII glyphs and
// no colour in text output and with NO_COLOR, block glyphs and colour on a
// UTF-8 colour terminal.
func TestDiffByLayerStrip(t *testing.T) {
	t.Parallel()
	base, ft := deepPair(t)
	code, text, _ := runApp(t, "diff", base, ft, "--by", "layer", "--format", "text", "--progress", "none")
	require.Equal(t, 1, code)
	code, tty := runTerminal(t, map[string]string{"LANG": "en_US.UTF-8", "COLUMNS": "80"}, "diff", base, ft, "--by", "layer", "--progress", "none")
	require.Equal(t, 1, code)
	code, noColor := runTerminal(t, map[string]string{"LANG": "C", "NO_COLOR": "1", "COLUMNS": "80"}, "diff", base, ft, "--by", "layer", "--progress", "none")
	require.Equal(t, 1, code)
	code, tensorRows, _ := runApp(t, "diff", base, ft, "--format", "text", "--progress", "none")
	require.Equal(t, 1, code)
	assert.NotContains(t, tensorRows, "heatmap by layer", "only with --by layer")
	for _, c := range []struct {
		name, out     string
		color, blocks bool
	}{{"text", text, false, false}, {"terminal", tty, true, true}, {"NO_COLOR", noColor, false, false}} {
		i := strings.Index(c.out, "heatmap by layer: rel_l2")
		require.GreaterOrEqual(t, i, 0, c.name)
		strip, _, _ := strings.Cut(c.out[i:], "\n\n")
		assert.Equal(t, c.color, ansiRe.MatchString(strip), c.name)
		plain := ansiRe.ReplaceAllString(strip, "")
		for _, l := range strings.Split(plain, "\n") {
			assert.LessOrEqual(t, utf8.RuneCountInString(l), 80, "%s: %q", c.name, l)
		}
		for i := range deepLayers {
			assert.Regexp(t, fmt.Sprintf(`(?m)^%d +[|│] `, i), plain, "%s: layer %d", c.name, i)
		}
		assert.Regexp(t, `(?m)^mtp 0 [|│] `, plain, c.name)
		assert.Contains(t, plain, "qkv z  a  b  out cv A  dt n    q  k  v  o  qn kn   g  u  d    in po", c.name)
		// Layer 1's down_proj changed (rel_l2 0.0218, the largest: the top
		// level); the MTP head re-quantises exactly.
		top, same := "##", "."
		if c.blocks {
			top, same = "██", "·"
		}
		assert.Regexp(t, `(?m)^1 .*`+regexp.QuoteMeta(top), plain, c.name)
		assert.Regexp(t, `(?m)^mtp 0 .* rr rr rr `, plain, c.name)
		assert.Contains(t, plain, "legend: "+same+" no difference", c.name)
	}
	code, md, _ := runApp(t, "diff", base, ft, "--by", "layer", "--format", "markdown", "--progress", "none")
	require.Equal(t, 1, code)
	assert.Contains(t, md, "```text\nheatmap by layer: rel_l2", "a code block in Markdown")
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README's blocks that tests run, each the ```sh block after its marker.
const (
	readmeInstall    = "<!-- install: run by TestREADMEFirstHour -->"
	readmeFirstHour  = "<!-- first hour: run by TestREADMEFirstHour -->"
	readmeCompletion = "<!-- completion: run by TestREADMECompletion -->"
)

// firstHourExits are the exit codes of the ckpt commands of the README's
// first-hour block, in order, run on the demo pair: verify --against and
// diff exit 1 (the demo's fine-tune ships its MTP head in bf16), every
// other command 0. A command added to the block needs its code here.
var firstHourExits = []int{0, 0, 0, 1, 1, 0, 0, 0}

// readmeBlock returns the command lines of the README's ```sh block after
// marker, each split into words as the shell does (quotes, backslashes,
// comments; a line ending in a backslash continues on the next).
func readmeBlock(t *testing.T, marker string) [][]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), marker+"\n")
	require.True(t, ok, "the README has no %q", marker)
	require.True(t, strings.HasPrefix(rest, "```sh\n"), "a ```sh block follows %q", marker)
	block, _, ok := strings.Cut(strings.TrimPrefix(rest, "```sh\n"), "\n```\n")
	require.True(t, ok, "the block after %q is not closed", marker)
	var lines [][]string
	var cont string
	for l := range strings.SplitSeq(block, "\n") {
		if s, ok := strings.CutSuffix(l, `\`); ok {
			cont += s
			continue
		}
		words, err := shellWords(cont + l)
		require.NoError(t, err, "%s: %q", marker, cont+l)
		cont = ""
		if len(words) > 0 {
			lines = append(lines, words)
		}
	}
	require.Empty(t, cont, "%s: the block ends in a continued line", marker)
	return lines
}

// shellWords splits a line into words as a POSIX shell does for the forms
// the README uses: blanks separate words, '…' and "…" quote (the latter
// leaves $ as it is), a backslash outside quotes escapes the next
// character, and a # that begins a word starts a comment.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	quote := rune(0)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				w.WriteRune(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\':
			if i+1 < len(rs) {
				i++
				w.WriteRune(rs[i])
			}
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '#' && !inWord:
			return words, nil
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c", quote)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"ckpt inspect hf:Qwen/Qwen3.5-27B-FP8 --summary   # headers only", []string{"ckpt", "inspect", "hf:Qwen/Qwen3.5-27B-FP8", "--summary"}},
		{"ckpt extract x --match 'mtp.**' -o a\\ b", []string{"ckpt", "extract", "x", "--match", "mtp.**", "-o", "a b"}},
		{`export PATH="$PATH:$(go env GOPATH)/bin"   # where`, []string{"export", "PATH=$PATH:$(go env GOPATH)/bin"}},
		{"a#b '#' c", []string{"a#b", "#", "c"}},
		{"   # only a comment", nil},
	} {
		got, err := shellWords(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	_, err := shellWords("ckpt 'open")
	assert.Error(t, err)
}

// syncBuffer is one buffer for stdout and stderr, as a terminal shows
// both.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// TestREADMEFirstHour runs the README's install and first-hour blocks as
// written, in a new working directory, with the demo pair standing in for
// the downloaded checkpoints: each `hf download ID` writes the next of the
// demo's base and fine-tune into a Hugging Face cache (HF_HUB_CACHE) as
// repository ID, the way huggingface_hub lays out a download, and every
// ckpt command runs in-process on a terminal of 80, 100 and 160 columns
// with the exit code firstHourExits gives. Its transcript (commands, then
// stdout and stderr as a terminal interleaves them, and the exit code) is
// the golden testdata/term/first_hour_<width>.golden: the look of the
// first hour. Rewrite with -update after any change of output.
//
// Not parallel: the block's relative paths (-o base.contract.json, --out
// tt-cache) need the working directory (t.Chdir).
func TestREADMEFirstHour(t *testing.T) {
	install := readmeBlock(t, readmeInstall)
	steps := readmeBlock(t, readmeFirstHour)

	// The install block: go install of this command, PATH, ckpt version.
	var ran []string
	for _, w := range install {
		switch {
		case len(w) == 3 && w[0] == "go" && w[1] == "install":
			require.Equal(t, "./cmd/ckpt", w[2], "the README installs from a clone")
			_, err := os.Stat(filepath.Join("..", "..", w[2], "main.go"))
			require.NoError(t, err, "go install %s: no such command in the repository", w[2])
		case len(w) == 2 && w[0] == "export" && strings.HasPrefix(w[1], "PATH="):
			assert.Contains(t, w[1], "$(go env GOPATH)/bin")
		case w[0] == "ckpt":
			code, _, stderr := runApp(t, w[1:]...)
			require.Equal(t, 0, code, "%s: %s", strings.Join(w, " "), stderr)
		default:
			t.Fatalf("the install block runs %q: only go install, export PATH and ckpt are known to this test", strings.Join(w, " "))
		}
		ran = append(ran, w[0])
	}
	assert.Equal(t, []string{"go", "export", "ckpt"}, ran)

	dir := fixedTempDir(t)
	base, ft, err := synth.Pair(filepath.Join(dir, "demo"))
	require.NoError(t, err)
	hub := filepath.Join(dir, "hub")
	standIns := []string{base, ft}
	commits := []string{"5f1c2e0d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d", "a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4"}
	var repos []string
	for _, w := range steps {
		if w[0] != "hf" {
			continue
		}
		require.True(t, len(w) == 3 && w[1] == "download", "the block's hf command is hf download ID: %q", strings.Join(w, " "))
		require.Less(t, len(repos), len(standIns), "the demo pair stands in for two downloads, the base and the fine-tune")
		_, err := sourcetest.WriteCache(hub, w[2], commits[len(repos)], standIns[len(repos)], false)
		require.NoError(t, err)
		repos = append(repos, w[2])
	}
	require.Len(t, repos, 2, "the block downloads a base and its fine-tune")

	work := filepath.Join(dir, "work")
	same := os.TempDir() == "/tmp" // the goldens' paths wrap where /tmp/ckpt-term-XXXXXXXX/ does
	for _, width := range []int{80, 100, 160} {
		var got string
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			require.NoError(t, os.RemoveAll(work))
			require.NoError(t, os.Mkdir(work, 0o755))
			t.Chdir(work) // until this subtest ends: golden reads testdata/ from the package directory
			got = runFirstHour(t, steps, repos, width, hub)
		})
		if t.Failed() {
			return
		}
		assert.NotContains(t, got, "…", "nothing is cut")
		for _, r := range repos {
			assert.Contains(t, got, "hf:"+r, "the transcript names the source as the README does")
		}
		if same {
			got = strings.ReplaceAll(got, work, "WORK")
			got = tempName.ReplaceAllString(got, "ckpt-term-XXXXXXXX")
			got = buildSpeed.ReplaceAllString(got, "in T: R elements/s")
			golden(t, filepath.Join("term", fmt.Sprintf("first_hour_%d.golden", width)), got)
		}
	}
	// The cache the block built is the one it verified, in the working
	// directory where the README says to point TT_CACHE_PATH.
	_, err = os.Stat(filepath.Join(work, "tt-cache"))
	require.NoError(t, err)
}

// runFirstHour runs the first-hour block's steps in the working directory
// on a terminal of width columns, checking each ckpt command's exit code
// and its tables' width, and returns the transcript.
func runFirstHour(t *testing.T, steps [][]string, repos []string, width int, hub string) string {
	t.Helper()
	env := map[string]string{
		"HF_HUB_CACHE":                 hub,
		"HF_HUB_DISABLE_PROGRESS_BARS": "1", // no bar whose frames depend on timing
		"COLUMNS":                      fmt.Sprint(width),
		"NO_COLOR":                     "1",
	}
	getenv := func(k string) string { return env[k] }
	var transcript syncBuffer
	n := 0
	for _, w := range steps {
		fmt.Fprintf(&transcript, "$ %s\n", shellJoin(w))
		if w[0] == "hf" {
			fmt.Fprintf(&transcript, "(the demo's %s, written into $HF_HUB_CACHE as %s by the test)\n\n", []string{"base", "fine-tune"}[indexOf(repos, w[2])], w[2])
			continue
		}
		require.Equal(t, "ckpt", w[0], "the first-hour block runs only hf download and ckpt: %q", strings.Join(w, " "))
		require.Less(t, n, len(firstHourExits), "more ckpt commands in the block than firstHourExits lists")
		var out, errb syncBuffer
		app := &App{Out: teeWriter{&out, &transcript}, Err: teeWriter{&errb, &transcript}, Terminal: true, ErrTerm: true, Getenv: getenv,
			Openers: source.Openers(source.Options{Getenv: getenv})}
		code := app.Run(context.Background(), w[1:])
		require.Equal(t, firstHourExits[n], code, "%s at %d columns:\n%s%s", shellJoin(w), width, out.b.String(), errb.b.String())
		n++
		fmt.Fprintf(&transcript, "(exit %d)\n\n", code)
		for _, l := range tableLines(out.b.String()) {
			assert.LessOrEqual(t, twwidth.Width(l), width, "%s at %d columns: %q", shellJoin(w), width, l)
		}
	}
	require.Equal(t, len(firstHourExits), n, "fewer ckpt commands in the block than firstHourExits lists")
	return transcript.b.String()
}

// buildSpeed is cache build's time and rate, the one part of the first
// hour that depends on the machine.
var buildSpeed = regexp.MustCompile(`in [0-9.]+s: [0-9.]+ [A-Z]* ?elements/s`)

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

// teeWriter writes to both writers: a command's own stream and the
// transcript.
type teeWriter struct{ a, b *syncBuffer }

func (w teeWriter) Write(p []byte) (int, error) {
	w.a.Write(p)
	return w.b.Write(p)
}

// TestREADMEGoVersion: the README names the Go version go.mod requires.
func TestREADMEGoVersion(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	require.NotNil(t, m, "go.mod has a go line")
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	v := string(m[1])
	assert.Contains(t, string(readme), "needs Go "+v+" or later (the `go "+v+"` line of `go.mod`")
	assert.NotRegexp(t, `Go \(?1\.\d+\)?[^.\d]`, string(readme), "no Go version without its patch level (go.mod names one)")
}

// TestREADMECompletion: every `ckpt completion SHELL` of the README's
// completion block prints that shell's script through the real command
// line, and the scripts complete through ckpt's own __complete (a
// subcommand, an enum flag's values).
func TestREADMECompletion(t *testing.T) {
	t.Parallel()
	header := map[string]string{
		"bash": "# bash completion V2 for ckpt",
		"zsh":  "#compdef ckpt",
		"fish": "# fish completion for ckpt",
	}
	seen := map[string]bool{}
	for _, w := range readmeBlock(t, readmeCompletion) {
		i := indexOf(w, "completion")
		require.True(t, i > 0 && strings.HasSuffix(w[i-1], "ckpt") && i+1 < len(w), "a completion line runs ckpt completion SHELL: %q", strings.Join(w, " "))
		sh := strings.TrimSuffix(w[i+1], ")")
		code, out, stderr := runApp(t, "completion", sh)
		require.Equal(t, 0, code, "ckpt completion %s: %s", sh, stderr)
		require.Contains(t, header, sh)
		assert.True(t, strings.HasPrefix(out, header[sh]), "ckpt completion %s: %.60q", sh, out)
		assert.Contains(t, out, "__complete", "the script asks ckpt itself")
		seen[sh] = true
	}
	assert.Equal(t, map[string]bool{"bash": true, "zsh": true, "fish": true}, seen)
	code, out, _ := runApp(t, "__complete", "cache", "b")
	require.Equal(t, 0, code)
	assert.Equal(t, "build", strings.Fields(out)[0])
	code, out, _ = runApp(t, "__complete", "diff", "a", "b", "--progress", "")
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"auto", "bar", "plain", "none", ":4"}, strings.Fields(out))
}

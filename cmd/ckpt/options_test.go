package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests parse command lines without running the commands (cli/cli's
// runF): the command's workflow is replaced by a function that keeps the
// options, and nothing is opened (the sources do not exist).

// parseOnly runs args through the root over cmd (whose workflow is
// replaced) and returns the exit code and message of the parse.
func parseOnly(t *testing.T, a *App, cmd *cobra.Command, args ...string) (int, string) {
	t.Helper()
	root := a.rootWith(cmd)
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	return exitCode(root.ExecuteContext(context.Background()))
}

func quietApp() *App { return &App{Out: io.Discard, Err: io.Discard, Getenv: os.Getenv} }

const missing = "/nonexistent/ckpt-src"

func TestVerifyOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want *verifyOptions // nil: the parse fails with msg
		msg  string
	}{
		{"defaults", []string{missing}, &verifyOptions{Source: missing, Format: "auto", Arch: "auto", Progress: "auto"}, ""},
		{"all", []string{missing, "--format", "json", "--arch", "qwen3_5", "--against", "k.json", "--match", "mtp.**", "--exclude", "mtp.fc.*",
			"--allow-config", "text_config.rope_theta", "--read-data", "--workers", "3", "--progress", "plain", "--only-failed", "--strict"},
			&verifyOptions{Source: missing, Format: "json", Arch: "qwen3_5", Against: "k.json", Match: []string{"mtp.**"}, Exclude: []string{"mtp.fc.*"},
				AllowConfig: []string{"text_config.rope_theta"}, ReadData: true, Workers: 3, Progress: "plain", OnlyFailed: true, Strict: true}, ""},
		{"deprecated --profile", []string{missing, "--profile", "none"}, &verifyOptions{Source: missing, Format: "auto", Arch: "none", Progress: "auto"}, ""},
		{"bad arch", []string{missing, "--arch", "llama"}, nil, `unknown --arch "llama" (want auto, qwen3_5 or none)`},
		{"bad format", []string{missing, "--format", "xml"}, nil, `unknown --format "xml" (want one of auto, table, text, json, jsonl, csv, markdown)`},
		{"bad progress", []string{missing, "--progress", "fancy"}, nil, `unknown --progress "fancy" (want auto, bar, plain or none)`},
		{"match without against", []string{missing, "--match", "mtp.**"}, nil, "--match and --exclude select tensors for --against; give --against FILE"},
		{"allow-config without against", []string{missing, "--allow-config", "a"}, nil,
			"--allow-config accepts config changes against a contract; give --against FILE"},
		{"no source", nil, nil, "verify takes 1 argument(s), got 0 (see ckpt verify --help)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *verifyOptions
			a := quietApp()
			run := func(_ context.Context, o *verifyOptions) error { got = o; return nil }
			code, msg := parseOnly(t, a, a.newVerifyCmd(run), append([]string{"verify"}, tc.args...)...)
			if tc.want == nil {
				assert.Equal(t, exitUnreadable, code)
				assert.Equal(t, tc.msg, msg)
				assert.Nil(t, got, "the workflow must not run")
				return
			}
			require.Equal(t, exitOK, code, msg)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestContractOptions(t *testing.T) {
	t.Parallel()
	a := quietApp()
	var got *contractOptions
	run := func(_ context.Context, o *contractOptions) error { got = o; return nil }
	code, msg := parseOnly(t, a, a.newContractCmd(run), "contract", missing, "--output", "k.json", "--read-data", "--workers", "2", "--progress", "none")
	require.Equal(t, exitOK, code, msg)
	assert.Equal(t, &contractOptions{Source: missing, Out: "k.json", ReadData: true, Workers: 2, Progress: "none"}, got)

	got = nil
	code, msg = parseOnly(t, a, a.newContractCmd(run), "contract", missing, "--progress", "loud")
	assert.Equal(t, exitUnreadable, code)
	assert.Equal(t, `unknown --progress "loud" (want auto, bar, plain or none)`, msg)
	assert.Nil(t, got)
}

func TestInspectOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want *inspectOptions
		msg  string
	}{
		{"defaults", nil, &inspectOptions{Source: missing, Format: "auto", Workers: 16}, ""},
		{"all", []string{"--format", "csv", "--match", "mtp.**", "--exclude", "*.bias", "--summary", "--metadata", "--workers", "2"},
			&inspectOptions{Source: missing, Format: "csv", Match: []string{"mtp.**"}, Exclude: []string{"*.bias"}, SummaryOnly: true, Metadata: true, Workers: 2}, ""},
		{"workers", []string{"--workers", "0"}, nil, "--workers must be at least 1, got 0"},
		{"format", []string{"--format", "html"}, nil, `unknown --format "html" (want one of auto, table, text, json, jsonl, csv, markdown)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *inspectOptions
			a := quietApp()
			run := func(_ context.Context, o *inspectOptions) error { got = o; return nil }
			code, msg := parseOnly(t, a, a.newInspectCmd(run), append([]string{"inspect", missing}, tc.args...)...)
			if tc.want == nil {
				assert.Equal(t, exitUnreadable, code)
				assert.Equal(t, tc.msg, msg)
				assert.Nil(t, got)
				return
			}
			require.Equal(t, exitOK, code, msg)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExtractOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want *extractOptions
		msg  string
	}{
		{"minimal", []string{"--match", "**", "-o", "x.safetensors"},
			&extractOptions{Source: missing, Out: "x.safetensors", Match: []string{"**"}, DType: "keep", Format: "auto", Progress: "auto"}, ""},
		{"all", []string{"--match", "mtp.**", "--exclude", "mtp.fc.*", "--out", "d/", "--dtype", "BF16", "--allow-nonfinite",
			"--max-shard-size", "5G", "--format", "jsonl", "--progress", "none"},
			&extractOptions{Source: missing, Out: "d/", Match: []string{"mtp.**"}, Exclude: []string{"mtp.fc.*"}, DType: "BF16", AllowNonFinite: true,
				MaxShardSize: "5G", Format: "jsonl", Progress: "none"}, ""},
		{"no out", []string{"--match", "**"}, nil, "extract needs -o/--out FILE.safetensors or -o/--out DIR"},
		{"no match", []string{"-o", "x.safetensors"}, nil, "extract needs --match GLOB (use --match '**' to extract everything)"},
		{"dtype", []string{"--match", "**", "-o", "x.safetensors", "--dtype", "f8"}, nil, `--dtype: invalid dtype "f8" (want keep, bf16, f16 or f32)`},
		{"with-scales", []string{"--match", "**", "-o", "x.safetensors", "--dtype", "bf16", "--with-scales"}, nil,
			"--with-scales only applies to --dtype keep: float dtypes dequantise FP8 weights and drop their scales"},
		{"shard size", []string{"--match", "**", "-o", "d/", "--max-shard-size", "0"}, nil, `--max-shard-size: invalid size "0": must be at least 1 byte`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *extractOptions
			a := quietApp()
			run := func(_ context.Context, o *extractOptions) error { got = o; return nil }
			code, msg := parseOnly(t, a, a.newExtractCmd(run), append([]string{"extract", missing}, tc.args...)...)
			if tc.want == nil {
				assert.Equal(t, exitUnreadable, code)
				assert.Equal(t, tc.msg, msg)
				assert.Nil(t, got)
				return
			}
			require.Equal(t, exitOK, code, msg)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDiffOptions(t *testing.T) {
	t.Parallel()
	def := func(edit func(o *diffOptions)) *diffOptions {
		o := &diffOptions{Base: missing, FT: missing + "2", Format: "auto", Mode: "values", By: "tensor", Progress: "auto"}
		edit(o)
		return o
	}
	tests := []struct {
		name string
		args []string
		want *diffOptions
		msg  string
	}{
		{"defaults", nil, def(func(*diffOptions) {}), ""},
		{"sampled by layer", []string{"--sample-budget", "200MB", "--sample-seed", "7", "--by", "layer", "--format", "html", "-o", "r.html", "--summary"},
			def(func(o *diffOptions) {
				o.SampleBudget, o.SampleSeed, o.By, o.Format, o.Out, o.SummaryOnly = "200MB", 7, "layer", "html", "r.html", true
			}), ""},
		{"header", []string{"--mode", "header", "--all", "--match", "mtp.**"},
			def(func(o *diffOptions) { o.Mode, o.All, o.Match = "header", true, []string{"mtp.**"} }), ""},
		{"mode", []string{"--mode", "fast"}, nil, `unknown --mode "fast" (want header, bytes or values)`},
		{"by", []string{"--by", "row"}, nil, `unknown --by "row" (want tensor or layer)`},
		{"sample-bytes mode", []string{"--mode", "bytes", "--sample-bytes", "4KiB"}, nil, "--sample-bytes needs --mode values, not bytes"},
		{"both samples", []string{"--sample-bytes", "4KiB", "--sample-budget", "1M"}, nil, "--sample-bytes and --sample-budget exclude each other"},
		{"negative", []string{"--sample", "-1"}, nil, "--sample and --workers must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *diffOptions
			a := quietApp()
			run := func(_ context.Context, o *diffOptions) error { got = o; return nil }
			code, msg := parseOnly(t, a, a.newDiffCmd(run), append([]string{"diff", missing, missing + "2"}, tc.args...)...)
			if tc.want == nil {
				assert.Equal(t, exitUnreadable, code)
				assert.Equal(t, tc.msg, msg)
				assert.Nil(t, got)
				return
			}
			require.Equal(t, exitOK, code, msg)
			assert.Equal(t, tc.want, got)
		})
	}
}

// flagsOf replaces the workflow of the subcommand path of cmd by one that
// records its string flags, and returns them (cache and map: their
// constructors take no runF).
func flagsOf(cmd *cobra.Command, path ...string) (*cobra.Command, map[string]string) {
	sub := cmd
	for _, p := range path {
		for _, c := range sub.Commands() {
			if c.Name() == p {
				sub = c
			}
		}
	}
	got := map[string]string{}
	sub.RunE = func(c *cobra.Command, _ []string) error {
		c.Flags().VisitAll(func(fl *pflag.Flag) { got[fl.Name] = fl.Value.String() })
		got["ran"] = "yes"
		return nil
	}
	return cmd, got
}

func TestCacheAndMapOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  func(a *App) *cobra.Command
		path []string
		args []string
		want map[string]string // flags expected, nil: the parse fails with msg
		msg  string
	}{
		{"cache ls", (*App).newCacheCmd, []string{"ls"}, []string{"cache", "ls", missing, "--format", "csv", "--mesh", "1x2"},
			map[string]string{"format": "csv", "mesh": "1x2"}, ""},
		{"cache ls format", (*App).newCacheCmd, []string{"ls"}, []string{"cache", "ls", missing, "--format", "html"}, nil,
			`unknown --format "html" (want one of auto, table, text, json, jsonl, csv, markdown)`},
		{"cache build nan", (*App).newCacheCmd, []string{"build"}, []string{"cache", "build", missing, "-o", "out", "--nan", "quiet"}, nil,
			`--nan: NaN style "quiet": want vector or scalar`},
		{"cache build", (*App).newCacheCmd, []string{"build"}, []string{"cache", "build", missing, "-o", "out", "--nan", "scalar", "--progress", "plain"},
			map[string]string{"nan": string(build.NaNScalar), "progress": "plain", "format": "auto", "out": "out"}, ""},
		{"map", (*App).newMapCmd, nil, []string{"map", missing, "--format", "jsonl", "--mesh", "1x4"}, map[string]string{"format": "jsonl", "mesh": "1x4"}, ""},
		{"map format", (*App).newMapCmd, nil, []string{"map", missing, "--format", "yaml"}, nil,
			`unknown --format "yaml" (want one of auto, table, text, json, jsonl, csv, markdown)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := quietApp()
			cmd, got := flagsOf(tc.cmd(a), tc.path...)
			code, msg := parseOnly(t, a, cmd, tc.args...)
			if tc.want == nil {
				assert.Equal(t, exitUnreadable, code)
				assert.Equal(t, tc.msg, msg)
				assert.Empty(t, got["ran"])
				return
			}
			require.Equal(t, exitOK, code, msg)
			for k, v := range tc.want {
				assert.Equal(t, v, got[k], k)
			}
		})
	}
}

// A bad enum value fails before any file is opened, whether or not the
// command would have used the flag (verify's --progress only matters with
// --read-data): the missing source is never reached.
func TestBadEnumBeforeAnyWork(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"verify", missing, "--progress", "fancy"},
		{"contract", missing, "--progress", "fancy"},
		{"diff", missing, missing, "--progress", "fancy"},
		{"extract", missing, "--match", "**", "-o", "x.safetensors", "--progress", "fancy"},
	} {
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, exitUnreadable, code, args)
		assert.Empty(t, stdout)
		assert.Equal(t, "ckpt: unknown --progress \"fancy\" (want auto, bar, plain or none)\n", stderr, args)
	}
}

// Shell completion offers the values of an enum flag.
func TestEnumCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"diff", "a", "b", "--mode", ""}, []string{"header", "bytes", "values"}},
		{[]string{"diff", "a", "b", "--format", ""}, []string{"auto", "table", "text", "json", "jsonl", "csv", "markdown", "html"}},
		{[]string{"verify", "a", "--arch", ""}, []string{"auto", "qwen3_5", "none"}},
		{[]string{"extract", "a", "--dtype", ""}, []string{"keep", "bf16", "f16", "f32"}},
		{[]string{"cache", "build", "a", "--nan", ""}, []string{"vector", "scalar"}},
		{[]string{"cache", "verify", "a", "--progress", ""}, []string{"auto", "bar", "plain", "none"}},
		{[]string{"cache", "identify", "a", "--profile", ""}, mapping.BuiltinNames()},
		{[]string{"map", "a", "--profile", ""}, mapping.BuiltinNames()},
	} {
		var out bytes.Buffer
		a := &App{Out: &out, Err: io.Discard, Getenv: os.Getenv}
		root := a.newRootCmd()
		root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, tc.args...))
		root.SetOut(&out)
		require.NoError(t, root.Execute())
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.NotEmpty(t, lines)
		assert.Equal(t, tc.want, lines[:len(lines)-1], tc.args)
		assert.Equal(t, ":4", lines[len(lines)-1], "no file completion") // cobra.ShellCompDirectiveNoFileComp
	}
}

func TestEnumHelpLists(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a, b, c", commaList([]string{"a", "b", "c"}))
	assert.Equal(t, "a, b or c", orList([]string{"a", "b", "c"}))
	assert.Equal(t, "a, or b", commaOrList([]string{"a", "b"}))
	assert.Equal(t, "tensor, or layer (per decoder layer, mtp, visual, other)", byEnum.help())
	assert.Equal(t, "auto (from model_type/architectures), qwen3_5, none", archEnum.help())
	assert.True(t, dtypeEnum.accepts("BF16"))
	assert.False(t, byEnum.accepts(""))
	assert.True(t, progressEnum.accepts(""))
}

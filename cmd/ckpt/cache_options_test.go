package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests parse cache command lines without running the commands
// (runF, as options_test.go): nothing is opened, the paths do not exist.

// cacheWith is the cache command over one subcommand.
func cacheWith(sub *cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: "cache"}
	c.AddCommand(sub)
	return c
}

// optionCase is a command line and the options it parses to (nil: the
// parse fails, exit 2, with msg, and the workflow does not run).
type optionCase[O any] struct {
	name string
	args []string
	want *O
	msg  string
}

// runOptionCases parses each case through the cache command that newCmd
// makes with a runF keeping the options.
func runOptionCases[O any](t *testing.T, newCmd func(a *App, runF func(context.Context, *O) error) *cobra.Command, tests []optionCase[O]) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got *O
			a := quietApp()
			run := func(_ context.Context, o *O) error { got = o; return nil }
			code, msg := parseOnly(t, a, cacheWith(newCmd(a, run)), append([]string{"cache"}, tc.args...)...)
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

func TestCacheBuildOptions(t *testing.T) {
	t.Parallel()
	def := func(edit func(o *cacheBuildOptions)) *cacheBuildOptions {
		o := &cacheBuildOptions{Source: missing, Out: "out", planFlags: planFlags{Profile: mapping.BuiltinName, Mesh: "1x2"}, Progress: "auto", Format: "auto",
			NaN: string(build.NaNVector), Fsync: true}
		if edit != nil {
			edit(o)
		}
		return o
	}
	runOptionCases(t, (*App).newCacheBuildCmd, []optionCase[cacheBuildOptions]{
		{"defaults", []string{"build", missing, "-o", "out"}, def(nil), ""},
		{"all", []string{"build", missing, "--out", "out", "--rules", "r.json", "--mesh", "1x4", "--device", "P150x4", "--tag", "bf16", "--set", "proj_1d_decode=false",
			"--workers", "3", "--progress", "none", "--format", "json", "--force", "--fsync=false", "--device-dram", "32GiB", "--allow-nonfinite", "--nan", "scalar",
			"--no-space-check"},
			def(func(o *cacheBuildOptions) {
				o.planFlags = planFlags{Profile: mapping.BuiltinName, Rules: "r.json", Mesh: "1x4", Device: "P150x4", Tag: "bf16", Set: []string{"proj_1d_decode=false"}}
				o.Workers, o.Progress, o.Format, o.Force, o.Fsync, o.DeviceDRAM, o.AllowNonFinite, o.NaN = 3, "none", "json", true, false, "32GiB", true, string(build.NaNScalar)
				o.NoSpaceCheck = true
			}), ""},
		{"no out", []string{"build", missing}, nil, "cache build needs -o/--out DIR (or $TT_CACHE_PATH)"},
		{"nan", []string{"build", missing, "-o", "out", "--nan", "avx"}, nil, `--nan: NaN style "avx": want vector or scalar`},
		{"device dram", []string{"build", missing, "-o", "out", "--device-dram", "0"}, nil, `--device-dram: want a positive size, got "0"`},
		{"format", []string{"build", missing, "-o", "out", "--format", "csv"}, nil, `unknown --format "csv" (want one of auto, table, text, json)`},
		{"no source", []string{"build", "-o", "out"}, nil, "build takes 1 argument(s), got 0 (see ckpt cache build --help)"},
	})
}

func TestCacheVerifyOptions(t *testing.T) {
	t.Parallel()
	_, sizeErr := ckpt.ParseSize("lots")
	require.Error(t, sizeErr)
	runOptionCases(t, (*App).newCacheVerifyCmd, []optionCase[cacheVerifyOptions]{
		{"defaults", []string{"verify", missing, "--source", "src"},
			&cacheVerifyOptions{Dir: missing, Source: "src", MemInfo: "/proc/meminfo", Progress: "auto", Format: "auto"}, ""},
		{"all", []string{"verify", missing, "--source", "src", "--rules", "r.json", "--set", "a=true", "--min-mem", "4GiB", "--mesh", "1x2", "--tag", "bfp8",
			"--device", "P300", "--rehash", "--read-data", "--workers", "2", "--progress", "plain", "--format", "jsonl"},
			&cacheVerifyOptions{Dir: missing, Source: "src", Rules: "r.json", Set: []string{"a=true"}, MinMem: "4GiB", MemInfo: "/proc/meminfo", Rehash: true,
				ReadData: true, Workers: 2, Progress: "plain", Format: "jsonl", Select: cache.Selector{Mesh: "1x2", Tag: "bfp8", Device: "P300"}}, ""},
		{"no source: the manifest's", []string{"verify", missing}, &cacheVerifyOptions{Dir: missing, MemInfo: "/proc/meminfo", Progress: "auto", Format: "auto"}, ""},
		{"min-mem", []string{"verify", missing, "--source", "src", "--min-mem", "lots"}, nil, "--min-mem: " + sizeErr.Error()},
		{"format", []string{"verify", missing, "--source", "src", "--format", "csv"}, nil,
			`unknown --format "csv" (want one of auto, table, text, json, jsonl, markdown)`},
	})
}

func TestCacheLsOptions(t *testing.T) {
	t.Parallel()
	runOptionCases(t, (*App).newCacheLsCmd, []optionCase[cacheLsOptions]{
		{"defaults", []string{"ls", missing}, &cacheLsOptions{Dir: missing, Format: "auto"}, ""},
		{"all", []string{"ls", missing, "--format", "csv", "--mesh", "1x2", "--tag", "bfp8", "--device", "P300"},
			&cacheLsOptions{Dir: missing, Format: "csv", Select: cache.Selector{Mesh: "1x2", Tag: "bfp8", Device: "P300"}}, ""},
		{"format", []string{"ls", missing, "--format", "html"}, nil, `unknown --format "html" (want one of auto, table, text, json, jsonl, csv, markdown)`},
		{"two dirs", []string{"ls", missing, missing}, nil, "ls takes 1 argument(s), got 2 (see ckpt cache ls --help)"},
	})
}

func TestCachePackUnpackOptions(t *testing.T) {
	t.Parallel()
	runOptionCases(t, (*App).newCachePackCmd, []optionCase[cachePackOptions]{
		{"defaults", []string{"pack", missing, "-o", "c.tar.zst"}, &cachePackOptions{Dir: missing, Out: "c.tar.zst", Progress: "auto"}, ""},
		{"all", []string{"pack", missing, "--output", "c.tar.zst", "--workers", "2", "--progress", "bar", "--mesh", "1x2", "--tag", "bfp8", "--device", "P300"},
			&cachePackOptions{Dir: missing, Out: "c.tar.zst", Workers: 2, Progress: "bar", Select: cache.Selector{Mesh: "1x2", Tag: "bfp8", Device: "P300"}}, ""},
		{"no out", []string{"pack", missing}, nil, "cache pack needs -o/--out FILE.tar.zst"},
		{"progress", []string{"pack", missing, "-o", "c.tar.zst", "--progress", "loud"}, nil, `unknown --progress "loud" (want auto, bar, plain or none)`},
	})
	runOptionCases(t, (*App).newCacheUnpackCmd, []optionCase[cacheUnpackOptions]{
		{"defaults", []string{"unpack", missing, "-o", "root"}, &cacheUnpackOptions{File: missing, Dir: "root", Progress: "auto"}, ""},
		{"deprecated -C", []string{"unpack", missing, "-C", "root", "--progress", "none"}, &cacheUnpackOptions{File: missing, Dir: "root", Progress: "none"}, ""},
		{"no out", []string{"unpack", missing}, nil, "cache unpack needs -o/--out DIR"},
	})
}

func TestCacheCompareOptions(t *testing.T) {
	t.Parallel()
	runOptionCases(t, (*App).newCacheCompareCmd, []optionCase[cacheCompareOptions]{
		{"defaults", []string{"compare", missing, missing + "2"}, &cacheCompareOptions{A: missing, B: missing + "2", Progress: "auto", Format: "auto"}, ""},
		{"all", []string{"compare", missing, missing + "2", "--workers", "4", "--progress", "plain", "--format", "csv"},
			&cacheCompareOptions{A: missing, B: missing + "2", Workers: 4, Progress: "plain", Format: "csv"}, ""},
		{"format", []string{"compare", missing, missing, "--format", "html"}, nil, `unknown --format "html" (want one of auto, table, text, json, jsonl, csv, markdown)`},
		{"one dir", []string{"compare", missing}, nil, "compare takes 2 argument(s), got 1 (see ckpt cache compare --help)"},
	})
}

// Through the whole CLI, a wrong cache request exits 2 with its message
// on stderr, and nothing is written.
func TestCacheRequestErrorsCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	archiveFile := filepath.Join(dir, "c.tar.zst")
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"cache", "build", missing}, "cache build needs -o/--out DIR (or $TT_CACHE_PATH)"},
		{[]string{"cache", "build", missing, "-o", dir, "--device-dram", "0"}, `--device-dram: want a positive size, got "0"`},
		{[]string{"cache", "pack", dir}, "cache pack needs -o/--out FILE.tar.zst"},
		{[]string{"cache", "unpack", archiveFile}, "cache unpack needs -o/--out DIR"},
		{[]string{"cache", "identify", dir, "--rules", "p.json", "--profile", "qwen36"}, "--rules and --profile are exclusive"},
	}
	for _, tc := range tests {
		code, stdout, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, "%v", tc.args)
		assert.Empty(t, stdout, "%v", tc.args)
		assert.Equal(t, "ckpt: "+tc.msg+"\n", stderr, "%v", tc.args)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeWith is a README with both generated blocks holding old text.
func readmeWith(regular, b27 string) string {
	return "# intro\n\n" + readmeBlocks[0].begin + "\n" + regular + readmeBlocks[0].end + "\n\nprose between\n\n" +
		readmeBlocks[1].begin + "\n" + b27 + readmeBlocks[1].end + "\n\n## after\n"
}

func TestRewriteBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		texts   map[string]string
		want    string
		wantErr string
	}{
		{name: "regular rows rewrite only their block", in: readmeWith("old regular\n", "old 27b\n"),
			texts: map[string]string{blockRegular: "new regular\n"}, want: readmeWith("new regular\n", "old 27b\n")},
		{name: "27B rows rewrite only their block", in: readmeWith("old regular\n", "old 27b\n"),
			texts: map[string]string{block27B: "new 27b\n"}, want: readmeWith("old regular\n", "new 27b\n")},
		{name: "a run of both rewrites both", in: readmeWith("old regular\n", "old 27b\n"),
			texts: map[string]string{blockRegular: "R\n", block27B: "B\n"}, want: readmeWith("R\n", "B\n")},
		{name: "nothing measured leaves the file as it is", in: readmeWith("old regular\n", "old 27b\n"),
			texts: map[string]string{}, want: readmeWith("old regular\n", "old 27b\n")},
		{name: "an empty block is filled", in: readmeWith("", ""),
			texts: map[string]string{block27B: "B\n"}, want: readmeWith("", "B\n")},
		{name: "a missing block not rewritten is no error", in: "x\n" + readmeBlocks[0].begin + "\nold\n" + readmeBlocks[0].end + "\n",
			texts: map[string]string{blockRegular: "new\n"}, want: "x\n" + readmeBlocks[0].begin + "\nnew\n" + readmeBlocks[0].end + "\n"},
		{name: "a missing block to rewrite is an error", in: "x\n" + readmeBlocks[0].begin + "\nold\n" + readmeBlocks[0].end + "\n",
			texts: map[string]string{block27B: "new\n"}, wantErr: "occurs 0 times"},
		{name: "a begin marker twice is an error", in: readmeWith("a\n", "b\n") + readmeBlocks[1].begin + "\n",
			texts: map[string]string{block27B: "new\n"}, wantErr: "occurs 2 times"},
		{name: "no end marker after the begin marker is an error", in: readmeBlocks[1].end + "\n" + readmeBlocks[1].begin + "\nold\n",
			texts: map[string]string{block27B: "new\n"}, wantErr: "no end marker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := rewriteBlocks(tt.in, tt.texts)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestReadmeBlocks: the repository's README has each generated block once,
// so -readme can rewrite either.
func TestReadmeBlocks(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	for _, blk := range readmeBlocks {
		assert.Equal(t, 1, strings.Count(string(b), blk.begin), blk.id)
		assert.Equal(t, 1, strings.Count(string(b), blk.end), blk.id)
	}
	texts := map[string]string{blockRegular: "R\n", block27B: "B\n"}
	got, err := rewriteBlocks(string(b), texts)
	require.NoError(t, err)
	assert.Contains(t, got, readmeBlocks[0].begin+"\nR\n"+readmeBlocks[0].end)
	assert.Contains(t, got, readmeBlocks[1].begin+"\nB\n"+readmeBlocks[1].end)
}

func TestRewriteReadmeFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte(readmeWith("old regular\n", "old 27b\n")), 0o644))
	require.NoError(t, rewriteReadme(path, map[string]string{block27B: "new 27b\n"}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, readmeWith("old regular\n", "new 27b\n"), string(b))
	require.ErrorContains(t, rewriteReadme(filepath.Join(t.TempDir(), "none.md"), nil), "none.md")
}

func sampleRow(name, block string, throughput float64, unit string) result {
	return result{Name: name, Block: block, What: "`" + name + "`", WallS: 2.5, WallsS: []float64{2.5, 2.61, 2.4}, CatS: 0.25, Ratio: 10,
		Throughput: throughput, Unit: unit, NsCPUElem: 3.25, CPUS: 4.5, CatCPUS: 0.25, RSSMiB: 130, Runs: 3, Target: "≤ 512 MiB",
		LoadBefore: "1.00 1.10 1.20", LoadAfter: "1.50 1.40 1.30", Date: "2026-12-01T15:02:03Z", Commit: "0123456789abcdef0123456789abcdef01234567", Dirty: true}
}

func TestRunJSONRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := benchRun{Machine: "2 cores, AMD EPYC, linux/amd64, go1.26.8", Commit: "0123456789abcdef0123456789abcdef01234567", Dirty: true, Runs: 3,
		Rows: []result{sampleRow("27b-build", block27B, 480, "M elem/s"), sampleRow("27b-verify", block27B, 4.75, "GB/s")}}
	path := filepath.Join(dir, "run.json")
	require.NoError(t, writeRun(path, in))
	got, err := readRun(path)
	require.NoError(t, err)
	assert.Equal(t, in, got)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, key := range []string{`"name"`, `"wall_s"`, `"cat_s"`, `"ratio"`, `"throughput"`, `"unit"`, `"cpu_s"`, `"peak_rss_mib"`, `"runs"`, `"load_before"`, `"load_after"`, `"date"`, `"commit"`, `"dirty"`} {
		assert.Contains(t, string(raw), key)
	}

	for _, tt := range []struct{ name, text, wantErr string }{
		{"not JSON", "{", "reading"},
		{"no rows", `{"machine":"m","rows":[]}`, "no rows"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
		require.NoError(t, os.WriteFile(p, []byte(tt.text), 0o644))
		_, err := readRun(p)
		assert.ErrorContains(t, err, tt.wantErr, tt.name)
	}
	_, err = readRun(filepath.Join(dir, "absent.json"))
	assert.Error(t, err)
}

func TestCompareRuns(t *testing.T) {
	t.Parallel()
	prev := []result{
		sampleRow("27b-build", block27B, 500, "M elem/s"),
		sampleRow("27b-disk", block27B, 0.40, "GB/s"),
		sampleRow("27b-diff", block27B, 4.0, "GB/s"),
		sampleRow("27b-verify", block27B, 5.0, "GB/s"),
		sampleRow("only-before", blockRegular, 1, "GB/s"),
	}
	cur := []result{
		sampleRow("27b-build", block27B, 550, "M elem/s"), // +10 %
		sampleRow("27b-disk", block27B, 0.30, "GB/s"),     // −25 %
		sampleRow("27b-diff", block27B, 4.6, "GB/s"),      // +15 %: on the bound, within
		sampleRow("27b-verify", block27B, 5.0, "M elem/s"),
		sampleRow("only-now", blockRegular, 1, "GB/s"),
	}
	cs, outside := compareRuns(prev, cur, 0.15)
	assert.True(t, outside)
	type want struct {
		within      bool
		ratio       float64
		missingFrom string
		note        string
	}
	wants := map[string]want{
		"27b-build":   {within: true, ratio: 1.1},
		"27b-disk":    {ratio: 0.75},
		"27b-diff":    {within: true, ratio: 1.15},
		"27b-verify":  {note: "unit M elem/s, previously GB/s"},
		"only-now":    {missingFrom: "the previous run"},
		"only-before": {missingFrom: "this run"},
	}
	require.Len(t, cs, len(wants))
	for _, c := range cs {
		w, ok := wants[c.Name]
		require.True(t, ok, c.Name)
		assert.Equal(t, w.within, c.Within, c.Name)
		assert.InDelta(t, w.ratio, c.Ratio, 1e-9, c.Name)
		assert.Equal(t, w.missingFrom, c.MissingFrom, c.Name)
		assert.Equal(t, w.note, c.Note, c.Name)
	}

	tests := []struct {
		name        string
		prev, cur   []result
		wantOutside bool
	}{
		{"all within", prev[:1], cur[:1], false},
		{"one outside", prev[:2], cur[:2], true},
		{"rows missing from either side are no failure", prev[4:], cur[4:], false},
		{"a unit change fails", prev[3:4], cur[3:4], true},
	}
	for _, tt := range tests {
		_, got := compareRuns(tt.prev, tt.cur, 0.15)
		assert.Equal(t, tt.wantOutside, got, tt.name)
	}

	text := renderComparison("run1.json", benchRun{Machine: "2 cores", Commit: "0123456789abcdef", Runs: 3}, cs, 0.15)
	for _, s := range []string{"Against run1.json (2 cores; commit 0123456789ab, 3 runs)", "within ±15 %", "| `27b-build` | 500 M elem/s | 550 M elem/s | 1.100 | yes |", "| `27b-disk` | 0.40 GB/s | 0.30 GB/s | 0.750 | no |",
		"| `only-now` | — | 1.00 GB/s | — | missing from the previous run |", "| `only-before` | 1.00 GB/s | — | — | missing from this run |", "| `27b-verify` | 5.00 GB/s | 5 M elem/s | — | no: unit M elem/s, previously GB/s |"} {
		assert.Contains(t, text, s)
	}
}

func TestReproduced(t *testing.T) {
	t.Parallel()
	prevRows := []result{sampleRow("27b-build", block27B, 500, "M elem/s"), sampleRow("27b-verify", block27B, 5.0, "GB/s"), sampleRow("build", blockRegular, 600, "M elem/s")}
	prev := benchRun{Commit: "0123456789abcdef0123", Runs: 3, Rows: prevRows}
	tests := []struct {
		name  string
		block string
		cur   []result
		want  string // "" no line; else a part of it
	}{
		{"every row within", block27B, []result{sampleRow("27b-build", block27B, 530, "M elem/s"), sampleRow("27b-verify", block27B, 4.9, "GB/s")},
			"Reproduced by a second run within 15 %: every row's throughput is within ±15 % of the run of 2026-12-01 15:02 UTC (commit 0123456789ab); the largest difference is 6.0 % (`27b-build`)."},
		{"one row outside", block27B, []result{sampleRow("27b-build", block27B, 530, "M elem/s"), sampleRow("27b-verify", block27B, 3.0, "GB/s")}, ""},
		{"a row not in the previous run", block27B, []result{sampleRow("27b-build", block27B, 500, "M elem/s"), sampleRow("27b-disk", block27B, 0.4, "GB/s")}, ""},
		{"the block was not measured", blockRegular, []result{sampleRow("27b-build", block27B, 500, "M elem/s")}, ""},
		{"the other block's rows do not count", blockRegular, []result{sampleRow("build", blockRegular, 610, "M elem/s"), sampleRow("27b-verify", block27B, 1, "GB/s")},
			"the largest difference is 1.7 % (`build`)"},
	}
	for _, tt := range tests {
		cs, _ := compareRuns(prev.Rows, tt.cur, 0.15)
		got := reproduced(tt.block, cs, tt.cur, prev, 0.15)
		if tt.want == "" {
			assert.Empty(t, got, tt.name)
			continue
		}
		assert.Contains(t, got, tt.want, tt.name)
	}
}

func TestRenderBlock(t *testing.T) {
	t.Parallel()
	rows := []result{sampleRow("27b-build", block27B, 480, "M elem/s"), sampleRow("27b-verify", block27B, 4.75, "GB/s")}
	rows[1].LoadAfter = "2.00 1.90 1.80"
	got := renderBlock("2 cores, AMD EPYC", rows, "")
	assert.Equal(t, "Machine: 2 cores, AMD EPYC; commit 0123456789ab, with uncommitted changes; load average 1.00 1.10 1.20 before, 2.00 1.90 1.80 after; 2026-12-01 15:02 UTC.\n"+
		"Medians of 3 runs, warm page cache; `cat` reads the same files to /dev/null, interleaved with the command.\n\n"+
		"| what | median wall (runs) | `cat` | × `cat` | throughput | CPU (user+sys) | peak RSS | target |\n|---|---|---|---|---|---|---|---|\n"+
		"| `27b-build` | 2.500 s (2.50, 2.61, 2.40) | 0.250 s | 10.00 × | 480 M elem/s (3.25 ns CPU/elem) | 4.50 s (cat 0.25 s) | 130 MiB | ≤ 512 MiB |\n"+
		"| `27b-verify` | 2.500 s (2.50, 2.61, 2.40) | 0.250 s | 10.00 × | 4.75 GB/s | 4.50 s (cat 0.25 s) | 130 MiB | ≤ 512 MiB |\n", got)
	withLine := renderBlock("m", rows, "Reproduced by a second run within 15 %: x.")
	assert.Contains(t, withLine, "interleaved with the command.\nReproduced by a second run within 15 %: x.\n\n| what")
	assert.Empty(t, renderBlock("m", nil, ""))
	rows[0].Cold, rows[1].Cold = true, true
	assert.Contains(t, renderBlock("m", rows, ""), "Medians of 3 runs, cold page cache (dropped before every run of cat and of the command: the files do not fit in memory); `cat` reads")
}

func TestSelectRowsAndCheckReadme(t *testing.T) {
	t.Parallel()
	all := []result{{Name: "build", Block: blockRegular}, {Name: "diff", Block: blockRegular}, {Name: "27b-build", Block: block27B}, {Name: "27b-verify", Block: block27B}}
	regularOnly := all[:2]
	tests := []struct {
		name      string
		rows      []result
		only      string
		layers    int
		want      []string
		wantErr   string // from selectRows
		readmeErr string // from checkReadme; "" allowed
	}{
		{name: "everything", rows: all, want: []string{"build", "diff", "27b-build", "27b-verify"}},
		{name: "the 27B block by name", rows: all, only: "27b", want: []string{"27b-build", "27b-verify"}},
		{name: "the regular block by name", rows: all, only: "regular", want: []string{"build", "diff"}},
		{name: "rows in list order", rows: all, only: "27b-verify,diff,27b-build,build", want: []string{"build", "diff", "27b-build", "27b-verify"}},
		{name: "a partial block refuses -readme", rows: all, only: "27b-build", want: []string{"27b-build"}, readmeErr: `-only measures 27b-build of block "27b" but not 27b-verify`},
		{name: "a partial regular block refuses -readme", rows: all, only: "diff,27b", want: []string{"diff", "27b-build", "27b-verify"}, readmeErr: `block "regular" but not build`},
		{name: "a reduced 27B layout refuses -readme", rows: all, only: "27b", layers: 2, want: []string{"27b-build", "27b-verify"}, readmeErr: "not of 2 layers"},
		{name: "a reduced 27B layout is fine when the 27B rows are not run", rows: all, only: "regular", layers: 2, want: []string{"build", "diff"}},
		{name: "an unknown name", rows: all, only: "build,nope", wantErr: `no row or block "nope"`},
		{name: "27B rows without -27b-layers", rows: regularOnly, only: "27b", wantErr: "need -27b-layers"},
	}
	for _, tt := range tests {
		got, err := selectRows(tt.rows, tt.only)
		if tt.wantErr != "" {
			require.ErrorIs(t, err, errUsage, tt.name)
			assert.ErrorContains(t, err, tt.wantErr, tt.name)
			continue
		}
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
		err = checkReadme(tt.rows, got, tt.layers)
		if tt.readmeErr == "" {
			assert.NoError(t, err, tt.name)
			continue
		}
		require.ErrorIs(t, err, errUsage, tt.name)
		assert.ErrorContains(t, err, tt.readmeErr, tt.name)
	}
}

// TestMeasureAllRefusesBeforeWork: a usage error of -only, -readme or
// -against comes back before ckpt is built or a fixture written (the
// measurements' files would fail the test if called).
func TestMeasureAllRefusesBeforeWork(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	require.NoError(t, os.WriteFile(readme, []byte(readmeWith("", "")), 0o644))
	ms := func() []measurement {
		files := func() []string { t.Error("a fixture was written"); return nil }
		return []measurement{{name: "build", block: blockRegular, files: files}, {name: "27b-build", block: block27B, files: files}, {name: "27b-verify", block: block27B, files: files}}
	}
	tests := []struct {
		name    string
		cfg     config
		wantErr string
	}{
		{"partial block with -readme", config{only: "27b-build", readme: readme}, "rewrites whole blocks"},
		{"reduced layout with -readme", config{only: "27b", readme: readme, layers27: 2}, "real layout only"},
		{"absent -readme file", config{only: "27b", readme: filepath.Join(dir, "none.md")}, "none.md"},
		{"unreadable -against", config{only: "27b", against: filepath.Join(dir, "none.json")}, "-against"},
		{"unknown row", config{only: "zzz"}, "zzz"},
	}
	for _, tt := range tests {
		tt.cfg.dir, tt.cfg.runs, tt.cfg.tolerance = filepath.Join(dir, "bench"), 1, 0.15
		_, err := measureAll(tt.cfg, filepath.Join(dir, "bench", "ckpt"), ms(), func() {}, func() error { return nil })
		require.ErrorIs(t, err, errUsage, tt.name)
		assert.ErrorContains(t, err, tt.wantErr, tt.name)
		assert.NoDirExists(t, filepath.Join(dir, "bench"), tt.name)
	}
}

// TestBoundLine: the 27B block ends with the durable build against the
// slower of the concurrent disk floor and the CPU bound (CPU time over
// the cores), and with nothing when either row is missing.
func TestBoundLine(t *testing.T) {
	t.Parallel()
	bld := sampleRow("27b-build", block27B, 500, "M elem/s")
	bld.WallS, bld.CPUS, bld.Cores, bld.NsCPUElem, bld.RSSMiB = 40, 60, 2, 1.2, 400
	conc := sampleRow("27b-disk-concurrent", block27B, 1.1, "GB/s")
	conc.WallS = 36
	line := boundLine([]result{bld, conc})
	assert.Equal(t, "Durable build 40.0 s = 1.11 × the slower of the concurrent disk floor (36.0 s) and the CPU bound (its CPU time over 2 cores: 30.0 s), the concurrent disk floor; 1.20 ns CPU/elem, peak RSS 400 MiB.", line)
	bld.CPUS = 80 // CPU-bound: 40 s
	assert.Contains(t, boundLine([]result{bld, conc}), "= 1.00 × the slower", "the CPU bound is the slower")
	assert.Empty(t, boundLine([]result{bld}))
	block := renderBlock("2 cores", []result{bld, conc}, "")
	assert.Contains(t, block, "\n\nDurable build 40.0 s")
}

//go:build unix

// Command bench measures ckpt's heavy commands against cat of the same
// files, in one run, on generated benchmark checkpoints:
//
//	go run ./cmd/internal/bench [-dir DIR] [-runs 3] [-only NAMES] [-27b-layers N]
//		[-readme README.md] [-json FILE] [-against FILE [-tolerance 15]]
//
// It builds ckpt, writes the fixtures into DIR once (package synth: the
// Large FP8 base, its typical and all-changed fine-tunes, and the LargeOdd
// base; ~4.5 GB, a few minutes; with -27b-layers also the real 27B layout
// and its fine-tune), warms the page cache, then times every command and
// `cat FILES >/dev/null` of the files that command reads, interleaved, runs
// times each. It prints a Markdown table per block of rows (the regular
// rows; the 27B rows) of medians: wall seconds, the ratio to cat,
// throughput, CPU seconds (user+sys) and peak RSS of the child process
// (from wait4's rusage), with the machine, the commit the binary was built
// from and the load average before and after the block.
//
// -only takes row names or block names (regular, 27b). -readme rewrites,
// in that file, the generated block of every block this run measured and
// leaves the other block alone; it refuses a run that measures only part
// of a block's rows, or the 27B rows of a reduced layout. -json writes
// this run's rows; -against compares this run's throughput per row with
// such a file, prints the ratios and exits 1 if a row present in both
// differs by more than -tolerance percent (rows missing from either side
// are listed, not failed). A block whose every row was compared and is
// within the tolerance carries the line "Reproduced by a second run
// within N %" in the table and the README; no other run writes it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "ckpt-bench"), "directory for the binary, the fixtures and scratch output (fixtures are kept)")
	runs := flag.Int("runs", 3, "runs per measurement (medians are reported)")
	readme := flag.String("readme", "", "rewrite the generated blocks of this Markdown file that this run measured (whole blocks only)")
	only := flag.String("only", "", "comma-separated row names or block names (regular, 27b) to run (default: all)")
	jsonOut := flag.String("json", "", "write this run's rows as JSON to this file")
	against := flag.String("against", "", "compare this run's throughput per row with the JSON of a previous run (-json); exit 1 if a row is outside -tolerance")
	tolerance := flag.Float64("tolerance", 15, "-against: largest throughput difference, percent of the previous run's")
	fixture := flag.String("write-fixture", "", "internal: write the fixture of this kind into -dir and exit")
	layers27 := flag.Int("27b-layers", -1, "also run the 27B-shaped rows on the real layout with realistic values: 0 for all 64 decoder layers "+
		"(~31 GB of fixture, ~62 GB of disk with the cache), N for the first N (a reduced run); -1: off")
	base27 := flag.String("27b-base", "", "internal: the base of the 27b-ft fixture")
	flag.Parse()
	if *fixture == "27b" || *fixture == "27b-ft" {
		o := synth.ValuesOptions{Layers: *layers27, Seed: 1, FineTune: *fixture == "27b-ft", Base: *base27}
		if err := synth.WriteInventoryValues(*dir, "fp8", o); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *fixture != "" {
		// A child process: the fixture's memory must not count in the
		// peak RSS that later children inherit from this process at exec.
		o, ok := fixtureKinds()[*fixture]
		if !ok {
			fmt.Fprintf(os.Stderr, "bench: unknown fixture %q\n", *fixture)
			os.Exit(2)
		}
		if err := synth.Write(*dir, o); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() > 0 || *runs < 1 || *tolerance <= 0 {
		fmt.Fprintln(os.Stderr, "usage: bench [-dir DIR] [-runs N] [-only NAMES] [-27b-layers N] [-readme FILE] [-json FILE] [-against FILE [-tolerance PCT]]")
		os.Exit(2)
	}
	outside, err := run(config{dir: *dir, runs: *runs, readme: *readme, only: *only, layers27: *layers27, jsonOut: *jsonOut, against: *against,
		tolerance: *tolerance / 100})
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	case outside:
		fmt.Fprintf(os.Stderr, "bench: a row is outside ±%g %% of %s\n", *tolerance, *against)
		os.Exit(1)
	}
}

// config is the run's flags.
type config struct {
	dir, readme, only, jsonOut, against string
	runs, layers27                      int
	tolerance                           float64 // fraction
}

// sample is one timed child process.
type sample struct {
	wall, cpu float64 // seconds
	rssMiB    float64
	stdout    []byte
}

// measurement is a command timed against cat of the files it reads.
type measurement struct {
	name   string          // short id (-only)
	what   string          // table label
	files  func() []string // what cat reads (fixtures written on first use)
	args   []string        // ckpt arguments
	before func() error
	after  func() error // after the row's last run
	// unit: "GB/s" of the cat'ed bytes, or "M elem/s" of source_elements
	// from the JSON output.
	unit   string
	target string
	// ok: exit codes accepted (diff exits 1 on differences).
	ok []int
	// run, when set, is timed instead of ckpt with args; written, when
	// set, is the byte count whose rate the row reports.
	run     func() (sample, error)
	written func() int64
	block   string // the README block of the row: blockRegular ("") or block27B
	// cold: the files are larger than the page cache can hold, so every
	// timed run (cat and command alike) starts from a dropped page cache
	// (dropCaches): warm runs would measure which part of the files the
	// previous reader happened to leave cached.
	cold bool
}

// run measures the rows cfg selects, prints their blocks (and the
// comparison with -against), writes -json and -readme; outside reports a
// row outside the tolerance of -against.
func run(cfg config) (outside bool, err error) {
	dir, layers27 := cfg.dir, cfg.layers27
	bin := filepath.Join(dir, "ckpt")
	base, ft, ftAll, odd := filepath.Join(dir, "base"), filepath.Join(dir, "ft"), filepath.Join(dir, "ft-all"), filepath.Join(dir, "odd")
	fixtures := map[string]string{base: "base", ft: "ft", ftAll: "ft-all", odd: "odd"}
	scratch := filepath.Join(dir, "scratch")
	clearScratch := func() error {
		if err := os.RemoveAll(scratch); err != nil {
			return err
		}
		return os.MkdirAll(scratch, 0o755)
	}
	// shards lists a fixture's files, writing the fixture first if needed.
	var ferr error
	shards := func(ds ...string) []string {
		var all []string
		for _, d := range ds {
			if err := ensureFixture(d, fixtures[d]); err != nil && ferr == nil {
				ferr = err
			}
			m, _ := filepath.Glob(filepath.Join(d, "*.safetensors"))
			all = append(all, m...)
		}
		return all
	}
	common := []string{"--progress", "none", "--format", "json"}
	// extract --dtype bf16 of the base: its output size (sized once by a
	// run into tmpfs, untimed) is the byte count of the extract rows.
	shm := filepath.Join("/dev/shm", fmt.Sprintf("ckpt-bench-%d", os.Getpid()))
	defer os.RemoveAll(shm)
	clearShm := func() error {
		if err := os.RemoveAll(shm); err != nil {
			return err
		}
		return os.MkdirAll(shm, 0o755)
	}
	bf16Args := func(out string) []string {
		return append([]string{"extract", base, "--match", "**", "--dtype", "bf16", "--out", out}, common...)
	}
	var bf16Out int64
	extractBytes := func() int64 {
		if bf16Out == 0 && clearShm() == nil {
			if _, err := timeChild(bin, bf16Args(filepath.Join(shm, "x.safetensors")), nil); err == nil {
				if st, err := os.Stat(filepath.Join(shm, "x.safetensors")); err == nil {
					bf16Out = st.Size()
				}
			}
			_ = os.RemoveAll(shm)
		}
		return bf16Out
	}
	sizeExtract := func() error {
		if extractBytes() == 0 {
			return fmt.Errorf("could not size the bf16 extract of %s", base)
		}
		return clearScratch()
	}
	ms := []measurement{
		{name: "build", what: "`cache build` 1×2, Large FP8 (BFLOAT8_B / BFLOAT4_B), durable (fsync per file)", files: func() []string { return shards(base) },
			unit: "M elem/s", target: "the disk floor (below), ≤ 512 MiB",
			args: append([]string{"cache", "build", base, "--out", filepath.Join(scratch, "cache"), "--mesh", "1x2"}, common...), before: clearScratch},
		{name: "rebuild", what: "`cache build` unchanged rebuild (nothing to do)", files: func() []string { return shards(base) }, unit: "GB/s",
			target: "≤ 10 % of the build",
			args:   append([]string{"cache", "build", base, "--out", filepath.Join(scratch, "cache"), "--mesh", "1x2"}, common...),
			before: func() error { // a complete cache to find unchanged
				if _, err := os.Stat(filepath.Join(scratch, "cache", "manifest.json")); err == nil {
					return nil
				}
				if err := clearScratch(); err != nil {
					return err
				}
				_, err := timeChild(bin, append([]string{"cache", "build", base, "--out", filepath.Join(scratch, "cache"), "--mesh", "1x2"}, common...), nil)
				return err
			}},
		{name: "build-nofsync", what: "`cache build --fsync=false` 1×2, Large FP8 (page-cache speed)", files: func() []string { return shards(base) },
			unit: "M elem/s", target: "≥ 500 M elem/s, ≤ 512 MiB",
			args: append([]string{"cache", "build", base, "--out", filepath.Join(scratch, "cache"), "--mesh", "1x2", "--fsync=false"}, common...), before: clearScratch},
		{name: "disk", what: "disk floor of a durable build: `dd conv=fsync` of the bytes `cache build` writes for Large",
			files: func() []string { return shards(base) }, unit: "GB/s",
			target: "—", written: func() int64 { return cacheBytes(bin, base, dir) },
			before: func() error { // sized once, untimed
				if cacheBytes(bin, base, dir) == 0 {
					return fmt.Errorf("could not size the cache of %s", base)
				}
				return clearScratch()
			},
			run: func() (sample, error) {
				n := cacheBytes(bin, base, dir)
				return timeChild("dd", []string{"if=/dev/zero", "of=" + filepath.Join(scratch, "dd"), "bs=1M", fmt.Sprintf("count=%d", (n+1<<20-1)>>20), "conv=fsync"}, nil)
			}},
		{name: "build-odd", what: "`cache build` 1×2, LargeOdd (partial FP8 blocks, BFLOAT4_B MLP), durable", files: func() []string { return shards(odd) },
			unit: "M elem/s", target: "disk-bound, ≤ 512 MiB",
			args: append([]string{"cache", "build", odd, "--out", filepath.Join(scratch, "cache"), "--mesh", "1x2"}, common...), before: clearScratch},
		{name: "build-odd-nofsync", what: "`cache build --fsync=false` 1×2, LargeOdd (page-cache speed)", files: func() []string { return shards(odd) },
			unit: "M elem/s", target: "≥ 400 M elem/s, ≤ 512 MiB",
			args: append([]string{"cache", "build", odd, "--out", filepath.Join(scratch, "cache"), "--mesh", "1x2", "--fsync=false"}, common...), before: clearScratch},
		{name: "diff", what: "`diff` values, typical fine-tune", files: func() []string { return shards(base, ft) }, unit: "GB/s", target: "≤ 2 × cat", ok: []int{1},
			args: append([]string{"diff", base, ft}, common...)},
		{name: "diff-all", what: "`diff` values, every tensor changed", files: func() []string { return shards(base, ftAll) }, unit: "GB/s", target: "≤ 3 × cat",
			ok:   []int{1},
			args: append([]string{"diff", base, ftAll}, common...)},
		{name: "diff-bytes", what: "`diff --mode bytes`, typical fine-tune", files: func() []string { return shards(base, ft) }, unit: "GB/s",
			target: "≤ 2 × cat", ok: []int{1},
			args: append([]string{"diff", base, ft, "--mode", "bytes"}, common...)},
		{name: "verify", what: "`verify --read-data`", files: func() []string { return shards(base) }, unit: "GB/s", target: "≥ 4 GB/s",
			args: append([]string{"verify", base, "--read-data"}, common...)},
		{name: "extract", what: "`extract ** --dtype keep` (a copy)", files: func() []string { return shards(base) }, unit: "GB/s", target: "≈ copy",
			args:   append([]string{"extract", base, "--match", "**", "--dtype", "keep", "--out", filepath.Join(scratch, "x.safetensors")}, common...),
			before: clearScratch},
		{name: "extract-bf16", what: "`extract ** --dtype bf16` (dequantise), durable; GB/s of the output", files: func() []string { return shards(base) },
			unit: "GB/s", target: "the disk floor (below), ≤ 512 MiB",
			args: bf16Args(filepath.Join(scratch, "x.safetensors")), before: sizeExtract, written: extractBytes},
		{name: "extract-disk", what: "disk floor of the durable extract: `dd conv=fsync` of the bytes `extract ** --dtype bf16` writes",
			files: func() []string { return shards(base) }, unit: "GB/s",
			target: "—", written: extractBytes, before: sizeExtract,
			run: func() (sample, error) {
				return timeChild("dd", []string{"if=/dev/zero", "of=" + filepath.Join(scratch, "dd"), "bs=1M",
					fmt.Sprintf("count=%d", (extractBytes()+1<<20-1)>>20), "conv=fsync"}, nil)
			}},
		{name: "extract-bf16-shm", what: "`extract ** --dtype bf16` (dequantise) into tmpfs (/dev/shm); GB/s of the output",
			files: func() []string { return shards(base) }, unit: "GB/s", target: "≥ 1 GB/s, ≤ 512 MiB",
			written: extractBytes, before: func() error { // sized once, untimed
				if extractBytes() == 0 {
					return fmt.Errorf("could not size the bf16 extract of %s", base)
				}
				return nil
			},
			run: func() (sample, error) { // an empty directory before, nothing left after
				if err := clearShm(); err != nil {
					return sample{}, err
				}
				s, err := timeChild(bin, bf16Args(filepath.Join(shm, "x.safetensors")), nil)
				if rerr := os.RemoveAll(shm); err == nil {
					err = rerr
				}
				return s, err
			}},
	}
	if layers27 >= 0 {
		m27 := measurements27B(bin, dir, scratch, clearScratch, layers27, common)
		for i := range m27 {
			m27[i].block = block27B
		}
		ms = append(ms, m27...)
	}
	for i := range ms {
		if ms[i].block == "" {
			ms[i].block = blockRegular
		}
	}
	return measureAll(cfg, bin, ms, func() { _ = clearScratch() }, func() error { return ferr })
}

// measureAll checks the flags against the rows, builds ckpt, measures the
// selected rows and reports them.
func measureAll(cfg config, bin string, ms []measurement, cleanup func(), fixtureErr func() error) (outside bool, err error) {
	ids := make([]result, len(ms))
	for i, m := range ms {
		ids[i] = result{Name: m.name, Block: m.block}
	}
	selected, err := selectRows(ids, cfg.only)
	if err != nil {
		return false, err
	}
	if cfg.readme != "" {
		if err := checkReadme(ids, selected, cfg.layers27); err != nil {
			return false, err
		}
		if _, err := os.Stat(cfg.readme); err != nil {
			return false, fmt.Errorf("%w: -readme: %v", errUsage, err)
		}
	}
	var prev benchRun
	if cfg.against != "" {
		if prev, err = readRun(cfg.against); err != nil {
			return false, fmt.Errorf("%w: -against: %v", errUsage, err)
		}
	}
	ms = slices.DeleteFunc(ms, func(m measurement) bool { return !slices.Contains(selected, m.name) })

	if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return false, err
	}
	fmt.Fprintln(os.Stderr, "building ckpt...")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/ckpt").CombinedOutput(); err != nil {
		return false, fmt.Errorf("go build ./cmd/ckpt (run from the repository root): %v\n%s", err, out)
	}
	this := benchRun{Machine: machine(), Runs: cfg.runs}
	this.Commit, this.Dirty = gitCommit()
	for _, m := range ms { // write the fixtures before timing anything
		m.files()
	}
	if err := fixtureErr(); err != nil {
		return false, err
	}
	for _, m := range ms {
		before, date := loadAvg(), time.Now().UTC().Format(time.RFC3339)
		r, err := measure(bin, m, cfg.runs)
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.name, err)
		}
		r.Name, r.Block, r.What, r.Target, r.Runs = m.name, m.block, m.what, m.target, cfg.runs
		r.LoadBefore, r.LoadAfter, r.Date = before, loadAvg(), date
		r.Commit, r.Dirty, r.Cores = this.Commit, this.Dirty, runtime.NumCPU()
		this.Rows = append(this.Rows, r)
		fmt.Fprintln(os.Stderr, renderRow(r))
		if cfg.jsonOut != "" { // after every row: a failure later keeps the rows measured
			if err := writeRun(cfg.jsonOut, this); err != nil {
				return false, err
			}
		}
	}
	cleanup()

	var cs []comparison
	if cfg.against != "" {
		cs, outside = compareRuns(prev.Rows, this.Rows, cfg.tolerance)
	}
	texts := map[string]string{}
	for _, blk := range readmeBlocks {
		rows := rowsOf(this.Rows, blk.id)
		if len(rows) == 0 {
			continue
		}
		repro := ""
		if cfg.against != "" {
			repro = reproduced(blk.id, cs, this.Rows, prev, cfg.tolerance)
		}
		texts[blk.id] = renderBlock(this.Machine, rows, repro)
		fmt.Print(texts[blk.id] + "\n")
	}
	if cfg.against != "" {
		fmt.Print(renderComparison(cfg.against, prev, cs, cfg.tolerance))
	}
	if cfg.readme != "" {
		if err := rewriteReadme(cfg.readme, texts); err != nil {
			return outside, err
		}
	}
	return outside, nil
}

// gitCommit is the commit of the working tree the binary is built from
// and whether the tree has changes (git status --porcelain, untracked
// files included: they may be compiled).
func gitCommit() (string, bool) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown", false
	}
	st, err := exec.Command("git", "status", "--porcelain").Output()
	return strings.TrimSpace(string(out)), err != nil || len(bytes.TrimSpace(st)) > 0
}

// cacheBytes returns the size of the files `cache build` writes for src
// at 1×2 (building it once into DIR/sized, kept).
func cacheBytes(bin, src, benchDir string) int64 {
	dir := filepath.Join(benchDir, "sized")
	if _, err := os.Stat(dir); err != nil {
		if _, err := timeChild(bin, []string{"cache", "build", src, "--out", dir, "--mesh", "1x2", "--progress", "none", "--fsync=false"}, nil); err != nil {
			return 0
		}
	}
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// fixtureKinds are the generated checkpoints by name.
func fixtureKinds() map[string]synth.Options {
	large := synth.Large()
	ft, all := large, large
	ft.FineTune = true
	all.FineTune, all.FineTuneAll = true, true
	return map[string]synth.Options{"base": large, "ft": ft, "ft-all": all, "odd": synth.LargeOdd()}
}

// ensureFixture writes a checkpoint once (a complete one has its index), in
// a child process: Linux reports a child's peak RSS as at least its
// parent's peak at the time of the exec, so this process stays small.
func ensureFixture(dir, kind string) error {
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors.index.json")); err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "writing fixture %s (once)...\n", dir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-write-fixture", kind, "-dir", tmp)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("writing fixture %s: %w", dir, err)
	}
	return os.Rename(tmp, dir)
}

// measure times m and cat of its files, interleaved, and returns the
// row's figures (the caller fills in its name, label, load and date).
func measure(bin string, m measurement, runs int) (result, error) {
	files := m.files()
	var bytes int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return result{}, err
		}
		bytes += st.Size()
	}
	catArgs := files
	if !m.cold {
		if _, err := timeChild("cat", catArgs, nil); err != nil { // warm the page cache
			return result{}, err
		}
	}
	var cats, cmds []sample
	for range runs {
		if m.cold {
			if err := dropCaches(); err != nil {
				return result{}, err
			}
		}
		c, err := timeChild("cat", catArgs, nil)
		if err != nil {
			return result{}, err
		}
		cats = append(cats, c)
		if m.before != nil {
			if err := m.before(); err != nil {
				return result{}, err
			}
		}
		if m.cold {
			if err := dropCaches(); err != nil {
				return result{}, err
			}
		}
		var s sample
		if m.run != nil {
			s, err = m.run()
		} else {
			s, err = timeChild(bin, m.args, m.ok)
		}
		if err != nil {
			return result{}, err
		}
		cmds = append(cmds, s)
	}
	if m.after != nil {
		if err := m.after(); err != nil {
			return result{}, err
		}
	}
	cat, cmd := median(cats, func(s sample) float64 { return s.wall }), median(cmds, func(s sample) float64 { return s.wall })
	cpu := median(cmds, func(s sample) float64 { return s.cpu })
	catCPU := median(cats, func(s sample) float64 { return s.cpu })
	rss := slices.MaxFunc(cmds, func(a, b sample) int { return cmpF(a.rssMiB, b.rssMiB) }).rssMiB
	r := result{WallS: cmd, CatS: cat, Ratio: cmd / cat, CPUS: cpu, CatCPUS: catCPU, RSSMiB: rss, Cold: m.cold}
	for _, s := range cmds {
		r.WallsS = append(r.WallsS, s.wall)
	}
	switch m.unit {
	case "M elem/s":
		var out struct {
			SourceElements int64 `json:"source_elements"`
		}
		if err := json.Unmarshal(cmds[0].stdout, &out); err != nil || out.SourceElements == 0 {
			return result{}, fmt.Errorf("no source_elements in the output of %s: %v", strings.Join(m.args, " "), err)
		}
		r.Unit, r.Throughput = m.unit, float64(out.SourceElements)/cmd/1e6
		r.NsCPUElem = cpu / float64(out.SourceElements) * 1e9
	default:
		if m.written != nil {
			bytes = m.written()
		}
		r.Unit, r.Throughput = "GB/s", float64(bytes)/cmd/1e9
	}
	return r, nil
}

// dropCaches writes dirty pages out and empties the page cache (root
// only: /proc/sys/vm/drop_caches), so that the next run reads from disk.
func dropCaches() error {
	syscall.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1\n"), 0); err != nil {
		return fmt.Errorf("dropping the page cache for a cold run (needs root): %w", err)
	}
	return nil
}

// timeChild runs name with args (stdout captured, stderr discarded) and
// returns its wall time, CPU time and peak RSS from wait4's rusage. An exit
// code other than 0 and those in ok is an error.
func timeChild(name string, args []string, ok []int) (sample, error) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	if name == "cat" {
		// The child writes to /dev/null itself: an io.Writer here would
		// put a pipe and a copy in this process between cat and the
		// discard, which made cat 4-6x slower than `cat FILES >/dev/null`.
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return sample{}, err
		}
		defer null.Close()
		cmd.Stdout = null
	} else {
		cmd.Stdout = &out
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		ee, isExit := err.(*exec.ExitError)
		if !isExit || !slices.Contains(ok, ee.ExitCode()) {
			return sample{}, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errb.String())
		}
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	s := sample{wall: wall, stdout: out.Bytes()}
	if ru != nil {
		s.cpu = tv(ru.Utime) + tv(ru.Stime)
		s.rssMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return s, nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func median(s []sample, f func(sample) float64) float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// machine names the machine and the Go release in the header of a block.
func machine() string {
	return fmt.Sprintf("%d cores, %s, %s/%s, %s", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// measurements27B are the 27B-shaped rows: the real 1606-tensor FP8 layout
// (synth.WriteInventoryValues, realistic seeded values; layers > 0
// keeps the first layers decoder layers only) and its light fine-tune,
// written once into DIR/27b[-L<layers>] and reused: cache build without
// and with fsync, the disk floor of the bytes it writes (dd conv=fsync
// alone, and at the same time as cat of the source: the floor of a build
// that overlaps its reads and writes), diff, verify --read-data. The
// block ends with the durable build against the slower of the concurrent
// floor and its CPU bound (boundLine).
func measurements27B(bin, dir, scratch string, clearScratch func() error, layers int, common []string) []measurement {
	name := filepath.Join(dir, "27b")
	label := "27B FP8 (real layout, 64 layers)"
	if layers > 0 {
		name = fmt.Sprintf("%s-L%d", name, layers)
		label = fmt.Sprintf("27B FP8 layout cut to %d decoder layers", layers)
	}
	base, ft := name, name+"-ft"
	var ferr error
	write := func(d, kind string, extra ...string) {
		if _, err := os.Stat(filepath.Join(d, "model.safetensors.index.json")); err == nil || ferr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "writing fixture %s (once)...\n", d)
		tmp := d + ".tmp"
		os.RemoveAll(d)
		os.RemoveAll(tmp)
		self, err := os.Executable()
		if err != nil {
			ferr = err
			return
		}
		args := append([]string{"-write-fixture", kind, "-dir", tmp, "-27b-layers", fmt.Sprint(layers)}, extra...)
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			ferr = fmt.Errorf("writing fixture %s: %w", d, err)
			return
		}
		ferr = os.Rename(tmp, d)
	}
	files := func(ds ...string) func() []string {
		return func() []string {
			write(base, "27b")
			if slices.Contains(ds, ft) {
				write(ft, "27b-ft", "-27b-base", base)
			}
			var all []string
			for _, d := range ds {
				m, _ := filepath.Glob(filepath.Join(d, "*.safetensors"))
				all = append(all, m...)
			}
			if ferr != nil {
				fmt.Fprintln(os.Stderr, "bench:", ferr)
			}
			return all
		}
	}
	cache := filepath.Join(scratch, "cache")
	build := append([]string{"cache", "build", base, "--out", cache, "--mesh", "1x2"}, common...)
	var built int64             // bytes of the durable build's cache, for the disk floors
	sizeBuilt := func() error { // once, untimed (a build kept by an earlier row serves)
		if built == 0 {
			if _, err := os.Stat(filepath.Join(cache, "manifest.json")); err != nil {
				if err := clearScratch(); err != nil {
					return err
				}
				if _, err := timeChild(bin, append(slices.Clone(build), "--fsync=false"), nil); err != nil {
					return err
				}
			}
			built = dirBytes(cache)
		}
		return clearScratch()
	}
	// diff and verify come first: then the fine-tune (its own shards, ~12
	// GB) can be removed when the disk cannot also hold the cache (~31
	// GB); the next run writes it again.
	ms := []measurement{
		{name: "27b-diff", what: "`diff` values, " + label + ", light fine-tune", files: files(base, ft), unit: "GB/s", target: "≤ 2 × cat", ok: []int{1},
			args: append([]string{"diff", base, ft}, common...), after: func() error { return freeFor(ft, dirBytes(base)) }},
		{name: "27b-verify", what: "`verify --read-data`, " + label, files: files(base), unit: "GB/s", target: "≈ cat (disk-bound)",
			args: append([]string{"verify", base, "--read-data"}, common...)},
		{name: "27b-build-nofsync", what: "`cache build --fsync=false` 1×2, " + label, files: files(base), unit: "M elem/s", target: "≤ 512 MiB",
			args: append(slices.Clone(build), "--fsync=false"), before: clearScratch},
		{name: "27b-build", what: "`cache build` 1×2, " + label + ", durable", files: files(base), unit: "M elem/s", target: "the disk floor (below), ≤ 512 MiB",
			args: build, before: clearScratch},
		{name: "27b-disk", what: "disk floor: `dd conv=fsync` of the bytes the 27B-shaped `cache build` writes", files: files(base), unit: "GB/s", target: "—",
			written: func() int64 { return built }, before: sizeBuilt,
			run: func() (sample, error) {
				return timeChild("dd", []string{"if=/dev/zero", "of=" + filepath.Join(scratch, "dd"), "bs=1M",
					fmt.Sprintf("count=%d", (built+1<<20-1)>>20), "conv=fsync"}, nil)
			}},
		// The floor of a build that overlaps its reads and writes: the
		// disk reading the source and writing the output at once.
		{name: "27b-disk-concurrent", what: "concurrent disk floor: `cat` of the source and `dd conv=fsync` of the bytes the 27B-shaped `cache build` writes, " +
			"at the same time; GB/s of the bytes written", files: files(base), unit: "GB/s", target: "—",
			written: func() int64 { return built }, before: sizeBuilt,
			run: func() (sample, error) {
				return timeConcurrent(
					[]string{"cat"}, files(base)(),
					[]string{"dd"}, []string{"if=/dev/zero", "of=" + filepath.Join(scratch, "dd"), "bs=1M", fmt.Sprintf("count=%d", (built+1<<20-1)>>20), "conv=fsync"})
			}},
	}
	for i := range ms {
		ms[i].cold = true // ~31 GB: more than this machine's memory
	}
	return ms
}

// timeConcurrent runs two children at the same time (a[0] with aArgs,
// b[0] with bArgs): the wall time until both ended, their CPU times
// added, the larger peak RSS.
func timeConcurrent(a, aArgs, b, bArgs []string) (sample, error) {
	type res struct {
		s   sample
		err error
	}
	ch := make(chan res, 1)
	start := time.Now()
	go func() {
		s, err := timeChild(a[0], aArgs, nil)
		ch <- res{s, err}
	}()
	sb, errB := timeChild(b[0], bArgs, nil)
	ra := <-ch
	wall := time.Since(start).Seconds()
	if ra.err != nil {
		return sample{}, ra.err
	}
	if errB != nil {
		return sample{}, errB
	}
	return sample{wall: wall, cpu: ra.s.cpu + sb.cpu, rssMiB: max(ra.s.rssMiB, sb.rssMiB)}, nil
}

// freeFor removes the fixture dir when the file system cannot otherwise
// hold need more bytes (with 10 % to spare).
func freeFor(dir string, need int64) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(dir), &st); err != nil {
		return err
	}
	if int64(st.Bavail)*int64(st.Bsize) >= need+need/10 {
		return nil
	}
	fmt.Fprintf(os.Stderr, "removing fixture %s to make room (it is written again by the next run)\n", dir)
	return os.RemoveAll(dir)
}

// dirBytes is the total size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

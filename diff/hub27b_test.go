package diff_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/require"
)

// hub27BLatency and hub27BBandwidth shape the loopback hub of the 27B
// benchmark: a hub 100 ms away (each request answered after 100 ms), each
// response at most 100 MB/s.
const (
	hub27BLatency   = 100 * time.Millisecond
	hub27BBandwidth = 100e6
)

// hub27BRun is one sampled diff of the 27B layout pair over the hub.
type hub27BRun struct {
	wall               time.Duration
	pairBytes          int64 // both checkpoints, every file
	served, requests   int64 // by the hub, opening included
	resolves, cdn      int64
	readBase, readFT   int64 // tensor data read, per side
	readsBase, readsFT int64
}

// runHub27B writes the full 27B FP8 layout twice (sparse files: real
// headers, data holes) under dir, serves the pair from a loopback hub that
// redirects to signed CDN URLs with hub27BLatency per request and
// hub27BBandwidth per response, and runs a sampled diff with opt over
// hf://, opening included.
func runHub27B(tb testing.TB, dir string, opt diff.CompareOptions) hub27BRun {
	base, ft := filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	for _, d := range []string{base, ft} {
		if _, err := os.Stat(filepath.Join(d, ckpt.IndexFile)); err == nil {
			continue
		}
		err := synth.WriteInventory(d, "fp8")
		if errors.Is(err, os.ErrNotExist) {
			tb.Skip("no 27B inventory")
		}
		require.NoError(tb, err)
	}
	var run hub27BRun
	for _, d := range []string{base, ft} {
		ents, err := os.ReadDir(d)
		require.NoError(tb, err)
		for _, e := range ents {
			st, err := e.Info()
			require.NoError(tb, err)
			run.pairBytes += st.Size()
		}
	}
	hub := sourcetest.NewHub(base, "org/base")
	defer hub.Close()
	hub.AddRepo("org/ft", ft)
	hub.Redirect, hub.Latency, hub.Bandwidth = true, hub27BLatency, hub27BBandwidth
	env := map[string]string{"HF_ENDPOINT": hub.URL}
	openers := source.Openers(source.Options{Getenv: func(k string) string { return env[k] }})
	ctx := context.Background()
	start := time.Now()
	hb, err := ckpt.Open(ctx, "hf://org/base", ckpt.Options{Workers: 16}, openers...)
	require.NoError(tb, err)
	defer hb.Close()
	hf, err := ckpt.Open(ctx, "hf://org/ft", ckpt.Options{Workers: 16}, openers...)
	require.NoError(tb, err)
	defer hf.Close()
	res, err := diff.Compare(ctx, hb, hf, opt)
	require.NoError(tb, err)
	run.wall = time.Since(start)
	hub.Quiesce()
	run.served, run.requests = hub.BytesServed.Load(), hub.Requests.Load()
	run.resolves, run.cdn = hub.Resolves.Load(), hub.CDN.Load()
	run.readBase, run.readFT = res.Sample.Base.BytesRead, res.Sample.FT.BytesRead
	run.readsBase, run.readsFT = res.Sample.Base.Reads, res.Sample.FT.Reads
	return run
}

func (r hub27BRun) log(tb testing.TB, what string) {
	tb.Logf("27B pair over a hub %v away, %.0f MB/s per response, %s: %.1f s; served %.1f MB of %.1f GB (%.3f %%) in %d requests (%d resolve, %d CDN); tensor data base %.1f MB in %d reads, ft %.1f MB in %d reads",
		hub27BLatency, hub27BBandwidth/1e6, what, r.wall.Seconds(), float64(r.served)/1e6, float64(r.pairBytes)/1e9,
		100*float64(r.served)/float64(r.pairBytes), r.requests, r.resolves, r.cdn,
		float64(r.readBase)/1e6, r.readsBase, float64(r.readFT)/1e6, r.readsFT)
}

func (r hub27BRun) report(b *testing.B) {
	b.ReportMetric(r.wall.Seconds(), "wall-s")
	b.ReportMetric(float64(r.served)/1e6, "MB-served")
	b.ReportMetric(100*float64(r.served)/float64(r.pairBytes), "pct-of-pair")
	b.ReportMetric(float64(r.requests), "requests")
}

// BenchmarkHub27B: the sampled diff of the 27B layout pair over a loopback
// hub 100 ms away, at --sample-bytes 64KiB and --sample-budget 200MB (run
// with go test ./diff -run '^$' -bench Hub27B -benchtime 1x).
func BenchmarkHub27B(b *testing.B) {
	dir := b.TempDir()
	for _, c := range []struct {
		name string
		opt  diff.CompareOptions
	}{
		{"sample-bytes-64KiB", diff.CompareOptions{SampleBytes: 64 << 10, SampleSeed: 1, ByLayer: true}},
		{"sample-budget-200MB", diff.CompareOptions{SampleBudget: 200e6, SampleSeed: 1, ByLayer: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var r hub27BRun
			for b.Loop() {
				r = runHub27B(b, dir, c.opt)
			}
			r.log(b, c.name)
			r.report(b)
		})
	}
}

// TestHub27B is the acceptance check of sampled diffs at full scale (set
// CKPT_HUB27B=1; about a minute): over a hub 100 ms away, the 27B layout
// pair at --sample-bytes 64KiB finishes in under 30 s and the hub serves
// at most 0.2 % of the pair's bytes.
func TestHub27B(t *testing.T) {
	if os.Getenv("CKPT_HUB27B") == "" {
		t.Skip("set CKPT_HUB27B=1 (about a minute; or run BenchmarkHub27B)")
	}
	r := runHub27B(t, t.TempDir(), diff.CompareOptions{SampleBytes: 64 << 10, SampleSeed: 1, ByLayer: true})
	r.log(t, "--sample-bytes 64KiB")
	require.Less(t, r.wall, 30*time.Second)
	require.LessOrEqual(t, float64(r.served), 0.002*float64(r.pairBytes))
}

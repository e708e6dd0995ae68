package build_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// BenchmarkBuild builds the cache of a ~50 MB FP8 fixture (Large's layout
// at hidden 512); b.SetBytes counts source elements, so MB/s reads as
// M source elements/s.
func BenchmarkBuild(b *testing.B) {
	dir := benchFixture(b)
	benchBuild(b, dir)
}

// BenchmarkBuildDir builds the cache of the checkpoint in $CKPT_BENCH_SRC
// (e.g. a fixture of go run ./cmd/internal/bench); skipped when unset.
// CKPT_BENCH_NOSYNC=1 builds with NoSync (page-cache speed), for profiles
// of the conversion alone.
func BenchmarkBuildDir(b *testing.B) {
	dir := os.Getenv("CKPT_BENCH_SRC")
	if dir == "" {
		b.Skip("CKPT_BENCH_SRC is not set")
	}
	benchBuild(b, dir)
}

// BenchmarkBuildZero builds BenchmarkBuild's fixture with all of its tensor
// data zero (zero codes, zero scales: the sparse or pruned parts of real
// checkpoints), which must build at least as fast as ordinary data.
func BenchmarkBuildZero(b *testing.B) {
	dir := benchFixture(b)
	if err := zeroData(dir); err != nil {
		b.Fatal(err)
	}
	benchBuild(b, dir)
}

// zeroData zeroes the tensor data of every safetensors file in dir, keeping
// the headers.
func zeroData(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return err
	}
	for _, name := range files {
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		var n [8]byte
		if _, err := f.ReadAt(n[:], 0); err != nil {
			f.Close()
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		start := 8 + int64(binary.LittleEndian.Uint64(n[:]))
		err = f.Truncate(start)
		if err == nil {
			err = f.Truncate(st.Size())
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// cpuTimer reports the process CPU time (user+sys, all threads) of a
// benchmark's loop: on a shared machine its ratios are steadier than wall
// time. The loop's untimed parts (removing outputs) are included.
type cpuTimer struct {
	b     *testing.B
	start time.Duration
}

func startCPU(b *testing.B) cpuTimer {
	b.ResetTimer()
	return cpuTimer{b, processCPU()}
}

// report adds cpu-ms/op and M source elements per CPU second.
func (c cpuTimer) report(elems int64) {
	d := processCPU() - c.start
	c.b.ReportMetric(float64(d.Milliseconds())/float64(c.b.N), "cpu-ms/op")
	c.b.ReportMetric(float64(elems)*float64(c.b.N)/d.Seconds()/1e6, "Melem/cpu-s")
}

// benchFixture writes BenchmarkBuild's ~50 MB FP8 fixture (Large's layout
// at hidden 512) and returns its directory.
func benchFixture(b *testing.B) string {
	b.Helper()
	o := synth.Large()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 512, 2048, 8, 8, 2, 64
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 4, 8, 64, 64, 8192
	dir := filepath.Join(b.TempDir(), "src")
	if err := synth.Write(dir, o); err != nil {
		b.Fatal(err)
	}
	return dir
}

// benchBuild builds the cache of the checkpoint in dir b.N times
// (CKPT_BENCH_NOSYNC=1: with NoSync); b.SetBytes counts source elements,
// and the CPU rate is reported beside the wall rate.
func benchBuild(b *testing.B, dir string) {
	b.Helper()
	c, plan := openPlan(b, dir)
	var elems int64
	for _, tt := range c.Tensors {
		elems += int64(tt.Numel())
	}
	b.SetBytes(elems)
	var direct, paged int64 // bytes of staged files (durable builds)
	o := build.StageStats(build.Hook(build.WriteOptions{NoSync: os.Getenv("CKPT_BENCH_NOSYNC") != ""}), func(d, p int64) { direct, paged = direct+d, paged+p })
	cpu := startCPU(b)
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "cache")
		if _, err := build.WriteHooked(context.Background(), c, plan, out, o); err != nil {
			b.Fatal(err)
		}
		// Dirty pages of earlier outputs would throttle the next build.
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
	cpu.report(elems)
	b.ReportMetric(float64(direct)/1e6/float64(b.N), "direct-MB/op")
	b.ReportMetric(float64(paged)/1e6/float64(b.N), "paged-MB/op")
}

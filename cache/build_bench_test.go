package cache_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/internal/ckpttest"
)

// BenchmarkBuild builds the cache of a ~50 MB FP8 fixture (Large's layout
// at hidden 512); b.SetBytes counts source elements, so MB/s reads as
// M source elements/s.
func BenchmarkBuild(b *testing.B) {
	o := ckpttest.Large()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 512, 2048, 8, 8, 2, 64
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 4, 8, 64, 64, 8192
	dir := filepath.Join(b.TempDir(), "src")
	if err := ckpttest.Write(dir, o); err != nil {
		b.Fatal(err)
	}
	c, plan := openPlan(b, dir)
	var elems int64
	for _, tt := range c.Tensors {
		elems += int64(tt.Numel())
	}
	b.SetBytes(elems)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "cache")
		if _, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{NoSync: os.Getenv("CKPT_BENCH_NOSYNC") != ""}); err != nil {
			b.Fatal(err)
		}
		// Dirty pages of earlier outputs would throttle the next build.
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
}

// BenchmarkBuildDir builds the cache of the checkpoint in $CKPT_BENCH_SRC
// (e.g. a fixture of go run ./internal/cmd/bench); skipped when unset.
// CKPT_BENCH_NOSYNC=1 builds with NoSync (page-cache speed), for profiles
// of the conversion alone.
func BenchmarkBuildDir(b *testing.B) {
	dir := os.Getenv("CKPT_BENCH_SRC")
	if dir == "" {
		b.Skip("CKPT_BENCH_SRC is not set")
	}
	c, plan := openPlan(b, dir)
	var elems int64
	for _, tt := range c.Tensors {
		elems += int64(tt.Numel())
	}
	b.SetBytes(elems)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "cache")
		if _, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{NoSync: os.Getenv("CKPT_BENCH_NOSYNC") != ""}); err != nil {
			b.Fatal(err)
		}
		// Dirty pages of earlier outputs would throttle the next build.
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
}

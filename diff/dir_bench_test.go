package diff_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/require"
)

// BenchmarkCompareDirs compares the checkpoints in $CKPT_BENCH_BASE and
// $CKPT_BENCH_FT (e.g. the fixtures of go run ./cmd/internal/bench) in
// values mode; skipped when unset. $CKPT_BENCH_CHUNK sets ChunkBytes. Use
// it with -cpuprofile.
func BenchmarkCompareDirs(b *testing.B) {
	bd, fd := os.Getenv("CKPT_BENCH_BASE"), os.Getenv("CKPT_BENCH_FT")
	if bd == "" || fd == "" {
		b.Skip("CKPT_BENCH_BASE / CKPT_BENCH_FT are not set")
	}
	bc, err := ckpt.Open(context.Background(), bd, ckpt.Options{})
	require.NoError(b, err)
	fc, err := ckpt.Open(context.Background(), fd, ckpt.Options{})
	require.NoError(b, err)
	var chunk int64
	if v := os.Getenv("CKPT_BENCH_CHUNK"); v != "" {
		chunk, err = strconv.ParseInt(v, 10, 64)
		require.NoError(b, err)
	}
	for b.Loop() {
		_, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: diff.ModeValues, ChunkBytes: chunk})
		require.NoError(b, err)
	}
}

package verify_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/require"
)

// BenchmarkReadDataDir runs verify --read-data on the checkpoint in
// $CKPT_BENCH_SRC (e.g. a fixture of go run ./cmd/internal/bench); skipped
// when unset. Use it with -cpuprofile.
func BenchmarkReadDataDir(b *testing.B) {
	dir := os.Getenv("CKPT_BENCH_SRC")
	if dir == "" {
		b.Skip("CKPT_BENCH_SRC is not set")
	}
	for b.Loop() {
		c, err := ckpt.Open(context.Background(), dir, ckpt.Options{Lenient: true})
		require.NoError(b, err)
		_, err = verify.Check(context.Background(), c, verify.CheckOptions{ReadData: true, ChunkSize: chunkFromEnv()})
		require.NoError(b, err)
		c.Close()
	}
}

func chunkFromEnv() int {
	n, _ := strconv.Atoi(os.Getenv("CKPT_BENCH_CHUNK"))
	return n
}

package extract

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// BenchmarkExtract measures extraction of one 4096×4096 block-FP8 weight
// (16 MiB of codes, [128, 128] blocks, BF16 scales): dequantised to bf16 or
// f32, or copied under keep; to io.Discard (CPU and reads) and to a file
// (with the fsync and rename). Bytes are source bytes.
var benchChunk int64 = defaultChunkBytes

func BenchmarkExtract(b *testing.B) {
	dir := b.TempDir()
	src := writeFP8Dir(b, filepath.Join(dir, "src"), 4096, 4096, 128, 128, numfmt.BF16)
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, mode := range []string{BF16, F32, Keep} {
		p, err := NewPlan(c, PlanOptions{Match: []string{"w.weight"}, DType: mode, WithScales: mode == Keep, ChunkBytes: benchChunk})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(mode+"/discard", func(b *testing.B) {
			b.SetBytes(4096 * 4096)
			for b.Loop() {
				if err := p.WriteShard(context.Background(), 0, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/file", func(b *testing.B) {
			b.SetBytes(4096 * 4096)
			out := filepath.Join(dir, "out.safetensors")
			for b.Loop() {
				if _, err := p.Write(context.Background(), out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

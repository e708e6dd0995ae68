package extract

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// BenchmarkConvert measures the conversion of one 2048×2048 F32 tensor
// (16 MiB) to bf16 and f16 into io.Discard: the path whose output is
// scanned for values that overflow (MayOverflow). Bytes are source bytes.
func BenchmarkConvert(b *testing.B) {
	const n = 2048 * 2048
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i%1000)*0.37-150))
	}
	src := filepath.Join(b.TempDir(), "f32.safetensors")
	if err := ckpt.WriteFile(src, []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "w", DType: numfmt.F32, Shape: []int64{2048, 2048}}, Data: data}}, nil); err != nil {
		b.Fatal(err)
	}
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, mode := range []string{BF16, F16} {
		p, err := NewPlan(c, PlanOptions{Match: []string{"w"}, DType: mode})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := p.WriteShard(context.Background(), 0, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

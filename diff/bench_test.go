package diff_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/require"
)

// benchPair writes a [rows, cols] FP8 base and a fine-tune holding either
// the bf16 master (requant) or a perturbed FP8 weight (changed).
func benchPair(b *testing.B, rows, cols int64, ftKind string) (*ckpt.Checkpoint, *ckpt.Checkpoint, int64) {
	dir := b.TempDir()
	w := randValues(1, int(rows*cols))
	_, _, base := fp8(b, "w.weight", w, rows, cols, 128, 128, numfmt.BF16)
	var ft []ckpt.MemTensor
	switch ftKind {
	case "requant":
		ft = []ckpt.MemTensor{bf16T(b, "w.weight", []int64{rows, cols}, w)}
	case "changed":
		w2 := append([]float32(nil), w...)
		for i := 0; i < len(w2); i += 3 {
			w2[i] = numfmt.RoundTo(numfmt.BF16, w2[i]*1.05)
		}
		_, _, ft = fp8(b, "w.weight", w2, rows, cols, 128, 128, numfmt.BF16)
	case "same":
		ft = base
	}
	bc := writeCkpt(b, filepath.Join(dir, "base"), base, 128, nil)
	fc := writeCkpt(b, filepath.Join(dir, "ft"), ft, 128, nil)
	var n int64
	for _, c := range []*ckpt.Checkpoint{bc, fc} {
		for _, t := range c.Tensors {
			n += int64(t.NBytes())
		}
	}
	return bc, fc, n
}

func benchCompare(b *testing.B, kind string, mode diff.Mode) {
	bc, fc, n := benchPair(b, 2048, 4096, kind)
	b.SetBytes(n)
	b.ResetTimer()
	for b.Loop() {
		_, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: mode})
		require.NoError(b, err)
	}
}

func BenchmarkCompareSameValues(b *testing.B)    { benchCompare(b, "same", diff.ModeValues) }
func BenchmarkCompareSameBytes(b *testing.B)     { benchCompare(b, "same", diff.ModeBytes) }
func BenchmarkCompareChangedValues(b *testing.B) { benchCompare(b, "changed", diff.ModeValues) }
func BenchmarkCompareRequantValues(b *testing.B) { benchCompare(b, "requant", diff.ModeValues) }

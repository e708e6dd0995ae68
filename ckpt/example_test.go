package ckpt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// Open a generated sharded FP8 checkpoint (headers only) and summarise it.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "ckpt-example-")
	defer os.RemoveAll(dir)
	if err := synth.Write(filepath.Join(dir, "base"), synth.Small()); err != nil {
		fmt.Println(err)
		return
	}
	c, err := ckpt.Open(context.Background(), filepath.Join(dir, "base"), ckpt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	quantized := c.Config.Quantization() != nil
	s := ckpt.SummarizeWith(c.Tensors, func(t *ckpt.Tensor) (int64, bool) {
		return int64(t.Numel()), ckpt.CountsAsParameter(&t.TensorInfo, quantized)
	})
	fmt.Printf("%d shards, %d tensors, %d parameters\n", len(c.Files), s.Tensors, s.Parameters)
	for _, d := range s.ByDType {
		fmt.Printf("%-8s %3d tensors %8d parameters %8d bytes\n", d.DType, d.Tensors, d.Parameters, d.Bytes)
	}
	for _, g := range s.ByGroup {
		fmt.Printf("%-35s %3d tensors\n", g.Pattern, g.Tensors)
	}
	// Output:
	// 4 shards, 124 tensors, 1159352 parameters
	// BF16      92 tensors   217272 parameters   436384 bytes
	// F8_E4M3   32 tensors   942080 parameters   942080 bytes
	// model.language_model.layers.{0..3}   78 tensors
	// mtp.*                                22 tensors
	// model.visual.*                       21 tensors
	// other                                 3 tensors
}

// Decode F8_E4M3 (E4M3FN) codes: bias 7, subnormals below 2^-6, no
// infinities, 0x7f is NaN, 448 the largest value.
func ExampleDecodeE4M3() {
	for _, c := range []byte{0x00, 0x01, 0x08, 0x38, 0x3c, 0x7e, 0x7f, 0x80, 0xfe} {
		fmt.Printf("0x%02x = %v\n", c, numfmt.DecodeE4M3(c))
	}
	fmt.Printf("encode 1.0625 = 0x%02x (tie to even), encode 1000 = 0x%02x (saturates)\n", numfmt.EncodeE4M3(1.0625), numfmt.EncodeE4M3(1000))
	// Output:
	// 0x00 = 0
	// 0x01 = 0.001953125
	// 0x08 = 0.015625
	// 0x38 = 1
	// 0x3c = 1.5
	// 0x7e = 448
	// 0x7f = NaN
	// 0x80 = -0
	// 0xfe = -448
	// encode 1.0625 = 0x38 (tie to even), encode 1000 = 0x7e (saturates)
}

// Stream a block-FP8 weight as dequantised float32 rows, one scale block
// of rows at a time, with buffers reused across chunks.
func ExampleCheckpoint_Values() {
	dir, _ := os.MkdirTemp("", "ckpt-example-")
	defer os.RemoveAll(dir)
	if err := synth.Write(dir, synth.Small()); err != nil {
		fmt.Println(err)
		return
	}
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	w, _ := c.Lookup("mtp.layers.0.mlp.down_proj.weight")
	v, err := c.Values(w)
	if err != nil {
		fmt.Println(err)
		return
	}
	chunk := v.ChunkRows(64 << 10)
	dst := make([]float32, chunk*v.Cols)
	var raw []byte
	var rows int64
	var maxAbs float32
	for r0 := int64(0); r0 < v.Rows; r0 += chunk {
		n := min(chunk, v.Rows-r0)
		if raw, err = v.ReadRows(r0, n, raw, dst); err != nil {
			fmt.Println(err)
			return
		}
		for _, x := range dst[:n*v.Cols] {
			maxAbs = max(maxAbs, x, -x)
		}
		rows += n
	}
	fmt.Printf("%s %v, dequantised %v, %d rows in chunks of %d, max |w| < 0.2: %v\n", w.DType, w.Shape, v.Dequantized(), rows, chunk, maxAbs < 0.2)
	// Output:
	// F8_E4M3 [128 320], dequantised true, 128 rows in chunks of 32, max |w| < 0.2: true
}

// Globs: `*` stays inside one dotted segment, `**` crosses segments.
func ExampleNewMatcher() {
	m, _ := ckpt.NewMatcher([]string{"mtp.**", "*.weight"}, []string{"**.weight_scale_inv"})
	for _, n := range []string{"mtp.fc.weight", "mtp.layers.0.mlp.up_proj.weight_scale_inv", "lm_head.weight", "model.norm.weight"} {
		fmt.Println(n, m.Match(n))
	}
	// Output:
	// mtp.fc.weight true
	// mtp.layers.0.mlp.up_proj.weight_scale_inv false
	// lm_head.weight true
	// model.norm.weight false
}

// A library message spells an option through the caller's words; without
// them it names the Options field.
func ExampleWords() {
	hint := func(w ckpt.Words) string { return "tensor data is read only with " + w.Of("ReadData") }
	fmt.Println(hint(nil))
	fmt.Println(hint(ckpt.Words{"ReadData": "--read-data"}))
	// Output:
	// tensor data is read only with Options.ReadData
	// tensor data is read only with --read-data
}

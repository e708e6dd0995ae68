package ckpttest_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// Write the small FP8 fixture and open one of the corrupt variants.
func ExampleWrite() {
	dir, _ := os.MkdirTemp("", "ckpttest-example-")
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
	fmt.Println(len(c.Files), "shards,", len(c.Tensors), "tensors, block", c.Config.Quantization().BlockSize)
	for _, v := range ckpttest.CorruptFiles() {
		if v.Name != "gap" {
			continue
		}
		src, _, _ := v.Write(dir)
		_, err := ckpt.Open(context.Background(), src, ckpt.Options{})
		fmt.Println(v.Rule, "→ malformed:", err != nil)
	}
	// Output:
	// 4 shards, 124 tensors, block [32 32]
	// gap between tensors → malformed: true
}

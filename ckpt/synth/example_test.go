package synth_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// A small Qwen3.5-style checkpoint (block-FP8, with MTP head and vision
// tower, two layers per shard) written to a folder and read back.
func Example() {
	dir, err := os.MkdirTemp("", "synth-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := synth.Write(dir, synth.Small()); err != nil {
		panic(err)
	}
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println("sharded:", c.Sharded, "files:", len(c.Files))
	t, _ := c.Lookup("model.language_model.layers.0.mlp.up_proj.weight")
	fmt.Println(t.Name, t.DType, t.Shape)
	s, _ := c.Lookup("model.language_model.layers.0.mlp.up_proj.weight_scale_inv")
	fmt.Println(s.Name, s.DType, s.Shape)
	// Output:
	// sharded: true files: 4
	// model.language_model.layers.0.mlp.up_proj.weight F8_E4M3 [320 128]
	// model.language_model.layers.0.mlp.up_proj.weight_scale_inv BF16 [10 4]
}

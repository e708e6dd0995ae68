package mapping_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
)

func ExampleBuildWith() {
	dir, _ := os.MkdirTemp("", "mapping-example-")
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
	profile, _ := mapping.Builtin("qwen3_5-tt")
	plan, err := mapping.BuildWith(c, profile, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(plan.Entries), "targets,", len(plan.Ignored), "ignored,", len(plan.Unmapped), "unmapped")
	for _, e := range plan.Entries {
		if e.Target == "layers.0/tp/qkvzab.il" {
			fmt.Println(e.File)
			fmt.Println(e.Describe(), e.Placement, ckpt.FormatShape(e.Shape), "->", ckpt.FormatShape(e.DeviceShape))
		}
	}
	// Output:
	// 82 targets, 25 ignored, 0 unmapped
	// P300/tensor_cache_bfp8_mesh1x2/layers.0/tp/qkvzab.il_dtype_BFLOAT8_B_layout_TILE.tensorbin
	// [dequantize(fp8 block) round(bf16) fuse(per device [q|k|v|z|a|b]) transpose] shard(dim=-1) [128,392] -> [128,196]
}

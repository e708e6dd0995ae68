package diff_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
)

// Compare the generated fine-tune with its base: its MTP head is the
// base's pre-quantisation bf16 form, so it re-quantises exactly.
func Example() {
	dir, _ := os.MkdirTemp("", "diff-example-")
	defer os.RemoveAll(dir)
	basePath, ftPath, err := synth.Pair(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	base, _ := ckpt.Open(ctx, basePath, ckpt.Options{})
	defer base.Close()
	ft, _ := ckpt.Open(ctx, ftPath, ckpt.Options{})
	defer ft.Close()
	res, err := diff.Compare(ctx, base, ft, diff.CompareOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range res.Tensors {
		if t.Name == "mtp.layers.0.mlp.up_proj.weight" {
			fmt.Println(t.Name, t.Relation, t.BaseDType, "→", t.FTDType)
		}
	}
	s := res.Summary
	fmt.Printf("%d changed, %d requant_identical, %d only_in_base; config: %s\n", s.Changed, s.RequantIdentical, s.OnlyInBase, res.Config[0].Path)
	// Output:
	// mtp.layers.0.mlp.up_proj.weight requant_identical F8_E4M3 → BF16
	// 4 changed, 7 requant_identical, 7 only_in_base; config: quantization_config.modules_to_not_convert
}

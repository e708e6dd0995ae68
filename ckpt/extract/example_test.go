package extract_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/extract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// Extract the MTP head of a block-FP8 checkpoint as a bf16 sidecar.
func Example() {
	dir, _ := os.MkdirTemp("", "extract-example-")
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "base")
	if err := synth.Write(src, synth.Small()); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	c, err := ckpt.Open(ctx, src, ckpt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	plan, err := extract.NewPlan(c, extract.PlanOptions{Match: []string{"mtp.**"}, DType: extract.BF16})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := plan.Write(ctx, filepath.Join(dir, "mtp.safetensors"))
	if err != nil {
		fmt.Println(err)
		return
	}
	copied, converted, dequantized := plan.Counts()
	fmt.Printf("%d tensors, %d bytes: %d dequantised, %d converted, %d copied\n", len(plan.Items), plan.TotalBytes, dequantized, converted, copied)
	fmt.Printf("%s: %d bytes\n", filepath.Base(res.Files[0].Path), res.Files[0].Size)
	// Output:
	// 15 tensors, 443776 bytes: 7 dequantised, 0 converted, 8 copied
	// mtp.safetensors: 445296 bytes
}

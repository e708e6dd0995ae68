package inspect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// List the MTP head of a generated sharded FP8 checkpoint, from its
// headers alone.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "inspect-example-")
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "base")
	if err := synth.Write(src, synth.Small()); err != nil {
		fmt.Println(err)
		return
	}
	sel, err := ckpt.NewMatcher([]string{"mtp.**"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := inspect.Run(context.Background(), inspect.Options{Source: src, Select: sel, Workers: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d files, %d tensors listed, %d parameters\n", len(res.Files), len(res.Tensors), res.Summary.Parameters)
	for _, d := range res.Summary.ByDType {
		fmt.Printf("%-8s %3d tensors %8d bytes\n", d.DType, d.Tensors, d.Bytes)
	}
	// Output:
	// 4 files, 22 tensors listed, 221888 parameters
	// BF16      15 tensors    67312 bytes
	// F8_E4M3    7 tensors   188416 bytes
}

package contract_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// Write the contract of a generated block-FP8 checkpoint, then hold a
// copy that lost its MTP head against it.
func Example() {
	dir, _ := os.MkdirTemp("", "contract-example-")
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "base")
	if err := synth.Write(src, synth.Small()); err != nil {
		fmt.Println(err)
		return
	}
	res, err := contract.Run(context.Background(), contract.Options{Source: src})
	if err != nil {
		fmt.Println(err)
		return
	}
	want := res.Contract
	fmt.Printf("contract_version %d: %d tensors, FP8 scheme: %s\n", want.Version, len(want.Tensors), want.FP8)

	cur := *want
	cur.Tensors = nil
	for _, e := range want.Tensors {
		if g, _, _ := ckpt.GroupOf(e.Name); g != ckpt.GroupMTP {
			cur.Tensors = append(cur.Tensors, e)
		}
	}
	cmp, err := contract.Compare(want, &cur, contract.CompareOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range cmp.Checks {
		if f.Status == ckpt.Fail {
			fmt.Printf("%s %s\n", f.ID, f.Status)
		}
	}
	fmt.Println(cmp.KeySetOutside(ckpt.GroupMTP))
	// Output:
	// contract_version 2: 124 tensors, FP8 scheme: method fp8, fmt e4m3, activation dynamic, block [32,32], scales BF16
	// contract.key_removed fail
	// key set outside mtp.**: identical, 102 keys
}

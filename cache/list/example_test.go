package list_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/list"
)

// Run lists the files of the cache folder under a cache root.
func ExampleRun() {
	root, err := os.MkdirTemp("", "list")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	if _, err := cachetest.WriteTinyFolder(root, 2); err != nil {
		fmt.Println(err)
		return
	}
	res, err := list.Run(context.Background(), list.Options{Dir: root})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range res.Files {
		fmt.Println(f.Path, f.DType, f.Layout, f.PlacementText, f.Bytes)
	}
	fmt.Println(res.SummaryRecord().Files, "files,", res.Unreadable(), "unreadable")
	// Output:
	// P300/tensor_cache_bfp8_mesh1x2/a/f0.tensorbin BFLOAT16 TILE shard(-1) 4544
	// P300/tensor_cache_bfp8_mesh1x2/a/f1.tensorbin BFLOAT16 TILE shard(-1) 4544
	// 2 files, 0 unreadable
}

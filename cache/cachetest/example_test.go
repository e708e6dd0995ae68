package cachetest_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
)

// Example writes a tiny finished cache folder without a build, then
// damages one of its files the way a test of cache comparison wants: the
// header says another shape, the shard bytes stay the same.
func Example() {
	root, err := os.MkdirTemp("", "cachetest-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	m, err := cachetest.WriteTinyFolder(root, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.CacheDir, len(m.Files), "files")

	path := filepath.Join(root, m.Files[0].Path)
	before, err := tensorbin.ReadTensorbinFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = cachetest.RewriteHeader(path, func(h *tensorbin.Header) {
		h.Spec.Shape = append([]uint32{1}, h.Spec.Shape...)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	after, err := tensorbin.ReadTensorbinFile(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(filepath.Base(path)+":", cache.DiffHeaders(before, after))
	// Output:
	// P300/tensor_cache_bfp8_mesh1x2 2 files
	// f0.tensorbin: shape [1,32,32], want [32,32]
}

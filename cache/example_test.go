package cache_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
)

// Example finds the cache folders of a root, tells that the one there is
// a finished build, and reads its manifest. The folder is a tiny one
// written by cachetest, without a build.
func Example() {
	root, err := os.MkdirTemp("", "cache-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	if _, err := cachetest.WriteTinyFolder(root, 2); err != nil {
		fmt.Println(err)
		return
	}

	folders, err := cache.Folders(root)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range folders {
		dir := filepath.Join(root, f.Dir)
		fmt.Printf("%s: device %s, tag %s, mesh %s\n", f.Dir, f.Device(), f.Tag(), f.Mesh())
		fmt.Println("finished:", cache.CheckFinished(dir) == nil)
		m, err := cache.ReadManifest(dir)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(m.Format, m.Mesh, len(m.Files), "files")
		for _, r := range m.Files {
			fmt.Println(" ", r.Path)
		}
	}
	// Output:
	// P300/tensor_cache_bfp8_mesh1x2: device P300, tag bfp8, mesh 1x2
	// finished: true
	// ckpt-tt-cache/1 1x2 2 files
	//   P300/tensor_cache_bfp8_mesh1x2/a/f0.tensorbin
	//   P300/tensor_cache_bfp8_mesh1x2/a/f1.tensorbin
}

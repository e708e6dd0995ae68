package archive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
)

// Pack archives a cache folder into a file; Unpack places it under
// another cache root, checking every file against the manifest.
func ExamplePack() {
	tmp, err := os.MkdirTemp("", "archive")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "cache")
	if _, err := cachetest.WriteTinyFolder(root, 2); err != nil {
		fmt.Println(err)
		return
	}
	file := filepath.Join(tmp, "cache.tar.zst")
	p, err := archive.Pack(context.Background(), archive.PackOptions{Dir: root, Out: file})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("packed", len(p.Manifest.Files), "files,", p.Bytes, "bytes, of", p.Folder.Dir)
	u, err := archive.Unpack(context.Background(), archive.UnpackOptions{File: file, Dir: filepath.Join(tmp, "copy")})
	if err != nil {
		fmt.Println(err)
		return
	}
	rel, _ := filepath.Rel(tmp, u.Dir)
	fmt.Println("unpacked", len(u.Manifest.Files), "files,", u.Bytes, "bytes, into", filepath.ToSlash(rel))
	// Output:
	// packed 2 files, 9088 bytes, of P300/tensor_cache_bfp8_mesh1x2
	// unpacked 2 files, 9088 bytes, into copy/P300/tensor_cache_bfp8_mesh1x2
}

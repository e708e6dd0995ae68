package check_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
)

// Build a small generated checkpoint's tensor cache for a 1x2 mesh,
// rebuild it (nothing to do) and verify it (moved from cache/build's
// example: cache/check sits above cache/build).
func Example_buildAndVerify() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cache-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "base")
	if err := synth.Write(src, synth.Small()); err != nil {
		panic(err)
	}
	c, err := ckpt.Open(ctx, src, ckpt.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	prof, _ := mapping.Builtin(mapping.BuiltinName)
	plan, err := mapping.BuildWith(c, prof, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	if err != nil {
		panic(err)
	}
	out := filepath.Join(dir, "tt-cache")
	res, err := build.Write(ctx, c, plan, out, build.WriteOptions{Tool: "example", ToolVersion: "0"})
	if err != nil {
		panic(err)
	}
	fmt.Println("built", len(res.Built), "files from", res.SourceTensors, "source tensors")
	res, _ = build.Write(ctx, c, plan, out, build.WriteOptions{})
	fmt.Println("rebuild: built", len(res.Built), "kept", len(res.Skipped))

	m, err := cache.ReadManifest(cache.FolderOf(out, plan.CacheDir).Path())
	if err != nil {
		panic(err)
	}
	rep, err := check.Files(ctx, out, m, c, plan, check.FilesOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("verify ok:", rep.OK(), "files:", rep.Files)
	fmt.Println(m.Files[0].Path)
	// Output:
	// built 82 files from 67 source tensors
	// rebuild: built 0 kept 82
	// verify ok: true files: 82
	// P300/tensor_cache_bfp8_mesh1x2/layers.0.input_layernorm.weight_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin
}

package identify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// A cache built from a small checkpoint with the default profile,
// identified from its names and headers: the candidate that reproduces it
// is the default profile with its defaults.
func ExampleRun() {
	tmp, err := os.MkdirTemp("", "identify-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	src, out := filepath.Join(tmp, "src"), filepath.Join(tmp, "cache")
	if err := synth.Write(src, synth.Small()); err != nil {
		panic(err)
	}
	ctx := context.Background()
	if _, err := build.Run(ctx, build.Options{Source: src, Out: out, WriteOptions: build.WriteOptions{NoSync: true}}); err != nil {
		panic(err)
	}
	res, err := identify.Run(ctx, identify.Options{Dir: out, Source: src, HeadersOnly: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("exact:", res.Exact)
	fmt.Println("profile:", res.Best.Profile, "overrides:", res.Best.Overrides)
	// Output:
	// exact: true
	// profile: qwen36-mtp@pr55548 overrides: []
}

// Command genfixture writes a generated Qwen3.5-style checkpoint for
// benchmarks and scripts: genfixture -size large|small|medium DIR.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
)

func main() {
	size := flag.String("size", "large", "fixture: large (~1.2 GB FP8, ckpttest.Large), medium (~50 MB FP8) or small (ckpttest.Small)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: genfixture [-size large|medium|small] DIR")
		os.Exit(2)
	}
	var o ckpttest.Options
	switch *size {
	case "large":
		o = ckpttest.Large()
	case "medium":
		o = Medium()
	case "small":
		o = ckpttest.Small()
	default:
		fmt.Fprintf(os.Stderr, "genfixture: unknown -size %q\n", *size)
		os.Exit(2)
	}
	if err := ckpttest.Write(flag.Arg(0), o); err != nil {
		fmt.Fprintf(os.Stderr, "genfixture: %v\n", err)
		os.Exit(1)
	}
}

// Medium is a ~50 MB FP8 checkpoint: Large's shape at hidden 512.
func Medium() ckpttest.Options {
	o := ckpttest.Large()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 512, 2048, 8, 8, 2, 64
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 4, 8, 64, 64, 8192
	return o
}

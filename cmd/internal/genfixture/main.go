// Command genfixture writes a generated base / fine-tune checkpoint pair
// (package synth) for benchmarks: `go run ./cmd/internal/genfixture
// -size large -out DIR` writes DIR/base and DIR/ft (~1.2 GB each).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

func main() {
	out := flag.String("out", "", "directory to write base/ and ft/ into (required)")
	size := flag.String("size", "large", "small (the demo pair), small4 (small with heads that divide by 4: it maps on a 1x4 mesh), "+
		"moe (synth.SmallMoE: a tiny Qwen3.5-MoE, fused experts), large (~1.2 GB per checkpoint) or odd (~0.6 GB, partial FP8 blocks)")
	perExpert := flag.Bool("per-expert", false, "with -size moe: one tensor per expert and projection, as transformers saves them")
	bf16 := flag.Bool("bf16", false, "bf16 weights instead of block FP8")
	all := flag.Bool("all-changed", false, "the fine-tune perturbs every tensor (diff's worst case)")
	layers := flag.Int("layers", 0, "decoder layers (0: those of -size)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genfixture -out DIR [-size small|small4|moe|large|odd] [-per-expert] [-bf16] [-layers N] [-all-changed]")
		os.Exit(2)
	}
	var o synth.Options
	switch *size {
	case "small":
		o = synth.Small()
	case "small4":
		o = synth.Small4()
	case "moe":
		o = synth.SmallMoE()
		o.PerExpert = *perExpert
	case "large":
		o = synth.Large()
	case "odd":
		o = synth.LargeOdd()
	default:
		fmt.Fprintf(os.Stderr, "genfixture: unknown -size %q (want small, small4, moe, large or odd)\n", *size)
		os.Exit(2)
	}
	if *bf16 {
		o.FP8 = false
	}
	if *layers < 0 {
		fmt.Fprintln(os.Stderr, "genfixture: -layers must not be negative")
		os.Exit(2)
	}
	if *layers > 0 {
		o.Layers = *layers
	}
	if err := synth.Write(filepath.Join(*out, "base"), o); err != nil {
		fmt.Fprintf(os.Stderr, "genfixture: writing base: %v\n", err)
		os.Exit(2)
	}
	o.FineTune, o.FineTuneAll = true, *all
	if err := synth.Write(filepath.Join(*out, "ft"), o); err != nil {
		fmt.Fprintf(os.Stderr, "genfixture: writing fine-tune: %v\n", err)
		os.Exit(2)
	}
}

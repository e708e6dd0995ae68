package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/spf13/cobra"
)

type demoOptions struct {
	Dir   string
	Clean bool
}

func (a *App) newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Build a tiny FP8 base / fine-tune pair in a new directory (kept, so the commands it prints work afterwards) and run the tool on it",
		Example: `  ckpt demo
  ckpt demo --clean
  ckpt demo --dir /tmp/ckpt-demo`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDemo(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "write the demo checkpoints here (a new or empty directory) instead of a new temporary directory")
	cmd.Flags().BoolVar(&o.Clean, "clean", false, "remove the demo's temporary directory at the end (the printed commands then no longer work)")
	return cmd
}

// demoStep is one command the demo runs, with the exit codes it expects.
type demoStep struct {
	title string
	args  []string
	want  []int
}

func (a *App) runDemo(ctx context.Context, o *demoOptions) error {
	if o.Clean && o.Dir != "" {
		return usageError("--clean removes the demo's temporary directory; it does not apply to --dir (remove %s yourself)", o.Dir)
	}
	dir := o.Dir
	if dir != "" {
		// The output policy (atomicfile.Place): a new name or an empty
		// directory (through links), never one holding anything.
		if _, err := atomicfile.Place(dir, atomicfile.Policy{Flag: "--dir", Dir: true, Empty: true}); err != nil {
			return err
		}
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ckpt-demo-")
		if err != nil {
			return &atomicfile.WriteError{Op: "creating the demo directory", Err: err}
		}
		dir = tmp
		if o.Clean {
			defer func() {
				os.RemoveAll(tmp)
				fmt.Fprintf(a.Out, "removed %s (--clean)\n", tmp)
			}()
		}
	}
	base, ft, err := synth.Pair(dir)
	if err != nil {
		// Our side's failure (exit 3): the demo writes its own files.
		return &atomicfile.WriteError{Op: "writing demo checkpoints in", Path: dir, Err: err}
	}
	fmt.Fprintf(a.Out, "Demo checkpoints in %s:\n"+
		"  base: a Qwen3.5-style hybrid block-FP8 checkpoint (3 linear-attention + 1 full-attention layers, MTP head, vision tower)\n"+
		"  ft:   a light fine-tune that ships the MTP head in bf16\n\n", dir)
	for _, s := range demoSteps(dir, base, ft) {
		fmt.Fprintf(a.Out, "==> %s\n$ ckpt %s\n", s.title, shellJoin(s.args))
		code := a.Run(ctx, s.args)
		ok := false
		for _, w := range s.want {
			ok = ok || code == w
		}
		if !ok {
			return fmt.Errorf("demo step %q exited %d, expected %v", s.title, code, s.want)
		}
		fmt.Fprintf(a.Out, "(exit %d)\n\n", code)
	}
	if !o.Clean {
		fmt.Fprintf(a.Out, "The demo files stay in %s: the commands above work on them. Remove them with:\n  rm -rf %s\n", dir, shellJoin([]string{dir}))
	}
	return nil
}

// demoSteps is the demo: every command on the generated pair, in order,
// with the exit codes each step expects.
func demoSteps(dir, base, ft string) []demoStep {
	contract := filepath.Join(dir, "base.contract.json")
	sidecar := filepath.Join(dir, "mtp-bf16.safetensors")
	cache := filepath.Join(dir, "cache")
	return []demoStep{
		{"Inspect the base (summary)", []string{"inspect", base, "--summary"}, []int{0}},
		{"The MTP head of the base", []string{"inspect", base, "--match", "mtp.**"}, []int{0}},
		{"The MTP head of the fine-tune", []string{"inspect", ft, "--match", "mtp.**", "--summary"}, []int{0}},
		// verify the base, write its contract, then hold the fine-tune
		// against it (which differs: the MTP head ships in BF16 without
		// its scales)
		{"Verify the base (index, headers, FP8 block scales, qwen3_5 architecture, data)", []string{"verify", base, "--read-data", "--progress", "none"}, []int{0}},
		{"Write the base's structural contract", []string{"contract", base, "--out", contract}, []int{0}},
		{"Hold the fine-tune against the base's contract (differences expected: exit 1)", []string{"verify", ft, "--against", contract}, []int{1}},
		// the MTP head of the fine-tune is its base's pre-quantisation
		// bf16 form (requant_identical)
		{"Compare the fine-tune with its base (the MTP head re-quantises to the base's FP8 exactly)",
			[]string{"diff", base, ft, "--progress", "none"}, []int{1}},
		{"Extract the base's MTP head as a bf16 sidecar (FP8 weights dequantised, scales dropped)",
			[]string{"extract", base, "--match", "mtp.**", "--dtype", "bf16", "--out", sidecar, "--progress", "none"}, []int{0}},
		{"Inspect the sidecar", []string{"inspect", sidecar}, []int{0}},
		{"The TP=2 weight-mapping plan of the base (default profile qwen36-mtp@pr55548, mesh 1x2)", []string{"map", base, "--mesh", "1x2", "--summary"}, []int{0}},
		// the small fixture has per-device widths that are not multiples
		// of 32 (e.g. qkvzab 196, A_log 2): those targets are padded to
		// whole tiles with zeros, as ttnn.from_torch pads
		{"Build the Tenstorrent tensor cache of the base (TP=2)", []string{"cache", "build", base, "--out", cache, "--mesh", "1x2", "--progress", "none"}, []int{0}},
		{"Verify the cache against the base (fail-closed preflight)", []string{"cache", "verify", cache, "--source", base, "--progress", "none"}, []int{0}},
	}
}

func shellJoin(args []string) string {
	out := ""
	for i, s := range args {
		if i > 0 {
			out += " "
		}
		if filepath.IsAbs(s) || s == "" || containsSpecial(s) {
			out += "'" + s + "'"
		} else {
			out += s
		}
	}
	return out
}

// shellQuote is s as one word of a POSIX shell command line: as it is when
// it holds only letters, digits and -_./:@=+,% (a profile name, a flag
// value, a path), else in single quotes (a ' inside as '\”).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@=+,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func containsSpecial(s string) bool {
	for _, c := range s {
		switch c {
		case ' ', '*', '?', '$', '\'', '"', '\\', '{', '}':
			return true
		}
	}
	return false
}

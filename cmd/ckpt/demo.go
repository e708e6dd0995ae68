package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/spf13/cobra"
)

type demoOptions struct {
	Dir  string
	Keep bool
}

func (a *App) newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Build a tiny FP8 base / fine-tune pair in a temporary directory and run the tool on it",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDemo(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "write the demo checkpoints here instead of a temporary directory (kept)")
	return cmd
}

// demoStep is one command the demo runs, with the exit codes it expects.
type demoStep struct {
	title string
	args  []string
	want  []int
}

func (a *App) runDemo(ctx context.Context, o *demoOptions) error {
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "ckpt-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	base, ft, err := ckpttest.Pair(dir)
	if err != nil {
		return fmt.Errorf("writing demo checkpoints: %w", err)
	}
	fmt.Fprintf(a.Out, "Demo checkpoints in %s:\n  base: a Qwen3.5-style hybrid block-FP8 checkpoint (3 linear-attention + 1 full-attention layers, MTP head, vision tower)\n  ft:   a light fine-tune that ships the MTP head in bf16\n\n", dir)
	steps := []demoStep{
		{"Inspect the base (summary)", []string{"inspect", base, "--summary"}, []int{0}},
		{"The MTP head of the base", []string{"inspect", base, "--match", "mtp.**"}, []int{0}},
		{"The MTP head of the fine-tune", []string{"inspect", ft, "--match", "mtp.**", "--summary"}, []int{0}},
	}
	steps = append(steps, a.demoSteps(dir, base, ft)...)
	for _, s := range steps {
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
	return nil
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

func containsSpecial(s string) bool {
	for _, c := range s {
		switch c {
		case ' ', '*', '?', '$', '\'', '"', '\\', '{', '}':
			return true
		}
	}
	return false
}

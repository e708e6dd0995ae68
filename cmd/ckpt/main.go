// Command ckpt inspects, verifies, compares, maps and converts safetensors
// checkpoints (Qwen3.5-style hybrid, block-FP8) for serving on Tenstorrent
// hardware. See README.md and docs/ for the contract.
package main

import (
	"context"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt/source"
	"golang.org/x/term"
)

func main() {
	ctx, cancel := notifyContext(context.Background())
	net := &netReporter{}
	app := &App{
		In:       os.Stdin,
		Out:      os.Stdout,
		Err:      os.Stderr,
		Terminal: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTerm:  term.IsTerminal(int(os.Stderr.Fd())),
		Getenv:   os.Getenv,
		Openers:  source.Openers(net.withHooks(source.Options{Getenv: os.Getenv, UserAgent: "ckpt/" + Version})),
		Net:      net,
	}
	code := app.Run(ctx, os.Args[1:])
	cancel()
	os.Exit(code)
}

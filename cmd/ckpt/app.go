package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/spf13/cobra"
)

// App carries what commands need from the outside world, so that every
// command runs in tests without a process or a terminal.
type App struct {
	In       io.Reader
	Out, Err io.Writer
	Terminal bool // stdout is a terminal
	ErrTerm  bool // stderr is a terminal
	Getenv   func(string) string
	// Openers resolve non-local sources (hf:, hf://, https://).
	Openers []ckpt.SourceOpener
}

// exitError carries an exit code: 1 for "differences / failed checks", 2
// for unreadable input or a wrong command line.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// silentExit ends a command with a code and no message (the output already
// says why).
func silentExit(code int) error { return &exitError{code: code} }

func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// Run executes the command line and returns the exit code.
func (a *App) Run(ctx context.Context, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.Err, "ckpt: internal error: %v\n", r)
			code = 2
		}
	}()
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetIn(a.In)
	root.SetOut(a.Out)
	root.SetErr(a.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if code, msg, ok := interruptExit(ctx, err); ok {
		if a.ErrTerm {
			fmt.Fprint(a.Err, "\r\033[K") // clear a partial line (^C echo)
		}
		fmt.Fprintf(a.Err, "ckpt: %s\n", msg)
		return code
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(a.Err, "ckpt: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(a.Err, "ckpt: %v\n", err)
	return 2
}

func (a *App) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "ckpt",
		Short:         "Inspect, verify, diff, map and convert safetensors checkpoints for Tenstorrent serving",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: 2, err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(
		a.newInspectCmd(),
		a.newDemoCmd(),
		a.newMapCmd(),
		a.newVerifyCmd(), a.newContractCmd(),
		a.newDiffCmd(),
		a.newExtractCmd(),
		a.newCacheCmd(),
	)
	return root
}

// Version is the tool version recorded in outputs such as cache manifests.
const Version = "0.1.0"

// open opens a source with the app's openers.
func (a *App) open(ctx context.Context, src string, opt ckpt.Options) (*ckpt.Checkpoint, error) {
	return ckpt.Open(ctx, src, opt, a.Openers...)
}

// inputError wraps an error about unreadable input as exit code 2.
func inputError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: 2, err: err}
}

// isInputError reports whether err is about the input (malformed or
// missing), as opposed to a failure of the tool itself.
func isInputError(err error) bool {
	return errors.Is(err, ckpt.ErrMalformed) || errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "opening")
}

// exactArgs is cobra.ExactArgs with exit code 2.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError("%s takes %d argument(s), got %d (see %s --help)", cmd.Name(), n, len(args), cmd.CommandPath())
		}
		return nil
	}
}

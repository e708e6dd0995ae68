package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
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
	// Net prints what the openers' HTTP sources report (retries, and
	// requests under -v); the openers are made with its hooks. nil:
	// nothing is printed.
	Net *netReporter
	// Now is the clock of the time reports and contracts name (nil:
	// time.Now; tests fix it so that goldens stay the same).
	Now func() time.Time
}

// The exit codes (docs/cli.md): like diff(1) for 0, 1 and 2, plus 3 for a
// failure on our own side.
const (
	exitOK         = 0 // success, no differences, every check passed
	exitFailed     = 1 // a check failed, differences found, the cache is stale
	exitUnreadable = 2 // the input could not be read, or the command line is wrong
	exitWrite      = 3 // the output could not be written (atomicfile.ErrWrite: disk full, permission, ...)
)

// exitError carries an exit code chosen by the command itself: 1 for
// "differences / failed checks", 2 for a wrong command line.
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
	return &exitError{code: exitUnreadable, err: fmt.Errorf(format, args...)}
}

// exitCode maps an error that a command returned to its exit code and the
// message to print ("" for none), by its type: an *exitError carries its
// code, a *ckpt.NonFiniteError (NaN/Inf refused) and ckpt.ErrScale (a
// quantised weight without a scale ckpt can apply) are a failed check (1), a
// atomicfile.ErrWrite (a *atomicfile.WriteError) is our side's failure (3), anything else means the input could not be read (2).
// The message says the library's typed errors in the CLI's words (words).
func exitCode(err error) (int, string) {
	code, msg := exitCodeOf(err)
	return code, words(err, msg)
}

// exitCodeOf is exitCode's code and the message of err as it stands.
func exitCodeOf(err error) (int, string) {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK, ""
	case errors.As(err, &ee):
		if ee.err == nil {
			return ee.code, ""
		}
		return ee.code, ee.err.Error()
	case errors.As(err, new(*cache.UnfinishedError)):
		// A cache whose build did not finish: a failed check, like
		// cache verify's finding.
		return exitFailed, err.Error()
	case errors.As(err, new(*ckpt.NonFiniteError)):
		// NaN/Inf refused by cache build or extract: a failed check.
		return exitFailed, err.Error()
	case errors.Is(err, ckpt.ErrScale):
		// A quantised weight whose scale is missing or of a scheme ckpt
		// does not read, refused by extract --dtype or diff: a failed check.
		return exitFailed, err.Error()
	case errors.Is(err, atomicfile.ErrWrite):
		return exitWrite, fmt.Sprintf("%v: %v", atomicfile.ErrWrite, err)
	}
	return exitUnreadable, err.Error()
}

// Run executes the command line and returns the exit code.
func (a *App) Run(ctx context.Context, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.Err, "ckpt: internal error: %v\n", r)
			code = exitUnreadable
		}
	}()
	// Tables on a terminal fit its width and use colour; a failed write of
	// the report itself is our side's failure (stdoutWriter).
	run := *a
	run.Out = output.ForTerminal(a.Out, a.Terminal, a.Getenv)
	var stdout *stdoutWriter
	if t := output.TermOf(run.Out); t != nil {
		stdout = markStdout(t.Writer)
		t.Writer = stdout
	} else {
		stdout = markStdout(run.Out)
		run.Out = stdout
	}
	root := run.newRootCmd()
	root.SetArgs(args)
	root.SetIn(a.In)
	root.SetOut(run.Out)
	root.SetErr(a.Err)
	err := root.ExecuteContext(ctx)
	if t := output.TermOf(run.Out); t != nil {
		if ferr := t.Flush(); ferr != nil && err == nil {
			err = ferr
		}
	}
	if stdout.err != nil && !errors.Is(err, atomicfile.ErrWrite) {
		// The report was lost (stdout on a full disk or a closed pipe),
		// whatever the command printed with: our side's failure (3).
		err = stdout.err
	}
	if code, msg, ok := interruptExit(ctx, err); ok {
		if a.ErrTerm {
			fmt.Fprint(a.Err, "\r\033[K") // clear a partial line (^C echo)
		}
		fmt.Fprintf(a.Err, "ckpt: %s\n", msg)
		return code
	}
	code, msg := exitCode(err)
	if msg != "" {
		fmt.Fprintf(a.Err, "ckpt: %s\n", msg)
	}
	return code
}

func (a *App) newRootCmd() *cobra.Command {
	return a.rootWith(
		a.newInspectCmd(nil),
		a.newDemoCmd(),
		a.newMapCmd(),
		a.newVerifyCmd(nil), a.newContractCmd(nil),
		a.newDiffCmd(nil),
		a.newExtractCmd(nil),
		a.newCacheCmd(),
		a.newVersionCmd(),
	)
}

// rootWith is the root command over these subcommands: the global flags,
// the checks before any work and the completion of the enum flags (tests
// parse one subcommand with it).
func (a *App) rootWith(cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "ckpt",
		Short:         "Inspect, verify, diff, map and convert safetensors checkpoints for Tenstorrent serving",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
		Example: `  ckpt inspect ./Qwen3.5-27B-FP8 --summary
  ckpt verify ./Qwen3.5-27B-FP8 --read-data
  ckpt diff ./base ./finetune
  ckpt demo`,
		Args: subcommands,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
		SuggestionsMinimumDistance: maxSuggestDistance,
	}
	var quiet, verbose bool
	root.PersistentFlags().BoolVarP(&quiet, "quiet", "q", false, "print only errors on stderr: no progress, notes or warnings")
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false,
		"log every HTTP request on stderr: method, URL without credentials, status, bytes, attempt (also HF_DEBUG=1)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if quiet {
			// Errors are printed by Run on the caller's stderr; everything
			// else the commands write there (progress, notes, warnings)
			// goes nowhere.
			a.Err, a.ErrTerm = io.Discard, false
		}
		a.Net.set(a.Err, a.ErrTerm, verbose || envTrue(a.Getenv, "HF_DEBUG"))
		noteDeprecated(cmd, a.Err)
		if err := checkWorkers(cmd); err != nil {
			return err
		}
		// Every enum flag is checked before the command does any work
		// (its own PreRunE, then RunE).
		return checkEnums(cmd)
	}
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(cmds...)
	completeEnums(root)
	return root
}

// checkWorkers refuses a --workers given as 0 or less on any command
// (leaving the flag out is what picks the default).
func checkWorkers(cmd *cobra.Command) error {
	fl := cmd.Flags().Lookup("workers")
	if fl == nil || !fl.Changed {
		return nil
	}
	if n, err := strconv.Atoi(fl.Value.String()); err == nil && n < 1 {
		return usageError("--workers must be at least 1, got %d", n)
	}
	return nil
}

// Version is the tool version recorded in outputs such as cache manifests.
const Version = "0.1.0"

// startProgress makes the progress counter of a library workflow and shows
// it on stderr as --progress mode says, under label; stop ends the display.
// A mode StartProgress does not know is a usage error.
func (a *App) startProgress(mode, label string) (p *ckpt.Progress, stop func(), err error) {
	p = ckpt.NewProgress()
	if (mode == "" || mode == output.ProgressAuto) && envTrue(a.Getenv, "HF_HUB_DISABLE_PROGRESS_BARS") {
		mode = output.ProgressNone // as huggingface_hub's bars; an explicit --progress wins
	}
	if stop, err = output.StartProgress(mode, a.ErrTerm, a.Err, label, p); err != nil {
		return nil, nil, usageError("%v", err)
	}
	return p, stop, nil
}

// generator names this build and the time, for reports and contracts.
func (a *App) generator() *ckpt.Generator {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	return ckpt.NewGenerator("ckpt", Version, now())
}

// proseFor makes the terminal, when stdout is one, wrap the lines of
// prose of a command that prints in format at spaces: in the table format
// (for people), never in JSON, CSV, Markdown or text (for tools).
func (a *App) proseFor(format string) {
	if t := output.TermOf(a.Out); t != nil {
		t.Prose = format == output.Table
	}
}

// warn prints warnings a library workflow returned, one line each,
// prefixed "ckpt: warning: ": a message naming what an input names (a
// tensor, an archive member, a manifest's source) prints with its control
// characters escaped, as every name on the terminal does, whoever built
// the message.
func (a *App) warn(msgs ...string) { a.stderrLines("warning", msgs) }

// note prints notes (what was done on the user's behalf, what was not
// checked) as warn prints warnings, prefixed "ckpt: note: ".
func (a *App) note(msgs ...string) { a.stderrLines("note", msgs) }

func (a *App) stderrLines(kind string, msgs []string) {
	for _, m := range msgs {
		fmt.Fprintf(a.Err, "ckpt: %s: %s\n", kind, ckpt.EscapeName(m))
	}
}

// markStdout wraps w in a stdoutWriter.
func markStdout(w io.Writer) *stdoutWriter { return &stdoutWriter{w: w} }

// stdoutWriter marks a failure to write the report itself (stdout
// redirected to a full disk) as our own side's (*atomicfile.WriteError, exit 3),
// and keeps the first one: Run ends with it even when the command ignored
// it (fmt.Fprintf's error is rarely checked).
type stdoutWriter struct {
	w   io.Writer
	err error
}

func (s *stdoutWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.w == nil {
		return len(p), nil
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = &atomicfile.WriteError{Op: "writing to stdout", Err: err}
		return n, s.err
	}
	return n, nil
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

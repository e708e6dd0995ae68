package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// signalCause is the cancel cause of a context ended by a signal.
type signalCause struct{ sig syscall.Signal }

func (s signalCause) Error() string { return "interrupted by " + s.sig.String() }

// notifyContext returns a context that the first SIGINT or SIGTERM cancels
// with a signalCause; after it the signals have their default effect again,
// so a second Ctrl-C ends the process at once.
func notifyContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			if ss, ok := s.(syscall.Signal); ok {
				cancel(signalCause{ss})
			} else {
				cancel(signalCause{syscall.SIGINT})
			}
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// interruptExit says how a command that a signal interrupted ends: exit
// 128 + the signal number (130 for SIGINT, 143 for SIGTERM) and a message
// such as "interrupted: 12 of 80 files done; rerun to resume". ok is false
// when the context was not ended by a signal.
func interruptExit(ctx context.Context, err error) (code int, msg string, ok bool) {
	var sc signalCause
	if err == nil || !errors.As(context.Cause(ctx), &sc) {
		return 0, "", false
	}
	msg = "interrupted"
	var ie *ckpt.InterruptedError
	if errors.As(err, &ie) {
		msg = ie.Error()
	}
	return 128 + int(sc.sig), msg, true
}

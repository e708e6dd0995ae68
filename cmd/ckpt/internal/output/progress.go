package output

import (
	"fmt"
	"io"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// Progress modes of --progress.
const (
	ProgressAuto  = "auto"
	ProgressBar   = "bar"
	ProgressPlain = "plain"
	ProgressNone  = "none"
)

// Refresh periods of the two renderers.
const (
	barRefresh   = 150 * time.Millisecond
	plainRefresh = 2 * time.Second
)

// StartProgress renders p on w (stderr) until the returned stop function is
// called: a bar on a terminal (or with mode "bar"), a plain line every few
// seconds otherwise (mode "plain", or "auto" off a terminal), nothing with
// "none". Units are bytes.
//
// The library grows p's total while it works (tensors are planned as they
// are reached), so the bar follows both the total and the work done and
// never completes on its own. stop ends it at 100 % when all the work was
// done, and otherwise (an error, an interrupt, a check that stopped early)
// removes it, so that no stale bar is left on the terminal.
//
// A w that implements mpb.ConsoleWriter is used as the terminal itself
// (tests drive the bar through a fake one).
func StartProgress(mode string, terminal bool, w io.Writer, label string, p *ckpt.Progress) (stop func(), err error) {
	if mode == "" || mode == ProgressAuto {
		mode = ProgressPlain
		if terminal {
			mode = ProgressBar
		}
	}
	switch {
	case mode != ProgressNone && mode != ProgressBar && mode != ProgressPlain:
		return nil, fmt.Errorf("unknown --progress %q (want auto, bar, plain or none)", mode)
	case w == io.Discard: // --quiet
		return func() {}, nil
	}
	switch mode {
	case ProgressNone:
		return func() {}, nil
	case ProgressBar:
		return startBar(w, label, p, barRefresh), nil
	case ProgressPlain:
		return startPlain(w, label, p, plainRefresh), nil
	}
	return nil, fmt.Errorf("unknown --progress %q (want auto, bar, plain or none)", mode)
}

// startBar draws p as a bar refreshed every period.
func startBar(w io.Writer, label string, p *ckpt.Progress, period time.Duration) (stop func()) {
	opts := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithRefreshRate(period), mpb.WithWidth(40)}
	if cw, ok := w.(mpb.ConsoleWriter); ok {
		opts = append(opts, mpb.WithConsoleWriter(cw))
	}
	pb := mpb.New(opts...)
	// Total 0 leaves mpb's completion trigger off: SetTotal(n, false) only
	// moves the displayed total, so a total that grows after the first
	// Add never freezes the bar at a low percentage (the bar used to be
	// created with the total known at start, often 0 → 1, and mpb then
	// marked it complete as soon as one byte was done).
	bar := pb.AddBar(0,
		mpb.PrependDecorators(decor.Name(label+" "), decor.CountersKibiByte("% .1f / % .1f")),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.Name(" "),
			decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO), ""),
			decor.Name(" "), averageRate(time.Now())))
	update := func() (done, total int64) {
		done, total, _ = p.Snapshot()
		bar.SetTotal(total, false)
		bar.SetCurrent(min(done, total))
		return done, total
	}
	return every(period, func() { update() }, func() {
		if done, total := update(); total > 0 && done >= total {
			bar.SetTotal(-1, true) // complete: the last frame shows 100 %
		} else {
			bar.Abort(true) // unfinished: the bar is removed
		}
		pb.Wait()
	})
}

// averageRate is the bar's speed: the bytes done over the time since
// start, on every frame, the last one too. (mpb's AverageSpeed keeps the
// value of the frame before completion, so a bar completed before a frame
// had counted anything ended at "0.0 b/s".)
func averageRate(start time.Time) decor.Decorator {
	return decor.Any(func(s decor.Statistics) string {
		rate := 0.0
		if el := time.Since(start).Seconds(); el > 0 {
			rate = float64(s.Current) / el
		}
		return fmt.Sprintf("% .1f/s", decor.SizeB1024(int64(rate)))
	})
}

// startPlain prints one line about p every period and a last one at stop,
// but nothing while nothing was done: a command that fails before it
// starts its work (or has none) leaves no "0 B, 0 items" line.
func startPlain(w io.Writer, label string, p *ckpt.Progress, period time.Duration) (stop func()) {
	start := time.Now()
	line := func() {
		if d, tot, items := p.Snapshot(); d == 0 && tot == 0 && items == 0 {
			return
		}
		fmt.Fprintln(w, plainLine(label, p, time.Since(start)))
	}
	return every(period, line, line)
}

// every calls tick every period on its own goroutine until stop is called;
// stop calls last there and returns when it is done.
func every(period time.Duration, tick, last func()) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-quit:
				last()
				return
			case <-t.C:
				tick()
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// plainLine is one line of plain progress (a log line for people, in
// binary units).
func plainLine(label string, p *ckpt.Progress, elapsed time.Duration) string {
	d, tot, items := p.Snapshot()
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(d) / s / (1 << 20)
	}
	if tot <= 0 {
		return fmt.Sprintf("%s: %s, %d items, %.0f MiB/s", label, Bytes(d), items, rate)
	}
	return fmt.Sprintf("%s: %.1f%% (%s of %s, %d items, %.0f MiB/s)", label, 100*float64(min(d, tot))/float64(tot), Bytes(d), Bytes(tot), items, rate)
}

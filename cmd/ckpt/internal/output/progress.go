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

// StartProgress renders p on w (stderr) until the returned stop function is
// called: a bar on a terminal (or with mode "bar"), a plain line every few
// seconds otherwise (mode "plain", or "auto" off a terminal), nothing with
// "none". Units are bytes.
func StartProgress(mode string, terminal bool, w io.Writer, label string, p *ckpt.Progress) (stop func(), err error) {
	if mode == "" || mode == ProgressAuto {
		mode = ProgressPlain
		if terminal {
			mode = ProgressBar
		}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	switch mode {
	case ProgressNone:
		return func() {}, nil
	case ProgressBar:
		pb := mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(150*time.Millisecond), mpb.WithWidth(40))
		_, total, _ := p.Snapshot()
		bar := pb.AddBar(max(total, 1),
			mpb.BarRemoveOnComplete(), // stopped (finished or interrupted): nothing left on screen
			mpb.PrependDecorators(decor.Name(label+" "), decor.CountersKibiByte("% .1f / % .1f")),
			mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageSpeed(decor.SizeB1024(0), "% .1f")))
		go func() {
			defer close(finished)
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					d, tot, _ := p.Snapshot()
					bar.SetTotal(max(tot, 1), false)
					bar.SetCurrent(min(d, max(tot, 1)))
					bar.SetTotal(-1, true)
					pb.Wait()
					return
				case <-t.C:
					d, tot, _ := p.Snapshot()
					bar.SetTotal(max(tot, 1), false)
					bar.SetCurrent(min(d, max(tot, 1)))
				}
			}
		}()
	case ProgressPlain:
		go func() {
			defer close(finished)
			start := time.Now()
			t := time.NewTicker(2 * time.Second)
			defer t.Stop()
			line := func() {
				d, tot, items := p.Snapshot()
				pct := 0.0
				if tot > 0 {
					pct = 100 * float64(d) / float64(tot)
				}
				el := time.Since(start).Seconds()
				rate := 0.0
				if el > 0 {
					rate = float64(d) / el / (1 << 20)
				}
				fmt.Fprintf(w, "%s: %.1f%% (%s of %s, %d items, %.0f MiB/s)\n", label, pct, Bytes(d), Bytes(tot), items, rate)
			}
			for {
				select {
				case <-done:
					line()
					return
				case <-t.C:
					line()
				}
			}
		}()
	default:
		return nil, fmt.Errorf("unknown --progress %q (want auto, bar, plain or none)", mode)
	}
	return func() { close(done); <-finished }, nil
}

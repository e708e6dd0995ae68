package output

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTerm is a terminal for mpb: it records every frame mpb flushes.
type fakeTerm struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	frames []string
}

func (f *fakeTerm) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(b)
}

func (f *fakeTerm) ReadFrom(r io.Reader) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.ReadFrom(r)
}

func (f *fakeTerm) IsTerminal() bool                            { return true }
func (f *fakeTerm) GetTermSize() (width, height int, err error) { return 100, 24, nil }

func (f *fakeTerm) Flush(int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frames = append(f.frames, f.buf.String())
	f.buf.Reset()
	return nil
}

func (f *fakeTerm) Frames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.frames...)
}

var percentRE = regexp.MustCompile(`(\d+) %`)

// percents returns the percentage each frame shows (-1 for a frame without
// a bar).
func percents(frames []string) []string {
	var out []string
	for _, f := range frames {
		if m := percentRE.FindStringSubmatch(f); m != nil {
			out = append(out, m[1])
		} else {
			out = append(out, "-")
		}
	}
	return out
}

// waitFrames waits until the terminal shows a frame that satisfies ok.
func waitFrames(t *testing.T, ft *fakeTerm, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		fr := ft.Frames()
		if len(fr) > 0 && ok(fr[len(fr)-1]) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no matching frame; frames show %v", percents(ft.Frames()))
}

func TestBarMovesAndEndsAt100(t *testing.T) {
	t.Parallel()
	ft := &fakeTerm{}
	p := ckpt.NewProgress()
	// Work is counted before the library knows the whole total, and the
	// total grows while work goes on: the case that froze the bar at 1 %.
	p.Add(10)
	stop := startBar(ft, "build", p, 10*time.Millisecond)
	p.AddTotal(1000)
	waitFrames(t, ft, func(f string) bool { return strings.Contains(f, " 1 %") })
	p.AddTotal(1000)
	p.Add(990)
	waitFrames(t, ft, func(f string) bool { return strings.Contains(f, " 50 %") })
	p.Add(1000)
	stop()
	fr := ft.Frames()
	require.NotEmpty(t, fr)
	last := fr[len(fr)-1]
	assert.Contains(t, last, "build")
	assert.Contains(t, last, "100 %", "frames: %v", percents(fr))
	assert.Contains(t, last, "2.0 KiB / 2.0 KiB")
}

// TestBarEndsAtItsAverageRate: a bar whose work was all done between two
// frames ends at the average rate of the run, not at "0.0 b/s" (extract's
// bar, #36).
func TestBarEndsAtItsAverageRate(t *testing.T) {
	t.Parallel()
	ft := &fakeTerm{}
	p := ckpt.NewProgress()
	stop := startBar(ft, "extract", p, time.Hour) // no frame before stop
	p.AddTotal(4 << 20)
	p.Add(4 << 20)
	time.Sleep(20 * time.Millisecond)
	stop()
	fr := ft.Frames()
	require.NotEmpty(t, fr)
	last := fr[len(fr)-1]
	assert.Contains(t, last, "100 %")
	assert.NotContains(t, last, "0.0 b/s")
	assert.Regexp(t, `[1-9][0-9.]* (KiB|MiB|GiB)/s`, last)
}

func TestBarClearedWhenUnfinished(t *testing.T) {
	t.Parallel()
	ft := &fakeTerm{}
	p := ckpt.NewProgress()
	p.AddTotal(1000)
	stop := startBar(ft, "verify", p, 10*time.Millisecond)
	p.Add(640)
	waitFrames(t, ft, func(f string) bool { return strings.Contains(f, " 64 %") })
	stop() // an error or an interrupt: work not done
	fr := ft.Frames()
	last := fr[len(fr)-1]
	assert.NotContains(t, last, "verify", "an unfinished bar is removed, not left at 64 %%: frames %v", percents(fr))
	assert.NotContains(t, last, "%")
}

func TestBarNothingToDo(t *testing.T) {
	t.Parallel()
	ft := &fakeTerm{}
	stop := startBar(ft, "diff", ckpt.NewProgress(), 10*time.Millisecond)
	stop()
	for _, f := range ft.Frames() {
		assert.NotContains(t, f, "100 %", "no work is not shown as done")
	}
	if fr := ft.Frames(); len(fr) > 0 {
		assert.NotContains(t, fr[len(fr)-1], "diff")
	}
}

func TestPlainProgress(t *testing.T) {
	t.Parallel()
	var b syncBuffer
	p := ckpt.NewProgress()
	p.AddTotal(2 << 20)
	p.Add(1 << 20)
	stop := startPlain(&b, "extract", p, 10*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), "extract: 50.0% (1.0 MiB of 2.0 MiB, 0 items,") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	p.Add(1 << 20)
	p.ItemDone()
	stop()
	out := b.String()
	assert.Contains(t, out, "extract: 50.0% (1.0 MiB of 2.0 MiB, 0 items,")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Contains(t, lines[len(lines)-1], "extract: 100.0% (2.0 MiB of 2.0 MiB, 1 items,")
	assert.NotContains(t, out, "\x1b", "plain lines carry no terminal codes")

	assert.Contains(t, plainLine("unpack", ckpt.NewProgress(), time.Second), "unpack: 0 B, 0 items", "no total: no percentage")
}

func TestStartProgressModes(t *testing.T) {
	t.Parallel()
	var b syncBuffer
	p := ckpt.NewProgress()
	p.AddTotal(10)
	p.Add(10)
	stop, err := StartProgress(ProgressAuto, false, &b, "x", p)
	require.NoError(t, err)
	stop()
	assert.Equal(t, "x: 100.0%", strings.SplitN(b.String(), " (", 2)[0], "auto off a terminal: plain lines")
	b = syncBuffer{}
	stop, err = StartProgress(ProgressNone, true, &b, "x", p)
	require.NoError(t, err)
	stop()
	assert.Empty(t, b.String())
	_, err = StartProgress("fancy", true, &b, "x", p)
	assert.ErrorContains(t, err, "fancy")
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package atomicfile

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlace is the output policy case by case: what Place decides for
// each kind of path, and that a refusal changes nothing.
func TestPlace(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("links, FIFOs and sockets as on Unix")
	}
	t.Parallel()
	dir := t.TempDir()
	in := func(p string) string { return filepath.Join(dir, p) }
	require.NoError(t, os.WriteFile(in("file"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(in("input"), []byte("in"), 0o644))
	require.NoError(t, os.Link(in("input"), in("hardlink")))
	require.NoError(t, os.Symlink("file", in("link")))
	require.NoError(t, os.Symlink("link", in("link2")))
	require.NoError(t, os.Symlink(filepath.Join("sub", "new"), in("dangling")))
	require.NoError(t, os.Symlink("input", in("link-to-input")))
	require.NoError(t, os.Symlink("loop-b", in("loop-a")))
	require.NoError(t, os.Symlink("loop-a", in("loop-b")))
	require.NoError(t, os.MkdirAll(in("sub"), 0o755))
	require.NoError(t, os.MkdirAll(in("full/x"), 0o755))
	require.NoError(t, mkfifo(in("fifo"), 0o644))
	sdir, err := os.MkdirTemp("", "sock")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sdir) })
	l, err := net.Listen("unix", filepath.Join(sdir, "s"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	inputs := []string{in("input")}
	require.NoError(t, os.MkdirAll(in("indir/sub"), 0o755))
	require.NoError(t, os.WriteFile(in("indir/file"), []byte("x"), 0o644))
	require.NoError(t, mkfifo(in("indir/fifo"), 0o644))
	require.NoError(t, os.Symlink("indir", in("indir-link")))
	require.NoError(t, os.Symlink(filepath.Join("indir", "sub", "new"), in("into-indir")))
	indirs := Policy{InputDirs: []string{in("indir")}, InputsAre: "the folder test"}
	for _, tc := range []struct {
		name   string
		path   string
		p      Policy
		kind   Kind
		to     string // the Target's path ("" for the path given)
		refuse string // a refusal's words ("" for none)
	}{
		{name: "new name", path: in("new"), kind: KindNew},
		{name: "regular file", path: in("file"), kind: KindRegular},
		{name: "link to a file: its target", path: in("link"), kind: KindRegular, to: in("file")},
		{name: "link to a link", path: in("link2"), kind: KindRegular, to: in("file")},
		{name: "dangling link: the target to create", path: in("dangling"), kind: KindNew, to: in("sub/new")},
		{name: "FIFO written through", path: in("fifo"), kind: KindStream},
		{name: "FIFO refused to a writer at offsets", path: in("fifo"), p: Policy{Seek: true}, refuse: "is a FIFO: this output is written at offsets"},
		{name: "directory refused to a file", path: in("sub"), refuse: "is a directory, not a file"},
		{name: "socket refused", path: filepath.Join(sdir, "s"), refuse: "is a socket"},
		{name: "link loop refused", path: in("loop-a"), refuse: "loop of symbolic links"},
		{name: "an input refused", path: in("input"), p: Policy{Inputs: inputs, InputsAre: "the test"}, refuse: "a file of the test: refusing to write over an input"},
		{name: "a hard link of an input refused", path: in("hardlink"), p: Policy{Inputs: inputs}, refuse: "a file of the input"},
		{name: "a link to an input refused", path: in("link-to-input"), p: Policy{Inputs: inputs}, refuse: "refusing to write over an input"},
		{name: "a new file inside an input folder refused", path: in("indir/new"), p: indirs, refuse: "is inside " + in("indir") + ", the folder of the folder test: refusing to write into an input"},
		{name: "a file deeper inside one refused", path: in("indir/sub/new"), p: indirs, refuse: "the folder of the folder test"},
		{name: "a regular file inside one refused", path: in("indir/file"), p: indirs, refuse: "the folder of the folder test"},
		{name: "inside one through a link to it refused", path: in("indir-link/new"), p: indirs, refuse: "the folder of the folder test"},
		{name: "a dangling link into one refused", path: in("into-indir"), p: indirs, refuse: "the folder of the folder test"},
		{name: "beside an input folder", path: in("indir-new"), p: indirs, kind: KindNew},
		{name: "a FIFO inside an input folder written through", path: in("indir/fifo"), p: indirs, kind: KindStream},
		{name: "directory output: new", path: in("newdir"), p: Policy{Dir: true}, kind: KindNew},
		{name: "directory output: a directory", path: in("full"), p: Policy{Dir: true}, kind: KindDir},
		{name: "directory output: a non-empty one refused", path: in("full"), p: Policy{Dir: true, Empty: true}, refuse: `not empty (1 entries, "x" first)`},
		{name: "directory output: an empty one", path: in("sub"), p: Policy{Dir: true, Empty: true}, kind: KindDir},
		{name: "directory output: a file refused", path: in("file"), p: Policy{Dir: true}, refuse: "is a regular file, not a directory"},
		{name: "directory output: a FIFO refused", path: in("fifo"), p: Policy{Dir: true}, refuse: "is a FIFO, not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Flag = "-o"
			got, err := Place(tc.path, tc.p)
			if tc.refuse != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrRefused)
				assert.NotErrorIs(t, err, ErrWrite)
				assert.Contains(t, err.Error(), "-o "+tc.path+" ")
				assert.Contains(t, err.Error(), tc.refuse)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.kind, got.Kind)
			want := tc.to
			if want == "" {
				want = tc.path
			}
			assert.Equal(t, want, got.Path)
		})
	}
	// Nothing was changed by any of it.
	b, err := os.ReadFile(in("input"))
	require.NoError(t, err)
	assert.Equal(t, "in", string(b))
	st, err := os.Lstat(in("link"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode()&os.ModeSymlink)
}

// TestOpenThroughLinkAndStream: Open writes a link's target atomically
// (the link stays), writes a FIFO through to its reader, and a path
// under a file is our side's failure (*WriteError), not a refusal.
func TestOpenThroughLinkAndStream(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("links and FIFOs as on Unix")
	}
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("target", link))
	f, err := Open(link, Policy{})
	require.NoError(t, err)
	assert.False(t, f.Stream())
	_, err = f.Write([]byte("new"))
	require.NoError(t, err)
	require.NoError(t, f.Commit())
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode()&os.ModeSymlink, "the link is not replaced")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, mkfifo(fifo, 0o644))
	st0, err := os.Lstat(fifo)
	require.NoError(t, err)
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		defer r.Close()
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	f, err = Open(fifo, Policy{})
	require.NoError(t, err)
	assert.True(t, f.Stream())
	require.NoError(t, f.Chmod(0o600), "a stream's mode is left alone")
	_, err = f.Write([]byte("through"))
	require.NoError(t, err)
	require.NoError(t, f.Commit())
	assert.Equal(t, "through", <-got)
	st, err = os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, st0.Mode(), st.Mode(), "still a FIFO, mode unchanged")
	assert.True(t, os.SameFile(st0, st), "the same FIFO")
	left, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	require.NoError(t, err)
	assert.Empty(t, left)

	_, err = Open(filepath.Join(target, "sub"), Policy{})
	var we *WriteError
	require.True(t, errors.As(err, &we), "%v", err)
	assert.NotErrorIs(t, err, ErrRefused)
}

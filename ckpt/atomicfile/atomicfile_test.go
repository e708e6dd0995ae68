package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		old  string // the target's content before, "" for none
		dir  bool   // the target is a non-empty directory
		// write fills the file; a non-nil error aborts it.
		write func(f *File) error
		// syncFails makes the directory sync after the rename fail.
		syncFails bool
		noSync    bool
		wantErr   string // "" for success (a *WriteError otherwise)
		want      string // the target's content after, "" for none
	}{
		{name: "success", write: writeNew, want: "new"},
		{name: "without fsync", write: writeNew, noSync: true, want: "new"},
		{name: "rename over existing", old: "old", write: writeNew, want: "new"},
		{name: "failure mid-write leaves no target", write: failMidWrite, wantErr: "file already closed"},
		{name: "failure mid-write keeps the old target", old: "old", write: failMidWrite, wantErr: "file already closed", want: "old"},
		{name: "rename onto a directory fails", dir: true, write: writeNew, wantErr: "renaming into"},
		{name: "directory sync error reported", write: writeNew, syncFails: true, wantErr: "syncing directory", want: "new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			target := filepath.Join(dir, "out.bin")
			if tc.old != "" {
				require.NoError(t, os.WriteFile(target, []byte(tc.old), 0o644))
			}
			if tc.dir {
				require.NoError(t, os.MkdirAll(filepath.Join(target, "sub"), 0o755))
			}
			f, err := Create(target)
			require.NoError(t, err)
			defer f.Abort()
			f.NoSync = tc.noSync
			if tc.syncFails {
				f.syncDir = func(string) error { return SyncDir(filepath.Join(dir, "gone")) }
			}
			if err = tc.write(f); err == nil {
				_, statErr := os.Stat(target)
				assert.Equal(t, tc.old == "" && !tc.dir, os.IsNotExist(statErr), "the target appears only on commit")
				err = f.Commit()
			}
			f.Abort() // a no-op after Commit
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrWrite)
				var we *WriteError
				require.True(t, errors.As(err, &we))
				require.ErrorContains(t, err, tc.wantErr)
				// the message names the target, never the temporary file
				assert.NotContains(t, err.Error(), ".tmp-")
				if !tc.syncFails {
					assert.Contains(t, err.Error(), target)
				}
			}
			var names []string
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range ents {
				names = append(names, e.Name())
			}
			switch {
			case tc.dir:
				require.Equal(t, []string{"out.bin"}, names, "no temporary file left")
				st, err := os.Stat(filepath.Join(target, "sub"))
				require.NoError(t, err)
				require.True(t, st.IsDir(), "the directory is untouched")
			case tc.want == "":
				require.Empty(t, names, "no target and no temporary file")
			default:
				require.Equal(t, []string{"out.bin"}, names, "no temporary file left")
				got, err := os.ReadFile(target)
				require.NoError(t, err)
				require.Equal(t, tc.want, string(got))
				st, err := os.Stat(target)
				require.NoError(t, err)
				if tc.old == "" || tc.want != tc.old {
					require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
				}
			}
		})
	}
}

func writeNew(f *File) error {
	_, err := f.Write([]byte("partial "))
	if err == nil {
		_, err = f.WriteAt([]byte("new"), 0)
	}
	if err == nil {
		err = f.Truncate(3)
	}
	return err
}

// failMidWrite writes, then loses the file: the next write fails.
func failMidWrite(f *File) error {
	if _, err := f.Write([]byte("par")); err != nil {
		return err
	}
	f.File.Close()
	_, err := f.Write([]byte("tial"))
	return err
}

func TestAbortNilAndTwice(t *testing.T) {
	t.Parallel()
	var f *File
	f.Abort() // nil-safe
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "x"))
	require.NoError(t, err)
	f.Abort()
	f.Abort()
	require.NoError(t, f.Commit(), "Commit after Abort does nothing")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents)
}

func TestCreateAndWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Create(filepath.Join(dir, "missing", "x"))
	require.ErrorIs(t, err, ErrWrite)
	require.ErrorContains(t, err, "creating "+filepath.Join(dir, "missing", "x"))

	p := filepath.Join(dir, "x.json")
	require.NoError(t, WriteFile(p, []byte("{}\n")))
	require.NoError(t, WriteFile(p, []byte("[]\n")))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "[]\n", string(got))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1)
}

func TestSyncDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, SyncDir(dir))
	err := SyncDir(filepath.Join(dir, "gone"))
	require.ErrorIs(t, err, ErrWrite)
	require.ErrorContains(t, err, "syncing directory "+filepath.Join(dir, "gone"))
	sub := filepath.Join(dir, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	require.NoError(t, Rename(sub, sub+".moved"))
	require.ErrorIs(t, Rename(sub, sub+".again"), ErrWrite)
}

func TestTempPattern(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	defer f.Abort()
	require.Equal(t, ".manifest.json.tmp-*", TempPattern(filepath.Join(dir, "manifest.json")))
	matched, err := filepath.Match(TempPattern("manifest.json"), filepath.Base(f.Name()))
	require.NoError(t, err)
	require.True(t, matched, f.Name())
	require.Equal(t, filepath.Join(dir, "manifest.json"), f.Target())
}

// TestNameTarget: an error of a file inside a temporary folder names the
// folder's target and still matches what it wraps.
func TestNameTarget(t *testing.T) {
	t.Parallel()
	tmp, target := "/out/.ex.tmp-123", "/out/ex"
	inner := &WriteError{Op: "writing", Path: tmp + "/model.safetensors", Err: os.ErrPermission}
	err := NameTarget(inner, tmp, target)
	assert.Equal(t, "writing /out/ex/model.safetensors: permission denied", err.Error())
	assert.ErrorIs(t, err, ErrWrite)
	assert.ErrorIs(t, err, os.ErrPermission)
	assert.Nil(t, NameTarget(nil, tmp, target))
	other := errors.New("reading x: bad")
	assert.Same(t, other, NameTarget(other, tmp, target))
}

package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// LockName is the lock file of a cache folder. A build or an unpack holds
// it (created with O_EXCL and kept under an exclusive flock) while it
// changes the folder; it holds the holder's LockInfo.
const LockName = ".ckpt-cache.lock"

// LockInfo says who holds a cache folder's lock.
type LockInfo struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Command string    `json:"command"`
	Host    string    `json:"host,omitempty"`
}

// String describes the holder: its pid, then, when known, when it
// started (local time), its host and its command.
func (l LockInfo) String() string {
	s := fmt.Sprintf("pid %d", l.PID)
	if !l.Started.IsZero() {
		s += ", started " + l.Started.Local().Format("2006-01-02 15:04:05")
	}
	if l.Host != "" {
		s += " on " + l.Host
	}
	if l.Command != "" {
		s += ", command `" + l.Command + "`"
	}
	return s
}

// LockedError says a cache folder is locked by another live process.
type LockedError struct {
	Folder string   // the cache folder
	Holder LockInfo // who holds it (zero when its lock file is unreadable)
}

// Error names the locked folder and its holder, and says to wait for it.
func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is being changed by another process (%s): wait for it to finish or stop it, then run again", e.Folder, e.Holder)
}

// Lock is a held cache folder lock.
type Lock struct {
	path string
	f    *os.File
	// Stale is set when the lock was taken over from a process that no
	// longer holds it (it died without releasing it).
	Stale *LockInfo
}

// thisProcess describes the calling process.
func thisProcess() LockInfo {
	host, _ := os.Hostname()
	return LockInfo{PID: os.Getpid(), Started: time.Now().UTC(), Command: strings.Join(os.Args, " "), Host: host}
}

// LockFolder takes the lock of a cache folder (which must exist). It
// returns *LockedError when a live process holds it; a lock file left by a
// process that died is taken over and reported in Lock.Stale.
func LockFolder(dir string) (*Lock, error) {
	p := filepath.Join(dir, LockName)
	me := thisProcess()
	for range 10 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		created := err == nil
		if errors.Is(err, fs.ErrExist) {
			f, err = os.OpenFile(p, os.O_RDWR, 0o644)
			if errors.Is(err, fs.ErrNotExist) {
				continue // released meanwhile
			}
		}
		if err != nil {
			// The lock file is our own output: permission denied, a
			// read-only file system, ... are our side's (exit 3).
			return nil, &atomicfile.WriteError{Op: "locking", Path: dir, Err: err}
		}
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, &atomicfile.WriteError{Op: "locking", Path: dir, Err: err}
		}
		if !ok {
			// The holder writes who it is right after taking the flock:
			// give it a moment before naming it.
			holder := readLockInfo(f)
			for i := 0; holder.PID == 0 && i < 100; i++ {
				time.Sleep(10 * time.Millisecond)
				holder = readLockInfo(f)
			}
			f.Close()
			return nil, &LockedError{Folder: dir, Holder: holder}
		}
		// We hold the flock of the file we opened; make sure it is still
		// the one at p (the holder may have removed it in between).
		st1, err1 := f.Stat()
		st2, err2 := os.Stat(p)
		if err1 != nil || err2 != nil || !os.SameFile(st1, st2) {
			f.Close()
			continue
		}
		l := &Lock{path: p, f: f}
		if !created {
			old := readLockInfo(f)
			l.Stale = &old
		}
		b, _ := json.Marshal(me)
		err = f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt(append(b, '\n'), 0)
		}
		if err != nil {
			l.Release()
			return nil, &atomicfile.WriteError{Op: "writing lock", Path: p, Err: err}
		}
		return l, nil
	}
	return nil, fmt.Errorf("locking %s: the lock file keeps changing", dir)
}

func readLockInfo(f *os.File) LockInfo {
	var li LockInfo
	b := make([]byte, 64<<10)
	n, _ := f.ReadAt(b, 0)
	_ = json.Unmarshal(b[:n], &li) // unreadable: zero holder
	return li
}

// Moved tells a held lock that its cache folder now lives at dir (it was
// renamed while the lock was held, as cache unpack swaps a staged folder
// in), so that Release removes the lock file where it is and never one
// another process created at the old path.
func (l *Lock) Moved(dir string) {
	if l != nil {
		l.path = filepath.Join(dir, LockName)
	}
}

// Release removes the lock file and releases the lock. It is nil-safe and
// idempotent.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close() // drops the flock
	l.f = nil
}

// LockHolder returns the holder of a cache folder's lock when a live
// process holds it.
func LockHolder(dir string) (LockInfo, bool) {
	f, err := os.Open(filepath.Join(dir, LockName))
	if err != nil {
		return LockInfo{}, false
	}
	defer f.Close()
	ok, err := tryLock(f)
	if err != nil || ok {
		return LockInfo{}, false // free (our probe's flock goes with Close)
	}
	return readLockInfo(f), true
}

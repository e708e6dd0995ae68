package archive

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// place writes each folder's manifest (marked as unpacked) into its
// staging folder and syncs it, then swaps the staged folders in, the
// vision folder first and the main folder last, each with one atomic
// exchange; the old folders are removed after. When a swap fails, the
// folders already swapped are swapped back: the cache is as it was.
func (u *unpacker) place() (*Unpacked, error) {
	for _, p := range u.parts {
		if err := u.seal(p); err != nil {
			return nil, err
		}
	}
	two := len(u.parts) > 1
	if two {
		// The folder placed first stays locked (by the lock taken in its
		// stage, which becomes the folder) until both are placed.
		for _, p := range u.parts {
			l, err := cache.LockFolder(p.stage)
			if err != nil {
				return nil, err
			}
			p.stageLock = l
		}
	}
	for i := len(u.parts) - 1; i >= 0; i-- {
		p := u.parts[i]
		err := u.swapIn(p)
		if err == nil && i > 0 && !u.opt.noSync {
			// The first rename reaches the disk before the second.
			err = atomicfile.SyncDir(filepath.Dir(p.real))
		}
		if err != nil {
			for _, q := range u.parts[i:] {
				if q.placed {
					if berr := u.swapBack(q); berr != nil {
						err = fmt.Errorf("%w; %v", err, berr)
					}
				}
			}
			return nil, err
		}
	}
	// From here on the new folders are in place: nothing is undone. The
	// old ones (with our locks) are at moved.
	for _, p := range u.parts {
		if !u.opt.noSync {
			if err := atomicfile.SyncDir(filepath.Dir(p.real)); err != nil {
				p.res.Warnings = append(p.res.Warnings, err.Error())
			}
		}
		if err := os.RemoveAll(p.moved); err != nil {
			p.res.Warnings = append(p.res.Warnings, fmt.Sprintf("the unpacked folder %s is in place, but its old copy could not be removed: %v", p.path, err))
		}
		p.lock.Release()
		p.stageLock.Release()
		p.stage = ""
	}
	res := u.parts[0].res
	res.Missing = u.missing
	if two {
		res.Companion = u.parts[1].res
		res.Warnings = append(res.Warnings, res.Companion.Warnings...)
	}
	return res, nil
}

// seal writes the manifest (marked as unpacked) into the staging folder
// and syncs it, and notes what the swap will replace.
func (u *unpacker) seal(p *part) error {
	m := *p.m
	m.Unpacked = &cache.Unpacked{Time: u.opt.now().UTC().Truncate(time.Second)}
	if u.opt.Archive != "" {
		m.Unpacked.Archive = filepath.Base(u.opt.Archive)
	}
	if err := cache.WriteManifest(p.stage, &m); err != nil {
		return err
	}
	if !u.opt.noSync {
		var dirs []string
		for d := range p.dirs {
			dirs = append(dirs, d)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := atomicfile.SyncDir(filepath.Join(p.stage, filepath.FromSlash(d))); err != nil {
				return err
			}
		}
	}
	p.res = &Unpacked{Manifest: &m, Folder: p.folder}
	p.res.Dropped, p.res.Replaced = p.dropped()
	p.root.Close()
	p.root = nil
	return nil
}

// swapIn exchanges the staged folder with the folder.
func (u *unpacker) swapIn(p *part) error {
	moved, err := u.opt.exchange(p.stage, p.real)
	if err != nil {
		return &atomicfile.WriteError{Op: "moving the unpacked folder into place at", Path: p.real, Err: err}
	}
	p.moved, p.placed = moved, true
	p.lock.Moved(moved)
	p.stageLock.Moved(p.real)
	p.stage = "" // nothing of it is removed while it is in place
	return nil
}

// swapBack puts the old folder, at moved since swapIn, back in place; the
// unpacked one is then removed by undo. When that fails too the error
// says where each folder is, and neither is removed.
func (u *unpacker) swapBack(p *part) error {
	back, err := u.opt.exchange(p.moved, p.real)
	if err != nil {
		return fmt.Errorf("moving the old folder back also failed (%v): %s holds the archive's folder, the old one is at %s", err, p.real, p.moved)
	}
	p.placed = false
	p.lock.Moved(p.real)
	p.stageLock.Moved(back)
	p.stage = back
	return nil
}

// dropped lists the files of the folder being replaced that the archive
// does not hold (root-relative), and whether it held anything.
func (p *part) dropped() ([]string, bool) {
	var out []string
	held := false
	filepath.WalkDir(p.real, func(fp string, d fs.DirEntry, err error) error {
		if err != nil || fp == p.real {
			return nil
		}
		rel, _ := filepath.Rel(p.real, fp)
		if rel == cache.LockName {
			return nil
		}
		held = true
		if d.IsDir() {
			return nil
		}
		r := p.m.CacheDir + "/" + filepath.ToSlash(rel)
		if _, ok := p.recs[r]; !ok && rel != cache.ManifestName {
			out = append(out, r)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return ckpt.NaturalLess(out[i], out[j]) })
	return out, held
}

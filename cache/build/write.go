package build

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
)

// finalize takes the hashes of a complete target, commits its file and
// journals its record.
func (b *builder) finalize(s *sink) error {
	if err := s.open(); err != nil {
		return err
	}
	if s.img != nil {
		if err := s.img.flush(); err != nil {
			return err
		}
	}
	hh, h, err := b.fileHashes(s)
	if err != nil {
		return err
	}
	if err := s.af.Commit(); err != nil {
		return err
	}
	rec := s.rec
	rec.HeaderXXH3, rec.DataXXH3 = hh, h
	if b.opt.NoSync {
		rec.UnsyncedBoot = b.boot
	}
	if st, err := os.Stat(s.path); err == nil {
		rec.MTimeNS = st.ModTime().UnixNano()
	}
	b.hmu.Lock()
	for i := range rec.Sources {
		rec.Sources[i].XXH3 = b.hashes[rec.Sources[i].Name]
	}
	b.hmu.Unlock()
	b.rmu.Lock()
	defer b.rmu.Unlock()
	b.records[rec.Path] = rec
	b.res.Built = append(b.res.Built, rec.Path)
	b.opt.Progress.ItemDone()
	return b.appendJournal(rec)
}

// fileHashes returns the header and data hashes of a complete target: those
// computed as it was written (sink.writeAt), or, should they be missing (a
// region whose bytes were not all written exactly once, or xxh3s.Region
// unusable with this xxh3), those of the file read back.
func (b *builder) fileHashes(s *sink) (header, data string, err error) {
	d, ok := s.data.Sum64()
	if ok && b.hooks.hashMode == hashStreamed {
		return s.hdrHash, cache.HexHash(d), nil
	}
	if b.hooks.readBack != nil {
		b.hooks.readBack(s.af.Name())
	}
	hh, h, mapped := hashOwnFile(s.af.File, int64(s.hdr.DataOffset), s.hdr.FileSize())
	if !mapped {
		if hh, h, err = cache.HashFile(s.af, int64(s.hdr.DataOffset), s.hdr.FileSize()); err != nil {
			return "", "", fmt.Errorf("hashing %s: %w", s.af.Name(), err)
		}
	}
	if b.hooks.hashMode == hashCompare && (!ok || hh != s.hdrHash || h != cache.HexHash(d)) {
		return "", "", fmt.Errorf("target %s: internal error: hashes as written %s/%016x (%v), read back %s/%s", s.e.Target, s.hdrHash, d, ok, hh, h)
	}
	return hh, h, nil
}

func (b *builder) abortAll() {
	for _, s := range b.todo {
		s.abort()
	}
	if b.journal != nil {
		b.journal.Close()
	}
}

// removeTemps deletes temporary files that an interrupted build or unpack
// left under root (".<name>.tmp-*" files and ".unpack-*" directories).
func removeTemps(root string) error {
	var del []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := d.Name()
		if p != root && cache.IsTempName(n) {
			del = append(del, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scanning %s: %w", root, err)
	}
	for _, p := range del {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("removing leftover %s: %w", p, err)
		}
	}
	return nil
}

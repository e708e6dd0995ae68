package build

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
)

// readOld collects the records of this cache folder's earlier build: its
// manifest, its journal (an interrupted build) and, from ckpt versions that
// kept one manifest at the cache root, a root manifest for this folder.
// Records outside the folder are ignored, so a build never removes files of
// another folder.
func (b *builder) readOld() error {
	b.old = map[string]cache.FileRecord{}
	b.fromArchive = map[string]bool{}
	keep := func(fs []cache.FileRecord) {
		for _, f := range fs {
			if cache.UnderDir(f.Path, b.plan.CacheDir) {
				b.old[f.Path] = f
			}
		}
	}
	if m, err := cache.ReadManifest(b.out); err == nil && m.CacheDir == b.plan.CacheDir {
		keep(m.Files)
		b.legacy = true
	}
	b.oldNF = map[string]ckpt.NonFinite{}
	if m, err := cache.ReadManifest(b.dir); err == nil && m.CacheDir == b.plan.CacheDir {
		keep(m.Files)
		if m.Unpacked != nil {
			// The files came out of an archive: its manifest's word
			// about their sources is not proof. They are rebuilt.
			b.unpacked = m.Unpacked
			for _, f := range m.Files {
				b.fromArchive[f.Path] = true
			}
		}
		for _, nf := range m.NonFinite {
			b.oldNF[nf.Tensor] = nf
		}
		b.oldNaN = NaN(m.NaN)
		if m.Source != b.plan.Source {
			b.res.Replaced = m.Source
		}
		if m.Part != "" && m.Companion != "" && m.Companion != b.plan.Companion {
			// Another model's vision part: does it stay that model's?
			if tm, err := cache.ReadManifest(filepath.Join(b.out, filepath.FromSlash(m.Companion))); err == nil && tm.Companion == b.plan.CacheDir &&
				!cache.SamePart(tm, b.plan.Mesh.String(), b.plan.Device, b.plan.Source, b.plan.Variant, b.plan.MainProfile) {
				b.res.PartOf = m.Companion
			}
		}
	}
	jr, err := cache.ReadJournal(b.dir)
	if err != nil {
		return err
	}
	keep(jr)
	return nil
}

// dropLegacy removes a root manifest of this folder (an older layout)
// once the folder has its own.
func (b *builder) dropLegacy() {
	if b.legacy {
		os.Remove(filepath.Join(b.out, cache.ManifestName))
	}
}

// findUnknown lists the files of the cache folder that this build neither
// wrote nor kept: they are reported, never removed.
func (b *builder) findUnknown() error {
	err := filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		r := cache.RelPath(b.out, p)
		if _, ok := b.records[r]; ok || ownFile(b.dir, p) {
			return nil
		}
		b.res.Unknown = append(b.res.Unknown, r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("scanning %s: %w", b.dir, err)
	}
	sort.Slice(b.res.Unknown, func(i, j int) bool { return ckpt.NaturalLess(b.res.Unknown[i], b.res.Unknown[j]) })
	return nil
}

// ownFile reports whether p is the manifest, journal or lock of the cache
// folder dir, or a temporary file.
func ownFile(dir, p string) bool {
	switch p {
	case filepath.Join(dir, cache.ManifestName), filepath.Join(dir, cache.JournalName), filepath.Join(dir, cache.LockName):
		return true
	}
	return cache.IsTempName(filepath.Base(p))
}

// interrupted turns an error of a cancelled build into
// *ckpt.InterruptedError counting the files finished (they are journaled:
// the next build resumes).
func (b *builder) interrupted(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	b.rmu.Lock()
	done := len(b.records)
	b.rmu.Unlock()
	return &ckpt.InterruptedError{Done: done, Total: len(b.plan.Entries), Unit: "files", Resumable: true, Err: err}
}

package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/mapping"
	"golang.org/x/sync/errgroup"
)

func (b *builder) ident(t *ckpt.Tensor) cache.SourceRecord {
	r, ok := b.idents[t.Name]
	if !ok {
		r = cache.Identity(t)
		b.idents[t.Name] = r
	}
	return r
}

// prepare decides which entries to build and creates their sinks.
func (b *builder) prepare(ctx context.Context) error {
	if err := b.readOld(); err != nil {
		return err
	}
	b.records = map[string]cache.FileRecord{}
	type cand struct {
		e   *mapping.Entry
		hdr *tensorbin.Header
		rec cache.FileRecord
	}
	var cands []cand
	var builds []cand
	rehash := map[string]*ckpt.Tensor{}
	for _, e := range b.plan.Entries {
		if err := cache.CheckRelPath(e.File); err != nil {
			return fmt.Errorf("target %s: %w", e.Target, err)
		}
		hdr, err := cache.HeaderFor(e)
		if err != nil {
			return err
		}
		rec := cache.FileRecord{Path: e.File, Target: e.Target, Size: hdr.FileSize(), HeaderSize: hdr.HeaderSize,
			EntryXXH3: cache.EntryHash(e), Entry: cache.EntrySummaryOf(e)}
		for _, t := range cache.EntryTensors(e) {
			rec.Sources = append(rec.Sources, b.ident(t))
		}
		c := cand{e, hdr, rec}
		old, ok := b.old[e.File]
		if b.fromArchive[e.File] {
			b.res.FromArchive = append(b.res.FromArchive, e.File)
		}
		if b.opt.Force || !ok || b.fromArchive[e.File] || !b.outputIntact(old, rec, hdr) || b.recheckFinite(rec) {
			builds = append(builds, c)
			continue
		}
		for i, s := range rec.Sources {
			if i >= len(old.Sources) || !cache.SameIdentity(old.Sources[i], s) {
				t, _ := b.c.Lookup(s.Name)
				rehash[s.Name] = t
			}
		}
		cands = append(cands, c)
	}
	// Hash sources whose cheap identity changed.
	if err := b.hashAll(ctx, rehash); err != nil {
		return err
	}
	b.res.Rehashed = len(rehash)
	for _, c := range cands {
		old := b.old[c.e.File]
		same := true
		for i, s := range c.rec.Sources {
			h := old.Sources[i].XXH3
			if _, ok := rehash[s.Name]; ok {
				h = b.hashes[s.Name]
			}
			if h != old.Sources[i].XXH3 || h == "" {
				same = false
			}
			c.rec.Sources[i].XXH3 = h
		}
		if !same {
			builds = append(builds, c)
			continue
		}
		c.rec.HeaderXXH3, c.rec.DataXXH3, c.rec.MTimeNS = old.HeaderXXH3, old.DataXXH3, old.MTimeNS
		if err := b.keepUnsynced(&c.rec, old); err != nil {
			return err
		}
		b.records[c.e.File] = c.rec
		b.res.Skipped = append(b.res.Skipped, c.e.File)
	}
	// Scales are small: hash them up front.
	scales := map[string]*ckpt.Tensor{}
	for _, c := range builds {
		for _, s := range c.e.Sources {
			if s.Scale != nil {
				if _, ok := b.hashes[s.Scale.Name]; !ok {
					scales[s.Scale.Name] = s.Scale
				}
			}
		}
	}
	if err := b.hashAll(ctx, scales); err != nil {
		return err
	}
	if err := b.checkScales(scales); err != nil {
		return err
	}
	for _, c := range builds {
		b.need += c.rec.Size
	}
	b.files = len(builds)
	sort.Slice(builds, func(i, j int) bool { return ckpt.NaturalLess(builds[i].e.File, builds[j].e.File) })
	for _, c := range builds {
		s, err := newSink(c.e, c.hdr, filepath.Join(b.out, filepath.FromSlash(c.e.File)), b.nan)
		if err != nil {
			return err
		}
		s.rec = c.rec
		s.noSync = b.opt.NoSync
		s.budget, s.pool = &b.winBudget, &b.winPool
		b.todo = append(b.todo, s)
	}
	sort.Strings(b.res.Skipped)
	return nil
}

// outputIntact reports whether a previously built file can be kept as far
// as the output goes: same plan entry, file present with the recorded
// size, and a header that parses and matches the plan.
func (b *builder) outputIntact(old, rec cache.FileRecord, hdr *tensorbin.Header) bool {
	if old.EntryXXH3 != rec.EntryXXH3 || old.Size != rec.Size || old.DataXXH3 == "" || old.HeaderXXH3 == "" || len(old.Sources) != len(rec.Sources) {
		return false
	}
	p := filepath.Join(b.out, filepath.FromSlash(old.Path))
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() != rec.Size || st.ModTime().UnixNano() != old.MTimeNS {
		return false
	}
	got, err := tensorbin.ReadTensorbinFile(p)
	if err != nil || cache.DiffHeaders(hdr, got) != "" {
		return false
	}
	if old.UnsyncedBoot != "" && !b.sameBoot(old.UnsyncedBoot) {
		// Written without fsync before a reboot, which may have been a
		// power loss: kept only if its bytes are still the recorded ones.
		f, err := os.Open(p)
		if err != nil {
			return false
		}
		defer f.Close()
		hh, hd, err := cache.HashFile(f, int64(hdr.DataOffset), rec.Size)
		return err == nil && hh == old.HeaderXXH3 && hd == old.DataXXH3
	}
	return true
}

// keepUnsynced carries the unsynced mark of a kept file into its new
// record: gone when a later boot found the file intact (outputIntact),
// kept when this build writes without fsync too, and removed after an
// fsync of the file when this build is durable.
func (b *builder) keepUnsynced(rec *cache.FileRecord, old cache.FileRecord) error {
	rec.UnsyncedBoot = ""
	if old.UnsyncedBoot == "" || !b.sameBoot(old.UnsyncedBoot) {
		return nil
	}
	if b.opt.NoSync {
		rec.UnsyncedBoot = old.UnsyncedBoot
		return nil
	}
	p := filepath.Join(b.out, filepath.FromSlash(old.Path))
	f, err := os.Open(p)
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return &atomicfile.WriteError{Op: "syncing", Path: p, Err: err}
	}
	return nil
}

func (b *builder) hashAll(ctx context.Context, ts map[string]*ckpt.Tensor) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(b.opt.Workers)
	for name, t := range ts {
		if t == nil {
			continue // gone from the checkpoint: the entry no longer maps
		}
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			h, err := cache.HashTensor(t, nil)
			if err != nil {
				return err
			}
			b.hmu.Lock()
			b.hashes[name] = h
			b.hmu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// startJournal removes the manifest, removes files of the previous build
// that the plan no longer has, and starts a journal holding the kept
// records.
func (b *builder) startJournal() error {
	inPlan := map[string]bool{}
	for _, e := range b.plan.Entries {
		inPlan[e.File] = true
	}
	if err := os.Remove(filepath.Join(b.dir, cache.ManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing old manifest: %w", err)
	}
	if err := atomicfile.SyncDir(b.dir); err != nil {
		return err
	}
	for p := range b.old {
		if !inPlan[p] {
			if err := os.Remove(filepath.Join(b.out, filepath.FromSlash(p))); err == nil {
				b.res.Removed = append(b.res.Removed, p)
			}
		}
	}
	sort.Strings(b.res.Removed)
	// A new journal, never written through whatever is at its name (a
	// link to a file elsewhere would be truncated by os.Create).
	jp := filepath.Join(b.dir, cache.JournalName)
	if err := os.Remove(jp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &atomicfile.WriteError{Op: "removing old build journal", Err: err}
	}
	f, err := os.OpenFile(jp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &atomicfile.WriteError{Op: "creating build journal", Err: err}
	}
	b.journal = f
	for _, p := range b.res.Skipped {
		if err := b.appendJournal(b.records[p]); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) appendJournal(r cache.FileRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := b.journal.Write(append(line, '\n')); err != nil {
		return &atomicfile.WriteError{Op: "writing build journal", Err: err}
	}
	return nil
}

// syncJournal makes the journal durable (unless NoSync: the files it
// lists are not either).
func (b *builder) syncJournal() error {
	if b.opt.NoSync {
		return nil
	}
	if err := b.journal.Sync(); err != nil {
		return &atomicfile.WriteError{Op: "syncing build journal", Err: err}
	}
	return nil
}

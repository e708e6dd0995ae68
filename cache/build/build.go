package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"golang.org/x/sync/errgroup"
)

// WriteOptions tune Write.
type WriteOptions struct {
	// Workers is the number of conversion goroutines (default: GOMAXPROCS).
	Workers int
	// Progress counts source bytes streamed and files finished (nil-safe).
	Progress *ckpt.Progress
	// Tool and ToolVersion are recorded in the manifest.
	Tool, ToolVersion string
	// Force rebuilds every file even when its sources and plan entry are
	// unchanged.
	Force bool
	// BandBytes is the float32 size of one band of source rows that a
	// worker converts at a time (default 8 MiB; bands of FP8 codes that go
	// straight to tiles hold at most 2 MiB). Memory use is about
	// 6 × BandBytes per worker plus partially filled tile columns, plus
	// at most 24 × BandBytes of write windows.
	BandBytes int64
	// AllowNonFinite builds from source tensors that hold NaN or Inf
	// (recorded in the manifest); by default such a tensor fails the build
	// with *ckpt.NonFiniteError.
	AllowNonFinite bool
	// NaN is the bit pattern a NaN gets where the serving host's torch
	// produces one (a float32 → bfloat16 cast, the bf16 dequantisation of
	// block-FP8 weights, bf16 arithmetic such as the norms' +1): NaNVector
	// ("" too) or NaNScalar. A NaN of a bfloat16 source that no arithmetic
	// touches keeps its bits either way. Only matters with AllowNonFinite.
	NaN string
	// NoSync leaves the written files to the kernel's write-back instead
	// of fsyncing each one before its rename (as the serving stack writes
	// its own cache). Every file still appears under its name only when
	// complete, and the manifest is still written last and synced, but a
	// power loss or kernel crash shortly after the build can leave files
	// whose contents never reached the disk; check.Files's data check (it
	// hashes every file) finds them. The build then runs at the speed of
	// the page cache instead of the disk's.
	NoSync bool
	// NoSpaceCheck skips the check, before anything is written, that the
	// file system of the cache folder has room for the files to build
	// (their sizes are known from the plan); by default a build that does
	// not fit fails at once with *NoSpaceError (a *ckpt.WriteError).
	NoSpaceCheck bool
	// FreeSpace is the bytes available to the build in a directory (nil:
	// the file system's, by statfs; -1 when unknown, which skips the check).
	FreeSpace func(dir string) (int64, error)
}

// hooks are the tests' hooks into a build (export_test.go gives the tests
// write with them); Write passes none.
type hooks struct {
	// hashMode: how finished files are hashed (hashStreamed by default);
	// readBack, when set, is called with the temporary file of each file
	// hashed by reading it back.
	hashMode hashMode
	readBack func(path string)
	// noDirect: every write through the page cache, as where the file
	// system refuses direct writes; stageBytes and stageChunk (when > 0):
	// the staging budget and chunk size (stage.go).
	noDirect               bool
	stageBytes, stageChunk int64
	// stageStats, when set, gets the bytes the staged files wrote
	// directly and through the page cache.
	stageStats func(direct, paged int64)
}

type hashMode int

const (
	// hashStreamed: the hashes computed as the file was written; the file
	// is read back only when they are missing.
	hashStreamed hashMode = iota
	// hashCompare: both, and a difference fails the build.
	hashCompare
	// hashReadBack: the file read back only.
	hashReadBack
)

// windowBudget is the memory the sinks' write windows may hold at once:
// 24 bands' worth (192 MiB at the default BandBytes).
func (o WriteOptions) windowBudget() int64 {
	return 24 * o.BandBytes
}

// Written says what a build did. Paths are relative to the cache root.
type Written struct {
	Manifest *cache.Manifest
	Built    []string
	Skipped  []string
	Removed  []string
	// Streamed source tensors (weights) and their elements and raw bytes.
	SourceTensors  int
	SourceElements int64
	SourceBytes    int64
	// Rehashed counts source tensors whose cheap identity changed and that
	// were hashed to decide whether their files are still current.
	Rehashed int
	// Unknown lists files in the cache folder that neither this build's
	// plan nor its earlier build recorded: they are left alone.
	Unknown []string
	// StaleLock is the holder of a lock that was taken over because that
	// process no longer runs.
	StaleLock *cache.LockInfo
	// Replaced is the source of the earlier build in this cache folder
	// when it differs from this build's source.
	Replaced string
	// PartOf is the main folder (still there, naming this folder) whose
	// vision part the earlier build of this vision folder was, when this
	// build's part is not the one that folder's build wrote (another
	// mesh, device, source, variant or profile: cache.SamePart): one
	// device folder has one vision folder, so that model has none of its
	// own now.
	PartOf string
	// NonFinite lists the source tensors with NaN or Inf values (only
	// with AllowNonFinite; also in the manifest).
	NonFinite []ckpt.NonFinite
	// FromArchive lists the planned files that an unpacked manifest
	// (cache.Unpacked) described: each was rebuilt from the source
	// instead of being kept on the archive's word; Unpacked is that mark.
	FromArchive []string
	Unpacked    *cache.Unpacked
}

// Write executes a mapping plan: it writes every entry's .tensorbin file
// under the cache root `out` (entry File paths are relative to it, inside
// the plan's cache folder out/<device>/tensor_cache_<tag>_mesh<R>x<C>) and
// finally the folder's manifest.json. Other cache folders of the root are
// never touched; inside its folder a build removes only files that its own
// earlier build recorded and reports files it does not know (Unknown). It
// holds the folder's lock (cache.LockFolder) while it runs and returns
// *cache.LockedError when another process holds it.
//
// Each source tensor that a file to build needs is streamed once, in bands
// of rows, and every band is cut into the pieces of every target and shard
// that use it. A block-FP8 weight whose targets are transposed block-float
// tiles goes from its F8_E4M3 codes straight to tiles (tile.
// EncodeFP8Transposed); other values are decoded to bfloat16 bits or
// float32 first (FP8 dequantised, then the entry's value ops, e.g. bf16
// rounding). Targets are written at computed offsets into a temporary
// file (tile positions are known in advance), gathered in write windows
// where their tiles arrive column by column. Every write is hashed as it
// is made (xxh3s.Region: the manifest's header and data hashes come from
// the written bytes, none of the output is read back); a finished file is
// fsynced (unless NoSync) and renamed into place, and the manifest is
// written last, atomically. Memory stays bounded by the band size and the
// windows' budget, not by tensor sizes.
//
// A rebuild skips a file when its plan entry is unchanged, the file exists
// with the recorded size and mtime and a header matching the plan, and each of its
// source tensors has the recorded cheap identity (file name, size and
// mtime, tensor offset, dtype, shape) — or, when the identity changed, the
// same xxh3 of its raw bytes. Source tensors are only re-read for hashing
// when their identity changed.
//
// Crash safety: a build that changes anything first removes the manifest
// (a cache without one never verifies), writes finished files through
// temporary names, and records them in a journal (cache.JournalName) so that the
// next build resumes instead of starting over.
func Write(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, out string, opt WriteOptions) (*Written, error) {
	return write(ctx, c, plan, out, opt, hooks{})
}

// write is Write with the tests' hooks.
func write(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, out string, opt WriteOptions, h hooks) (*Written, error) {
	b, err := open(ctx, c, plan, out, opt)
	if err != nil {
		return nil, err
	}
	b.hooks = h
	defer b.close()
	if err := checkSpace(b.opt, b); err != nil {
		return nil, err
	}
	return b.run(ctx)
}

// open does what a build does before it writes a file: it refuses an
// output the policy refuses, creates and locks the cache folder, reads the
// earlier build and decides what to build (prepare). The builder holds the
// folder's lock until close. checkSpace, then run, build it.
func open(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, out string, opt WriteOptions) (*builder, error) {
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.BandBytes <= 0 {
		opt.BandBytes = 8 << 20
	}
	nan, err := NaNBits(opt.NaN)
	if err != nil {
		return nil, err
	}
	if opt.NaN == "" {
		opt.NaN = NaNVector
	}
	if err := cache.CheckRelPath(plan.CacheDir); err != nil {
		return nil, fmt.Errorf("cache folder: %w", err)
	}
	// The output policy (atomicfile.Place): a directory or a new name,
	// never a file, a device or anything else; and never a root holding a
	// checkpoint (source and output swapped) or whose cache folder holds
	// files the build reads.
	if _, err := atomicfile.Place(out, atomicfile.Policy{Flag: "--out", Dir: true}); err != nil {
		return nil, err
	}
	if err := checkOutRoot(out); err != nil {
		return nil, err
	}
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	if err := checkFolderInputs(dir, c); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &ckpt.WriteError{Op: "creating cache folder", Err: err}
	}
	lock, err := cache.LockFolder(dir)
	if err != nil {
		return nil, err
	}
	if err := removeTemps(dir); err != nil {
		lock.Release()
		return nil, err
	}
	b := &builder{c: c, plan: plan, out: out, dir: dir, opt: opt, lock: lock, res: &Written{StaleLock: lock.Stale}, idents: map[string]cache.SourceRecord{}, hashes: map[string]string{},
		guard: &ckpt.FiniteGuard{Allow: opt.AllowNonFinite, Action: "build a cache from it"}, nan: nan}
	b.winBudget.Store(opt.windowBudget())
	b.boot = bootID()
	if err := b.prepare(ctx); err != nil {
		lock.Release()
		return nil, err
	}
	b.res.Unpacked = b.unpacked
	return b, nil
}

// close releases the cache folder's lock.
func (b *builder) close() { b.lock.Release() }

// run builds what prepare decided: the journal, the files, the manifest.
func (b *builder) run(ctx context.Context) (*Written, error) {
	opt := b.opt
	if !opt.NoSync && !b.hooks.noDirect && probeDirect(b.dir) {
		b.stager = newStager(stageBudget(opt, b.hooks), b.hooks.stageChunkSize())
		for _, s := range b.todo {
			// A file is staged for direct writes when its image fills up
			// as it is written, or is small enough to be held whole
			// (tiles that come column by column complete no chunk before
			// the end).
			if s.kind != kindTransposed || s.hdr.FileSize() <= stageMaxFile {
				s.staged, s.stager = true, b.stager
			}
		}
	}
	if err := b.startJournal(); err != nil {
		return nil, err
	}
	if b.stager != nil {
		defer func() {
			b.stager.close()
			if b.hooks.stageStats != nil {
				b.hooks.stageStats(b.stager.direct.Load(), b.stager.paged.Load())
			}
		}()
	}
	if err := b.stream(ctx); err != nil {
		b.abortAll()
		return nil, b.interrupted(ctx, err)
	}
	return b.finish()
}

type builder struct {
	c    *ckpt.Checkpoint
	plan *mapping.Plan
	out  string // the cache root
	dir  string // the cache folder
	opt  WriteOptions
	// hooks are the tests' (none from Write).
	hooks hooks
	res   *Written
	lock  *cache.Lock // the cache folder's, held from open to close
	// need and files are the bytes and the number of the files to build
	// (prepare), what checkSpace holds against the free space.
	need  int64
	files int

	idents map[string]cache.SourceRecord // cheap identity by tensor name
	hashes map[string]string             // known xxh3 by tensor name (this build)
	hmu    sync.Mutex

	old     map[string]cache.FileRecord // previous records by path
	records map[string]cache.FileRecord // records of this build by path
	rmu     sync.Mutex
	todo    []*sink
	journal *os.File
	commits chan<- *sink
	legacy  bool // a root manifest of an older layout describes this folder
	guard   *ckpt.FiniteGuard
	// winBudget is the memory left for the sinks' write windows.
	winBudget atomic.Int64
	winPool   bufPool
	// stager stages the files of a durable build for direct writes
	// (stage.go; nil: every write goes through the page cache).
	stager *stager
	boot   string                    // bootID(), for UnsyncedBoot
	oldNF  map[string]ckpt.NonFinite // NaN/Inf counts the earlier build recorded
	oldNaN string                    // the NaN style of the earlier build (manifest)
	// fromArchive are the files of an unpacked manifest (cache.Unpacked):
	// never kept as unchanged.
	fromArchive map[string]bool
	unpacked    *cache.Unpacked
	nan         uint16 // bits of the NaNs the conversion produces (WriteOptions.NaN)
}

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
			EntryXXH3: cache.EntryHash(e), Entry: cache.Summarize(e)}
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

// NoSpaceError says the file system of a cache folder has less room than
// the files a build would write: of a vision model, the files of both its
// folders when they share the file system (Also names the other folder).
type NoSpaceError struct {
	Dir         string
	Also        []string // the other folders on Dir's file system whose files are counted in
	Files       int
	Need, Avail int64
}

func (e *NoSpaceError) Error() string {
	where := e.Dir
	if len(e.Also) > 0 {
		where = fmt.Sprintf("%s (for it and %s, one file system: the model's folders are built together)", e.Dir, strings.Join(e.Also, ", "))
	}
	return fmt.Sprintf("not enough free space in %s: the build writes %d file(s), %s (%d bytes), and %s (%d bytes) is available; free some, or pass --no-space-check",
		where, e.Files, ckpt.FormatBytes(e.Need), e.Need, ckpt.FormatBytes(e.Avail), e.Avail)
}

// checkSpace refuses builds (a model's folders: its main part and its
// vision part) that their cache folders' file systems have no room for,
// before anything is written: the files of folders on one file system
// (cache.SameFileSystem) are counted together. A rebuilt file is written
// beside the old one and renamed over it, so the old files' space is not
// counted as free.
func checkSpace(opt WriteOptions, bs ...*builder) error {
	if opt.NoSpaceCheck {
		return nil
	}
	free := opt.FreeSpace
	if free == nil {
		free = freeSpace
	}
	type pool struct {
		dirs  []string
		need  int64
		files int
	}
	var pools []*pool
	for _, b := range bs {
		if b.need == 0 {
			continue
		}
		var in *pool
		for _, p := range pools {
			if cache.SameFileSystem(p.dirs[0], b.dir) {
				in = p
				break
			}
		}
		if in == nil {
			in = &pool{}
			pools = append(pools, in)
		}
		in.dirs = append(in.dirs, b.dir)
		in.need += b.need
		in.files += b.files
	}
	for _, p := range pools {
		avail, err := free(p.dirs[0])
		if err != nil || avail < 0 {
			continue // unknown: the writes say what fails
		}
		if avail < p.need {
			return &ckpt.WriteError{Op: "checking free space", Err: &NoSpaceError{Dir: p.dirs[0], Also: p.dirs[1:], Files: p.files, Need: p.need, Avail: avail}}
		}
	}
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
		return &ckpt.WriteError{Op: "syncing", Path: p, Err: err}
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
		return &ckpt.WriteError{Op: "removing old build journal", Err: err}
	}
	f, err := os.OpenFile(jp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &ckpt.WriteError{Op: "creating build journal", Err: err}
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
		return &ckpt.WriteError{Op: "writing build journal", Err: err}
	}
	return nil
}

// srcState is one streamed source tensor.
type srcState struct {
	t      *ckpt.Tensor
	v      *ckpt.Values
	flat   bool // read as ckpt.Matrix (Entry.Flat), not stacked
	bands  int
	hasher *xxh3s.Hasher
	hashed int
	sum    string
	mu     sync.Mutex
	uses   []use
	// roundFirst: every target using this source rounds to bf16 first, so
	// values may be decoded already rounded (see readBand).
	roundFirst bool
	// codesOnly: every use is direct, so bands are not decoded at all.
	codesOnly bool
	// scan: the float32 values read may overflow the bf16 rounding
	// (F32/F64 sources, nonfinite.go).
	scan bool
}

// use is a contiguous run of a source's rows that lands in one shard of
// one target: source rows [row, row+rows), columns from col, block row
// block.
type use struct {
	s                     *sink
	shard                 int
	row, rows, block, col int64
	// at and width: the block columns the run fills (a piece beside
	// others, mapping.Piece); width is the block's for a full-width piece.
	at, width int64
	// direct: the target's tiles are encoded straight from the band's
	// F8_E4M3 codes (sink.putFP8).
	direct bool
}

// directFP8 reports whether u can take the codes of a block-FP8 source v
// on the bits path: a transposed block-float target with nothing to apply
// after the bf16 rounding, whose tiles each lie in one scale block and
// start on whole tiles of both the source and the block (only the block's
// last tile column and tile row may be ragged).
func (u use) directFP8(v *ckpt.Values) bool {
	s := u.s
	const d = tile.TileDim
	return s.kind == kindTransposed && (s.dt == tile.BFLOAT8_B || s.dt == tile.BFLOAT4_B) && len(s.opsFor(true)) == 0 &&
		v.BM%d == 0 && v.BN%d == 0 && u.row%d == 0 && u.col%d == 0 && u.block%d == 0 &&
		(u.rows%d == 0 || u.block+u.rows == int64(s.rows))
}

type job struct {
	src        *srcState
	r0, n      int64
	prev, mine chan struct{}
	pre        *prefetched // the band's raw bytes read ahead (nil: readBand reads them)
}

// stream reads every needed source once and feeds the sinks.
func (b *builder) stream(ctx context.Context) error {
	srcs, err := b.sources()
	if err != nil {
		return err
	}
	// Zero-sized targets are complete at once, and so are those whose
	// zero pieces fill them (shards of padding alone are written now).
	for _, s := range b.todo {
		done, err := s.flushZeroShards()
		if err != nil {
			return err
		}
		if done || s.remaining.Load() == 0 {
			if err := b.finalize(s); err != nil {
				return err
			}
		}
	}
	for _, st := range srcs {
		b.res.SourceTensors++
		b.res.SourceElements += int64(st.t.Numel())
		b.res.SourceBytes += int64(st.t.NBytes())
		b.opt.Progress.AddTotal(int64(st.t.NBytes()))
	}
	// Finished targets are fsynced and renamed by committers, so
	// that conversion never waits for the disk.
	commits := make(chan *sink, 4096)
	var cg errgroup.Group
	var cerrOnce sync.Once
	var cerr error
	for range 2 {
		cg.Go(func() error {
			for s := range commits {
				if err := b.finalize(s); err != nil {
					cerrOnce.Do(func() { cerr = err })
				}
			}
			return nil
		})
	}
	// A durable build starts each file's write-back as it goes (sink.kick).
	var kg sync.WaitGroup
	kick := make(chan *os.File, 4)
	if !b.opt.NoSync {
		for _, s := range b.todo {
			if !s.staged {
				s.kick = kick
			}
		}
	}
	kg.Go(func() {
		for f := range kick {
			startWriteback(f)
		}
	})
	defer func() {
		close(kick)
		kg.Wait()
	}()
	g, ctx := errgroup.WithContext(ctx)
	b.commits = commits
	// feed -> read-ahead (prefetch.go) -> workers: the jobs queue holds
	// the bands read ahead, in order.
	fed := make(chan job)
	jobs := make(chan job, 256)
	pf := newPrefetcher()
	g.Go(func() error {
		defer close(fed)
		return b.feed(ctx, srcs, fed)
	})
	g.Go(func() error {
		defer close(jobs)
		for j := range fed {
			if st := j.src; st.bitsPath() != "" {
				if j.pre = pf.start(ctx, st, j.r0, j.n); j.pre == nil {
					return ctx.Err()
				}
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				if j.pre != nil {
					pf.release(j.pre)
				}
				return ctx.Err()
			}
		}
		return nil
	})
	go func() { // a read-ahead waiting for budget sees a failed build
		<-ctx.Done()
		pf.wake()
	}()
	for range b.opt.Workers {
		g.Go(func() error {
			w := &worker{}
			for j := range jobs {
				err := b.runJob(ctx, w, j)
				if j.pre != nil {
					w.pre = nil
					pf.release(j.pre)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	err = g.Wait()
	for j := range jobs { // the bands read ahead for workers that stopped
		if j.pre != nil {
			pf.release(j.pre)
		}
	}
	pf.close()
	close(commits)
	cg.Wait()
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	for _, s := range b.todo {
		if n := s.remaining.Load(); n != 0 {
			return fmt.Errorf("target %s: internal error: %d values were never written", s.e.Target, n)
		}
	}
	return nil
}

// feed sends the jobs of every source band by band: the sources of a
// group (groupSources) advance together, in proportion to their rows.
func (b *builder) feed(ctx context.Context, srcs []*srcState, jobs chan<- job) error {
	for _, grp := range groupSources(srcs) {
		// Sources that fill the same targets advance together, band
		// by band in proportion to their rows, so that a target's
		// tiles from several sources (a tile-interleaved [gate|up])
		// complete its write windows close in time.
		type cursor struct {
			st       *srcState
			band, r0 int64
			prev     chan struct{}
		}
		var cs []*cursor
		for _, st := range grp {
			band := b.bandRows(st)
			st.bands = int((st.v.Rows + band - 1) / band)
			if st.bands == 0 {
				st.sum = cache.HexHash(st.hasher.Sum64())
				continue
			}
			prev := make(chan struct{})
			close(prev)
			cs = append(cs, &cursor{st: st, band: band, prev: prev})
		}
		for {
			var c *cursor
			for _, x := range cs {
				if x.r0 < x.st.v.Rows && (c == nil || x.r0*c.st.v.Rows < c.r0*x.st.v.Rows) {
					c = x
				}
			}
			if c == nil {
				break
			}
			mine := make(chan struct{})
			select {
			case jobs <- job{src: c.st, r0: c.r0, n: min(c.band, c.st.v.Rows-c.r0), prev: c.prev, mine: mine}:
			case <-ctx.Done():
				return ctx.Err()
			}
			c.prev, c.r0 = mine, c.r0+c.band
		}
	}
	return nil
}

// sources collects the source tensors that the sinks to build read, each
// with its uses (the runs of its rows that land in a target's shard) and
// how its bands are decoded, in file order.
func (b *builder) sources() ([]*srcState, error) {
	srcs, err := b.collectUses()
	if err != nil {
		return nil, err
	}
	for _, st := range srcs {
		st.roundFirst = true
		for _, u := range st.uses {
			st.roundFirst = st.roundFirst && len(u.s.vops) > 0 && u.s.vops[0].Kind == mapping.ElemRound
		}
		if err := b.checkOverflow(st); err != nil {
			return nil, err
		}
		if st.bitsPath() == numfmt.F8E4M3 {
			st.codesOnly = true
			for i := range st.uses {
				st.uses[i].direct = st.uses[i].directFP8(st.v)
				st.codesOnly = st.codesOnly && st.uses[i].direct
			}
		}
	}
	// A sink with direct uses gets write windows, except those holding a
	// tile column that another use writes its own way (sink.blocked).
	for _, st := range srcs {
		for _, u := range st.uses {
			// A staged file gathers its tiles in its image: no windows.
			u.s.windowed = (u.s.windowed || u.direct) && !u.s.staged
		}
	}
	for _, st := range srcs {
		for _, u := range st.uses {
			if !u.direct && u.s.windowed {
				u.s.block(u.shard, u.block, u.rows)
			}
		}
	}
	// Sources in file order, then offset: sequential reads.
	fileIdx := map[*ckpt.File]int{}
	for i, f := range b.c.Files {
		fileIdx[f] = i
	}
	sort.Slice(srcs, func(i, j int) bool {
		a, c := srcs[i].t, srcs[j].t
		if fileIdx[a.File] != fileIdx[c.File] {
			return fileIdx[a.File] < fileIdx[c.File]
		}
		return a.Offset() < c.Offset()
	})
	return srcs, nil
}

// collectUses makes the state of every source tensor the sinks to build
// read, with its uses, in the order the sinks first need them; it checks
// that every piece fits its source and every shard has the rows it needs.
func (b *builder) collectUses() ([]*srcState, error) {
	bySrc := map[*ckpt.Tensor]*srcState{}
	var srcs []*srcState
	for _, s := range b.todo {
		if s.remaining.Load() == 0 {
			continue
		}
		for sh, pieces := range s.e.Shards {
			placed, block, err := mapping.PlaceBands(pieces, s.e.MatrixCols)
			if err != nil {
				return nil, fmt.Errorf("target %s: shard %d: %w", s.e.Target, sh, err)
			}
			if block != s.e.MatrixRows {
				return nil, fmt.Errorf("target %s: shard %d has %d rows, expected %d", s.e.Target, sh, block, s.e.MatrixRows)
			}
			for _, pp := range placed {
				p := pp.Piece
				if p.Zero {
					continue // zeros from the start (newSink)
				}
				if p.Source < 0 || p.Source >= len(s.e.Sources) {
					return nil, fmt.Errorf("target %s: piece %+v names source %d of %d", s.e.Target, p, p.Source, len(s.e.Sources))
				}
				src := s.e.Sources[p.Source]
				st := bySrc[src.Tensor]
				if st == nil {
					v, err := b.c.Values(src.Tensor) // ckpt.QuantScheme, as the plan
					if err != nil {
						return nil, fmt.Errorf("target %s: %w", s.e.Target, err)
					}
					if !s.e.Flat {
						v = v.Stacked() // the plan's view of the source (ckpt.StackedMatrix)
					}
					st = &srcState{t: src.Tensor, v: v, hasher: xxh3s.New(), flat: s.e.Flat}
					bySrc[src.Tensor] = st
					srcs = append(srcs, st)
				} else if st.flat != s.e.Flat {
					return nil, fmt.Errorf("target %s: %s is read as shape[0] × the rest by one target and as a stack of its last dimension by another",
						s.e.Target, src.Name)
				}
				if p.Row < 0 || p.Col < 0 || p.Row+p.Rows > st.v.Rows || p.Col+p.Cols > st.v.Cols || p.Cols != s.e.MatrixCols && s.kind != kindWhole {
					return nil, fmt.Errorf("target %s: piece %+v does not fit %s (%d x %d)", s.e.Target, p, src.Name, st.v.Rows, st.v.Cols)
				}
				st.uses = append(st.uses, s.uses(sh, p, pp.BlockRow)...)
			}
		}
	}
	return srcs, nil
}

// groupSources splits srcs (in their order) into groups of sources that
// fill a common target, directly or through other members; the groups
// come in the order of their first member.
func groupSources(srcs []*srcState) [][]*srcState {
	parent := make([]int, len(srcs))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	first := map[*sink]int{}
	for i, st := range srcs {
		for _, u := range st.uses {
			if j, ok := first[u.s]; ok {
				if a, b := find(i), find(j); a != b {
					parent[max(a, b)] = min(a, b)
				}
			} else {
				first[u.s] = i
			}
		}
	}
	idx := map[int]int{}
	var groups [][]*srcState
	for i, st := range srcs {
		r := find(i)
		g, ok := idx[r]
		if !ok {
			g = len(groups)
			idx[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], st)
	}
	return groups
}

// codeBandBytes bounds the bands of codesOnly sources.
const codeBandBytes = 2 << 20

type worker struct {
	// raw: the current band's raw bytes (own, or a band read ahead: pre).
	raw []byte
	own []byte
	pre *prefetched
	f32 []float32
	b16 []uint16
	tab []uint16 // per scale block: the bf16 bits of the 256 e4m3 codes × scale
	sc  scratch
}

// bandRows is the number of source rows per band: about BandBytes of
// float32, a multiple of 32 rows and of the FP8 scale block. Bands decoded
// straight to bfloat16 bits (bits) hold four times as many values in about
// the same memory as a float32 band (raw codes, bits and packed output,
// with no float32 copy): fewer, larger writes of transposed targets.
//
// Bands of codes that go straight to tiles (codesOnly) are smaller, about
// codeBandBytes: read, hashed and encoded while they are in the CPU's
// caches (on the bench fixture 2 MiB bands convert 20 % faster than 8 MiB
// ones, and 256 KiB ones 15 % slower).
func (b *builder) bandRows(st *srcState) int64 {
	v, bits := st.v, st.bitsPath() != ""
	bytes := b.opt.BandBytes
	if st.codesOnly {
		bytes = min(bytes, codeBandBytes)
	}
	unit := int64(tile.TileDim)
	if v.BM > 0 && v.BM%unit != 0 && unit%v.BM != 0 {
		unit = v.BM * tile.TileDim
	} else if v.BM > unit {
		unit = v.BM
	}
	per := int64(4)
	if bits {
		per = 1
	}
	rows := bytes / max(v.Cols*per, 1)
	rows = max(rows/unit, 1) * unit
	return max(min(rows, v.Rows), 1)
}

func (b *builder) runJob(ctx context.Context, w *worker, j job) error {
	st := j.src
	w.pre = j.pre
	bd, err := b.readBand(st, j.r0, j.n, w)
	if err != nil {
		return err
	}
	if !bd.checked { // NaN/Inf (nonfinite.go)
		if err := b.guard.Check(st.t, w.raw); err != nil {
			return err
		}
	}
	if st.scan {
		if err := b.scanOverflow(st, w, j.n); err != nil {
			return err
		}
	}
	raw := w.raw
	select {
	case <-j.prev:
	case <-ctx.Done():
		return ctx.Err()
	}
	st.mu.Lock()
	st.hasher.Write(raw)
	st.hashed++
	if st.hashed == st.bands {
		st.sum = cache.HexHash(st.hasher.Sum64())
		b.hmu.Lock()
		b.hashes[st.t.Name] = st.sum
		b.hmu.Unlock()
	}
	st.mu.Unlock()
	close(j.mine)
	b.opt.Progress.Add(int64(len(raw)))
	r1 := j.r0 + j.n
	cols := int(st.v.Cols)
	widened := false
	for _, u := range st.uses {
		a, e := max(j.r0, u.row), min(r1, u.row+u.rows)
		if a >= e {
			continue
		}
		if err := u.s.open(); err != nil {
			return err
		}
		off := (a - j.r0) * st.v.Cols
		var complete bool
		ops := u.s.opsFor(bd.rounded || bd.bf16)
		switch {
		case u.s.kind == kindWhole && u.width != int64(u.s.cols):
			if bd.bf16 && !widened {
				w.f32 = growF(w.f32, len(bd.b16))
				widen(w.f32, bd.b16)
				widened = true
			}
			complete, err = u.s.putWhole(u.shard, int(u.block+a-u.row), int(e-a), w.f32[off:], cols, int(u.col), int(u.at), int(u.width), ops)
		case u.direct:
			complete, err = u.s.putFP8(&w.sc, u.shard, int(u.block+a-u.row), int(e-a), bd.codes[off:], cols, int(u.col), st.v, a)
		case bd.bf16 && len(ops) == 0:
			complete, err = u.s.put16(&w.sc, u.shard, int(u.block+a-u.row), int(e-a), bd.b16[off:], cols, int(u.col))
		default:
			if bd.bf16 && !widened {
				w.f32 = growF(w.f32, len(bd.b16))
				widen(w.f32, bd.b16)
				widened = true
			}
			complete, err = u.s.put(&w.sc, u.shard, int(u.block+a-u.row), int(e-a), w.f32[off:], cols, int(u.col), ops)
		}
		if err != nil {
			u.s.failed.Store(true)
			return fmt.Errorf("target %s: %w", u.s.e.Target, err)
		}
		if complete {
			select {
			case b.commits <- u.s:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return ctx.Err()
}

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

// syncJournal makes the journal durable (unless NoSync: the files it
// lists are not either).
func (b *builder) syncJournal() error {
	if b.opt.NoSync {
		return nil
	}
	if err := b.journal.Sync(); err != nil {
		return &ckpt.WriteError{Op: "syncing build journal", Err: err}
	}
	return nil
}

func (b *builder) abortAll() {
	for _, s := range b.todo {
		s.abort()
	}
	if b.journal != nil {
		b.journal.Close()
	}
}

// finish writes the manifest and removes the journal.
func (b *builder) finish() (*Written, error) {
	profile := b.plan.Profile.Name
	if b.plan.MainProfile != "" {
		profile = b.plan.MainProfile // a vision part: its plan is made from the main profile
	}
	m := &cache.Manifest{Format: cache.ManifestFormat, Tool: b.opt.Tool, ToolVersion: b.opt.ToolVersion, Profile: profile,
		Pinned: b.plan.Profile.Pinned, Mesh: b.plan.Mesh.String(), Settings: b.plan.Settings, Device: b.plan.Device, Tag: b.plan.Profile.Tag,
		CacheDir: b.plan.CacheDir, Part: b.plan.Part, Companion: b.plan.Companion, Source: b.plan.Source, Variant: b.plan.Variant,
		Files: []cache.FileRecord{}, AllowNonFinite: b.opt.AllowNonFinite}
	if b.opt.AllowNonFinite {
		m.NaN = b.opt.NaN
	}
	m.Ignore = cache.IgnoreRecords(b.plan)
	for _, e := range b.plan.Entries {
		r, ok := b.records[e.File]
		if !ok {
			return nil, fmt.Errorf("target %s: internal error: no record", e.Target)
		}
		m.Files = append(m.Files, r)
	}
	m.NonFinite = b.nonFinite(m.Files)
	b.res.NonFinite = m.NonFinite
	if err := b.syncJournal(); err != nil {
		return nil, err
	}
	b.journal.Close()
	if err := cache.WriteManifest(b.dir, m); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(b.dir, cache.JournalName)); err != nil {
		return nil, fmt.Errorf("removing build journal: %w", err)
	}
	if err := atomicfile.SyncDir(b.dir); err != nil {
		return nil, err
	}
	b.dropLegacy()
	if err := b.findUnknown(); err != nil {
		return nil, err
	}
	sort.Strings(b.res.Built)
	b.res.Manifest = m
	return b.res, nil
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

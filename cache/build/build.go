package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/mapping"
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
	NaN NaN
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
	// not fit fails at once with *NoSpaceError (a *atomicfile.WriteError).
	NoSpaceCheck bool
	// FreeSpace is the bytes available to the build in a directory (nil:
	// the file system's, by statfs; -1 when unknown, which skips the check).
	FreeSpace func(dir string) (int64, error)
	// Words are the caller's words for the options (these, and Options.Out)
	// in the refusals and notes that mention them (NoSpaceCheck in
	// *NoSpaceError, AllowNonFinite in the notes of Result.Notes, Out as the Flag of an
	// *atomicfile.RefusedError); nil spells them as Go does.
	Words ckpt.Words
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
	words       ckpt.Words // WriteOptions.Words, for notes
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
	nan, err := opt.NaN.Bits()
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
	// files the build reads. A refusal is an *atomicfile.RefusedError whose
	// Flag is the caller's word for Options.Out (WriteOptions.Words).
	if _, err := atomicfile.Place(out, atomicfile.Policy{Flag: opt.Words.Of("Out"), Dir: true}); err != nil {
		return nil, err
	}
	if err := checkOutRoot(out); err != nil {
		return nil, err
	}
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	if err := checkFolderInputs(dir, c, opt.Words.Of("Out")); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &atomicfile.WriteError{Op: "creating cache folder", Err: err}
	}
	lock, err := cache.LockFolder(dir)
	if err != nil {
		return nil, err
	}
	if err := removeTemps(dir); err != nil {
		lock.Release()
		return nil, err
	}
	b := &builder{c: c, plan: plan, out: out, dir: dir, opt: opt, lock: lock, res: &Written{StaleLock: lock.Stale, words: opt.Words},
		idents: map[string]cache.SourceRecord{}, hashes: map[string]string{},
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
	oldNaN NaN                       // the NaN style of the earlier build (manifest)
	// fromArchive are the files of an unpacked manifest (cache.Unpacked):
	// never kept as unchanged.
	fromArchive map[string]bool
	unpacked    *cache.Unpacked
	nan         uint16 // bits of the NaNs the conversion produces (WriteOptions.NaN)
}

// NoSpaceError says the file system of a cache folder has less room than
// the files a build would write: of a vision model, the files of both its
// folders when they share the file system (Also names the other folder).
type NoSpaceError struct {
	Dir         string
	Also        []string // the other folders on Dir's file system whose files are counted in
	Files       int
	Need, Avail int64
	words       ckpt.Words // the caller's (WriteOptions.Words), for NoSpaceCheck
}

// Error names the output directory (and the folders sharing its file
// system), the bytes needed and the bytes available.
func (e *NoSpaceError) Error() string {
	where := e.Dir
	if len(e.Also) > 0 {
		where = fmt.Sprintf("%s (for it and %s, one file system: the model's folders are built together)", e.Dir, strings.Join(e.Also, ", "))
	}
	return fmt.Sprintf("not enough free space in %s: the build writes %d file(s), %s (%d bytes), and %s (%d bytes) is available; free some, or pass %s",
		where, e.Files, ckpt.FormatBytes(e.Need), e.Need, ckpt.FormatBytes(e.Avail), e.Avail, e.words.Of("NoSpaceCheck"))
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
			return &atomicfile.WriteError{Op: "checking free space", Err: &NoSpaceError{Dir: p.dirs[0], Also: p.dirs[1:], Files: p.files, Need: p.need, Avail: avail,
				words: opt.Words}}
		}
	}
	return nil
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
		m.NaN = string(b.opt.NaN)
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

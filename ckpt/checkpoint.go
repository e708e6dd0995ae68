package ckpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
)

// File is one safetensors file of a checkpoint.
type File struct {
	Name     string // relative to the checkpoint root
	Location string // path or URL for messages
	Size     int64  // the size the header implies (8 + header + data)
	// RealSize is the size of the file as stored. It differs from Size
	// only when Options.Lenient opened a truncated or over-long file; reads
	// past the real end then fail with io.ErrUnexpectedEOF.
	RealSize int64
	Header   *Header
	blob     Blob
}

// Tensor is a tensor of a checkpoint together with the file that holds it.
type Tensor struct {
	TensorInfo
	File *File
}

// Offset is the absolute byte offset of the tensor's data in its file.
func (t *Tensor) Offset() int64 { return t.File.Header.DataStart() + int64(t.Begin) }

// Local reports whether t's bytes are read from a local file (copied out
// of the page cache, or read from the disk) rather than requested over a
// network: a reader may then read in pieces small enough for the CPU's
// cache, where each read of a remote source is a request.
func (t *Tensor) Local() bool {
	_, ok := t.File.blob.(*fileBlob)
	return ok
}

// ReadAt reads raw tensor bytes at off (relative to the tensor's start).
func (t *Tensor) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(t.NBytes())-int64(len(p)) {
		return 0, fmt.Errorf("reading tensor %s of %s: range [%d, %d) outside its %d bytes", Quote(t.Name), t.File.Location, off, off+int64(len(p)), t.NBytes())
	}
	n, err := t.File.blob.ReadAt(p, t.Offset()+off)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) {
		return n, fmt.Errorf("reading tensor %s of %s at byte %d: %w", Quote(t.Name), t.File.Location, t.Offset()+off, err)
	}
	return n, nil
}

// Options tune Open.
type Options struct {
	// Lenient keeps going past integrity problems (missing shards, tensors
	// missing from their shard, a file whose size differs from the size its
	// header implies) and records them in Checkpoint.Issues. Header format
	// errors remain errors.
	Lenient bool
	// Workers bounds concurrent header reads (default 16).
	Workers int
	// Variant selects a variant of a checkpoint directory, as transformers'
	// from_pretrained(variant=NAME) does: model.NAME.safetensors or the
	// index model.safetensors.index.NAME.json (VariantFiles). "" opens the
	// default checkpoint, or a directory's only variant when it has no
	// default (with an IndexVariant warning).
	Variant string
	// Words are the caller's words for the option the IndexVariant warning
	// names ("Variant": the caller's Variant).
	Words Words
}

// Checkpoint is an opened checkpoint: headers, index and config. No tensor
// data is read, except the copies of a tensor stored in more than one
// shard, which are compared (index.tensor_duplicate).
type Checkpoint struct {
	Source string
	Store  Store
	// Entry is the file opened first, relative to the store root: the
	// index (model.safetensors.index.json, or a variant's) or the single
	// .safetensors file.
	Entry   string
	Sharded bool
	Index   *Index  // nil for a single file
	Config  *Config // nil when there is no config.json
	// HFQuantConfig is ModelOpt's hf_quant_config.json beside config.json
	// (nil when absent); see QuantRecipe.
	HFQuantConfig *Config
	Files         []*File
	Tensors       []*Tensor // natural order by name
	// Issues are the integrity problems found while opening (ids
	// "index.*" and, with Options.Lenient, "file.size"): Open fails on those with Status Fail unless
	// Options.Lenient is set; verify reports them all, the other commands
	// print those with Status Warn as warnings.
	Issues    []Finding
	byName    map[string]*Tensor
	ownsStore io.Closer
}

// Lookup returns the tensor named name.
func (c *Checkpoint) Lookup(name string) (*Tensor, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Close closes every open file.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, f := range c.Files {
		if f.blob != nil {
			errs = append(errs, f.blob.Close())
		}
	}
	if c.ownsStore != nil {
		errs = append(errs, c.ownsStore.Close())
	}
	return errors.Join(errs...)
}

// SourceOpener resolves source strings that are not local paths (hf:,
// hf://, https://) to a Store and the entry file within it ("" to detect).
// It returns ok=false for sources it does not handle.
type SourceOpener func(ctx context.Context, src string) (store Store, entry string, ok bool, err error)

// Open opens a checkpoint from a local path: a .safetensors file, or a
// directory with model.safetensors.index.json or a single .safetensors
// file. Use OpenStore for other stores; see also SourceOpener.
func Open(ctx context.Context, src string, opt Options, openers ...SourceOpener) (*Checkpoint, error) {
	for _, op := range openers {
		store, entry, ok, err := op(ctx, src)
		if err != nil {
			return nil, err
		}
		if ok {
			c, err := OpenStore(ctx, store, entry, opt)
			if c != nil {
				c.Source = Redact(src)
				if cl, ok := store.(io.Closer); ok {
					c.ownsStore = cl
				}
			}
			return c, err
		}
	}
	st, err := os.Stat(src)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, below
		}
		return nil, fmt.Errorf("opening %s: %w", Redact(src), err)
	}
	dir, entry := src, ""
	if !st.IsDir() {
		dir, entry = filepath.Dir(src), filepath.Base(src)
	}
	ds, err := NewDirStore(dir)
	if err != nil {
		return nil, err
	}
	c, err := OpenStore(ctx, ds, entry, opt)
	if c == nil {
		ds.Close()
		return nil, err
	}
	c.Source = Redact(src)
	c.ownsStore = ds
	return c, err
}

// OpenStore opens the checkpoint in store. entry names the index or the
// single .safetensors file; "" means detect (the index if present, else the
// store's only .safetensors file).
func OpenStore(ctx context.Context, store Store, entry string, opt Options) (*Checkpoint, error) {
	c := &Checkpoint{Source: store.Location(entry), Store: store, byName: map[string]*Tensor{}}
	var listed []string // the store's files when the entry was detected
	variant := opt.Variant
	if opt.Variant != "" {
		if err := checkVariant(opt.Variant); err != nil {
			return nil, err
		}
		if single, index := VariantFiles(opt.Variant); entry != "" && path.Base(entry) != single && path.Base(entry) != index {
			return nil, &VariantError{Variant: opt.Variant,
				Reason: fmt.Sprintf("%s selects %s or %s of a checkpoint directory, but the source names the file %s", opt.Variant, single, index, store.Location(entry))}
		}
	}
	if entry == "" {
		var err error
		var note *Finding
		entry, listed, note, err = detectEntry(ctx, store, opt.Variant, opt.Words)
		if err != nil {
			return nil, withPartialDownloads(ctx, store, err)
		}
		if note != nil {
			c.Issues = append(c.Issues, *note)
			variant = variantOfEntry(entry)
		}
	}
	c.Entry = entry
	if data, err := readSmallFile(ctx, store, "config.json", MaxConfigSize); err == nil {
		cfg, err := ParseConfig(data, store.Location("config.json"))
		if err != nil {
			return nil, err
		}
		c.Config = cfg
	} else if !isNotExist(err) {
		return nil, err
	}
	var err error
	if strings.HasSuffix(entry, ".json") {
		err = c.openSharded(ctx, entry, opt)
	} else {
		err = c.openSingle(ctx, entry, opt)
	}
	var unknown *UnknownDTypeError
	if err != nil && !errors.As(err, &unknown) {
		c.Close()
		return nil, err
	}
	sort.Slice(c.Tensors, func(i, j int) bool { return NaturalLess(c.Tensors[i].Name, c.Tensors[j].Name) })
	if herr := c.readHFQuantConfig(ctx); herr != nil {
		c.Close()
		return nil, herr
	}
	if is, ok := singleBesideIndex(c, store, listed, variant); ok {
		c.Issues = append(c.Issues, is)
	}
	for _, f := range c.Files {
		if f.RealSize != f.Size {
			c.Issues = append(c.Issues, sizeFinding(f))
		}
	}
	return c, err
}

// withPartialDownloads adds the store's unfinished downloads, if it knows
// any, to an error about what the store holds: a Hugging Face snapshot
// whose index has not arrived yet looks like a directory of loose shards.
func withPartialDownloads(ctx context.Context, store Store, err error) error {
	ps, ok := UnwrapStore(store).(PartialStore)
	if !ok {
		return err
	}
	p, perr := ps.Partial(ctx)
	if perr != nil || len(p) == 0 {
		return err
	}
	names := make([]string, len(p))
	for i, n := range p {
		names[i] = EscapeName(n)
	}
	return fmt.Errorf("%w (the snapshot has partial downloads: %s)", err, strings.Join(names, ", "))
}

// The ids of the integrity issues Open records in Checkpoint.Issues (and
// verify reports; FileSize also for the passing check).
const (
	IndexShardName       FindingID = "index.shard_name"       // a weight_map shard name escapes the directory
	IndexShardMissing    FindingID = "index.shard_missing"    // a shard named by weight_map cannot be opened
	IndexDuplicateKey    FindingID = "index.duplicate_key"    // a tensor is listed twice in weight_map
	IndexTensorMissing   FindingID = "index.tensor_missing"   // a weight_map tensor is not in its shard
	IndexTensorUnlisted  FindingID = "index.tensor_unlisted"  // a stored tensor is not in weight_map
	IndexTensorDuplicate FindingID = "index.tensor_duplicate" // a tensor is stored in two shards
	IndexSingleFile      FindingID = "index.single_file"      // both an index and model.safetensors (warn)
	FileSize             FindingID = "file.size"              // a file's size differs from 8 + header + data
)

// sizeFinding is the file.size finding of a file opened leniently whose
// real size differs from the size its header implies.
func sizeFinding(f *File) Finding {
	data := f.Size - 8 - int64(f.Header.Size)
	if f.RealSize > f.Size {
		return Finding{ID: FileSize, Status: Fail, Files: []string{f.Name},
			Message: fmt.Sprintf("%s is %d bytes, expected %d (8 + header %d + data %d): %d trailing bytes not covered by any tensor",
				f.Name, f.RealSize, f.Size, f.Header.Size, data, f.RealSize-f.Size)}
	}
	var tensors []string
	for _, t := range f.Header.Tensors {
		if f.Header.DataStart()+int64(t.End) > f.RealSize {
			tensors = append(tensors, t.Name)
		}
	}
	what := fmt.Sprintf("%d tensors", len(tensors))
	if len(tensors) == 1 {
		what = "1 tensor"
	}
	return Finding{ID: FileSize, Status: Fail, Files: []string{f.Name}, Tensors: tensors,
		Message: fmt.Sprintf("%s is %d bytes, expected %d (8 + header %d + data %d): %d bytes missing, truncated download? %s cut off",
			f.Name, f.RealSize, f.Size, f.Header.Size, data, f.Size-f.RealSize, what)}
}

// sizedBlob presents a blob with the size its header implies; reads past
// the real end fail with io.ErrUnexpectedEOF.
type sizedBlob struct {
	Blob
	size, real int64
}

func (b *sizedBlob) Size() int64 { return b.size }

func (b *sizedBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Blob.ReadAt(p, off)
	if n < len(p) && off+int64(len(p)) > b.real && (err == nil || errors.Is(err, io.EOF)) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// SingleFile is the conventional name of an unsharded checkpoint.
const SingleFile = "model.safetensors"

// singleBesideIndex is the index.single_file finding of a directory that
// holds both an index and a model.safetensors the index does not consist
// of: loaders disagree on which one is the checkpoint. transformers'
// PreTrainedModel.from_pretrained looks for model.safetensors before the
// index (src/transformers/modeling_utils.py@040ba146759afc625c77f49d04982bb54873995f);
// vLLM globs *.safetensors and keeps the files the index's weight_map
// names (vllm/model_executor/model_loader/default_loader.py@00b5ad0712629374e6352e2b31de0460be0fdf17,
// _prepare_weights with filter_duplicate_safetensors_files). ckpt reads
// the index, like vLLM.
func singleBesideIndex(c *Checkpoint, store Store, listed []string, variant string) (Finding, bool) {
	single, index := VariantFiles(variant)
	if c.Index == nil || !slices.Contains(listed, single) {
		return Finding{}, false
	}
	shards := c.Index.Shards()
	if len(shards) == 1 && shards[0] == single {
		return Finding{}, false // the index lists the single file alone: both name the same file
	}
	what := fmt.Sprintf("the %d shards it lists", len(shards))
	if len(shards) == 1 {
		what = "the shard it lists, " + shards[0]
	}
	if slices.Contains(shards, single) {
		what += fmt.Sprintf(", %s among them", single)
	}
	return Finding{ID: IndexSingleFile, Status: Warn, Files: []string{index, single},
		Message: fmt.Sprintf("%s holds both %s and %s: ckpt reads the index (%s); transformers' from_pretrained loads %s alone "+
			"(it looks for it before the index), vLLM loads the shards the index lists; remove the stale one, or pass %s to read the single file",
			store.Location(""), index, single, what, single, store.Location(single))}, true
}

// detectEntry finds the entry of a store (the index, else its only
// .safetensors file; with variant, that variant's index, else its single
// file) and returns the store's file names too (nil for a store that
// cannot list). A directory without a default checkpoint and with one
// variant opens that variant, and the IndexVariant warning says so (w
// naming the option that selects it, Options.Variant).
func detectEntry(ctx context.Context, store Store, variant string, w Words) (string, []string, *Finding, error) {
	names, err := store.List(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	single, index := VariantFiles(variant)
	if names == nil { // store cannot list: try the index, then the single file
		b, err := store.Open(ctx, index)
		if err == nil {
			b.Close()
			return index, nil, nil, nil
		}
		if !isNotExist(err) {
			// Only a missing index means "no index": a server error, a
			// timeout or a refused token is that failure, not a reason to
			// look for model.safetensors instead.
			return "", nil, nil, err
		}
		return single, nil, nil, nil
	}
	if variant != "" {
		e, err := variantEntry(store, names, variant)
		return e, names, nil, err
	}
	var st []string
	for _, n := range names {
		if n == IndexFile {
			return IndexFile, names, nil, nil
		}
		if strings.HasSuffix(n, ".safetensors") {
			st = append(st, n)
		}
	}
	vd := variantsOf(names)
	var plain []string
	for _, n := range st {
		if !vd.belongs(n) {
			plain = append(plain, n)
		}
	}
	switch {
	case len(plain) == 1:
		return plain[0], names, nil, nil
	case len(plain) == 0 && len(vd.entry) == 1:
		v := vd.names()[0]
		f := &Finding{ID: IndexVariant, Status: Warn, Files: []string{vd.entry[v]},
			Message: fmt.Sprintf("%s holds no %s and no %s, only the variant %s (%s): ckpt reads it, as transformers' from_pretrained(variant=%q) does (without "+
				"variant= it finds no weights here); %s %s says so and silences this warning",
				store.Location(""), IndexFile, SingleFile, Quote(v), vd.entry[v], v, w.Of("Variant"), v)}
		return vd.entry[v], names, f, nil
	case len(plain) == 0 && len(vd.entry) > 1:
		return "", names, nil, &AmbiguousDirError{File: store.Location(""), Variants: len(vd.entry), Described: vd.describe()}
	case len(st) == 0:
		return "", names, nil, &FormatError{File: store.Location(""), Offset: -1,
			Reason: fmt.Sprintf("not a checkpoint directory: no %s and no .safetensors file; %s", IndexFile, describeDir(dirNames(store, names)))}
	default:
		sort.Slice(plain, func(i, j int) bool { return NaturalLess(plain[i], plain[j]) })
		if len(vd.entry) > 0 {
			return "", names, nil, &AmbiguousDirError{File: store.Location(""), Plain: plain, Variants: len(vd.entry), Described: vd.describe()}
		}
		return "", names, nil, &FormatError{File: store.Location(""), Offset: -1,
			Reason: fmt.Sprintf("ambiguous checkpoint directory: %d .safetensors files (%s) and no %s", len(plain), strings.Join(plain, ", "), IndexFile)}
	}
}

func (c *Checkpoint) openFile(ctx context.Context, name string, opt Options) (*File, error) {
	b, err := c.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	f := &File{Name: name, Location: c.Store.Location(name), Size: b.Size(), RealSize: b.Size(), blob: b}
	h, implied, err := readHeader(b, b.Size(), f.Location, opt.Lenient, opt.Words)
	if h == nil {
		b.Close()
		return nil, err
	}
	f.Header = h
	if implied != f.RealSize {
		f.Size = implied
		f.blob = &sizedBlob{Blob: b, size: implied, real: f.RealSize}
	}
	return f, err
}

func (c *Checkpoint) openSingle(ctx context.Context, entry string, opt Options) error {
	f, err := c.openFile(ctx, entry, opt)
	if f == nil {
		return err
	}
	c.Files = []*File{f}
	for i := range f.Header.Tensors {
		t := &Tensor{TensorInfo: f.Header.Tensors[i], File: f}
		c.Tensors = append(c.Tensors, t)
		c.byName[t.Name] = t
	}
	return err
}

func (c *Checkpoint) openSharded(ctx context.Context, entry string, opt Options) error {
	data, err := readSmallFile(ctx, c.Store, entry, 256<<20)
	if err != nil {
		return err
	}
	if e := notAnIndex(data, c.Store.Location(entry), opt.Words); e != nil {
		return e
	}
	idx, err := ParseIndex(data, c.Store.Location(entry))
	if err != nil {
		return err
	}
	c.Index, c.Sharded = idx, true
	if len(idx.Duplicates) > 0 {
		c.Issues = append(c.Issues, Finding{ID: IndexDuplicateKey, Status: Fail, Files: []string{entry},
			Message: fmt.Sprintf("%s lists %d tensor(s) more than once in weight_map", entry, len(idx.Duplicates)), Tensors: idx.Duplicates})
	}
	dirPrefix := ""
	if i := strings.LastIndex(entry, "/"); i >= 0 {
		dirPrefix = entry[:i+1]
	}
	shards := idx.Shards()
	files, errs := c.openShards(ctx, dirPrefix, shards, opt)
	if err := ctx.Err(); err != nil {
		return err
	}
	unknown, err := c.shardIssues(idx, shards, files, errs)
	if err != nil {
		return err
	}
	byShard := map[string]*File{}
	for i, name := range shards {
		if files[i] != nil {
			byShard[name] = files[i]
			c.Files = append(c.Files, files[i])
		}
	}
	sort.Slice(c.Files, func(i, j int) bool { return NaturalLess(c.Files[i].Name, c.Files[j].Name) })
	// Every tensor of every listed shard, where it first occurs (c.Files
	// is in natural order), and the further copies.
	firstIn := map[string]*File{}
	var copies []*Tensor
	for _, f := range c.Files {
		for i := range f.Header.Tensors {
			ti := &f.Header.Tensors[i]
			if _, ok := firstIn[ti.Name]; ok {
				copies = append(copies, &Tensor{TensorInfo: *ti, File: f})
				continue
			}
			firstIn[ti.Name] = f
		}
	}
	listed := c.indexTensors(idx, byShard, firstIn)
	c.unlistedIssue(entry, listed, firstIn)
	if err := c.duplicateIssues(ctx, copies, firstIn); err != nil {
		return err
	}
	if !opt.Lenient {
		var errs []error
		for _, is := range c.Issues {
			if is.Status == Fail {
				errs = append(errs, &FormatError{File: idx.File, Offset: -1, Reason: strings.TrimPrefix(is.Message, idx.File+": ")})
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	return errors.Join(unknown...)
}

// openShards opens the shards an index lists, opt.Workers (default 16) at
// a time; a name that fails CheckName is not opened and gets its error.
func (c *Checkpoint) openShards(ctx context.Context, dirPrefix string, shards []string, opt Options) ([]*File, []error) {
	files := make([]*File, len(shards))
	errs := make([]error, len(shards))
	g, gctx := errgroup.WithContext(ctx)
	workers := opt.Workers
	if workers <= 0 {
		workers = 16
	}
	g.SetLimit(workers)
	for i, name := range shards {
		if err := CheckName(name); err != nil {
			errs[i] = err
			continue
		}
		g.Go(func() error {
			f, err := c.openFile(gctx, dirPrefix+name, opt)
			files[i], errs[i] = f, err
			return nil
		})
	}
	g.Wait()
	return files, errs
}

// shardIssues sorts the errors of opening the shards: a bad shard name and
// a shard that cannot be opened become findings; a shard with a dtype
// ckpt does not know is kept, and its error returned in unknown; any other
// error closes every opened shard and is returned.
func (c *Checkpoint) shardIssues(idx *Index, shards []string, files []*File, errs []error) (unknown []error, err error) {
	tensorsOf := map[string][]string{}
	for _, e := range idx.WeightMap {
		tensorsOf[e.File] = append(tensorsOf[e.File], e.Tensor)
	}
	var fatal []error
	for i, name := range shards {
		err := errs[i]
		if err == nil || (files[i] != nil && errors.As(err, new(*UnknownDTypeError))) {
			if err != nil {
				unknown = append(unknown, err)
			}
			continue
		}
		switch {
		case CheckName(name) != nil:
			c.Issues = append(c.Issues, Finding{ID: IndexShardName, Status: Fail, Files: []string{name}, Tensors: tensorsOf[name],
				Message: fmt.Sprintf("%s: weight_map names shard %s for %d tensor(s) (first %s): %v",
					idx.File, Quote(name), len(tensorsOf[name]), Quote(tensorsOf[name][0]), CheckName(name))})
		case isNotExist(err) || strings.Contains(err.Error(), "escape") || strings.Contains(err.Error(), "path escapes"):
			c.Issues = append(c.Issues, Finding{ID: IndexShardMissing, Status: Fail, Files: []string{name}, Tensors: tensorsOf[name],
				Message: fmt.Sprintf("%s: weight_map names shard %s for %d tensor(s) (first %s), but it cannot be opened: %v",
					idx.File, Quote(name), len(tensorsOf[name]), Quote(tensorsOf[name][0]), err)})
		default:
			fatal = append(fatal, err)
		}
	}
	if len(fatal) > 0 {
		for _, f := range files {
			if f != nil {
				f.blob.Close()
			}
		}
		return nil, errors.Join(fatal...)
	}
	return unknown, nil
}

// indexTensors adds to c.Tensors every tensor the index lists in a shard
// that opened, in weight_map order, records the listed tensors missing
// from their shard as one finding, and returns the set of listed names.
func (c *Checkpoint) indexTensors(idx *Index, byShard, firstIn map[string]*File) map[string]bool {
	listed := map[string]bool{}
	var missing []string
	var missingFiles []string
	var elsewhere string
	for _, e := range idx.WeightMap {
		listed[e.Tensor] = true
		f := byShard[e.File]
		if f == nil {
			continue
		}
		ti, ok := f.Header.Lookup(e.Tensor)
		if !ok {
			missing = append(missing, e.Tensor)
			missingFiles = append(missingFiles, e.File)
			if g := firstIn[e.Tensor]; g != nil && elsewhere == "" {
				elsewhere = fmt.Sprintf("; %s is stored in %s instead", Quote(e.Tensor), g.Name)
			}
			continue
		}
		t := &Tensor{TensorInfo: *ti, File: f}
		c.Tensors = append(c.Tensors, t)
		c.byName[t.Name] = t
	}
	if len(missing) > 0 {
		c.Issues = append(c.Issues, Finding{ID: IndexTensorMissing, Status: Fail, Files: uniq(missingFiles), Tensors: missing,
			Message: fmt.Sprintf("%s: %d tensor(s) listed in weight_map are missing from their shard (first: %s in %s%s)",
				idx.File, len(missing), Quote(missing[0]), missingFiles[0], elsewhere)})
	}
	return listed
}

// unlistedIssue records the tensors stored in a shard but not listed in
// the index (each where it first occurs) as one warning.
func (c *Checkpoint) unlistedIssue(entry string, listed map[string]bool, firstIn map[string]*File) {
	var unlisted, unlistedFiles []string
	for _, f := range c.Files {
		for _, ti := range f.Header.Tensors {
			if !listed[ti.Name] && firstIn[ti.Name] == f {
				unlisted = append(unlisted, ti.Name)
				unlistedFiles = append(unlistedFiles, f.Name)
			}
		}
	}
	if len(unlisted) > 0 {
		c.Issues = append(c.Issues, Finding{ID: IndexTensorUnlisted, Status: Warn, Files: uniq(unlistedFiles), Tensors: unlisted,
			Message: fmt.Sprintf("%d tensor(s) are stored in shards but not listed in %s, so ckpt does not read them, "+
				"while a loader that reads every tensor of every shard (vLLM) does (first: %s in %s)",
				len(unlisted), path.Base(entry), Quote(unlisted[0]), unlistedFiles[0])})
	}
}

// duplicateIssues records the index.tensor_duplicate findings: a tensor
// stored in more than one shard. Loaders disagree on which copy they take
// (transformers the one of the last shard it loads, vLLM, which reads
// every tensor of every shard, the last it meets), so ckpt picks none
// when the copies differ: that is a failure (Open refuses the checkpoint)
// naming the tensor and both shards. Copies equal in dtype, shape and
// every byte (read and compared here, which happens only for duplicates)
// are a warning, and the copy the index points at is the one read.
func (c *Checkpoint) duplicateIssues(ctx context.Context, copies []*Tensor, firstIn map[string]*File) error {
	var same, differ, sameFiles, differFiles []string
	var firstSame, firstDiffer string
	for _, dup := range copies {
		// Compare with the copy the index points at, else the first.
		fi, _ := firstIn[dup.Name].Header.Lookup(dup.Name)
		first := &Tensor{TensorInfo: *fi, File: firstIn[dup.Name]}
		ref, ok := c.byName[dup.Name]
		switch {
		case !ok:
			ref = first
		case ref.File == dup.File:
			dup = first
		}
		why, err := copiesDiffer(ctx, ref, dup)
		if err != nil {
			return err
		}
		pair := fmt.Sprintf("%s in %s and %s", Quote(dup.Name), ref.File.Name, dup.File.Name)
		if why == "" {
			same = append(same, dup.Name)
			sameFiles = append(sameFiles, ref.File.Name, dup.File.Name)
			if firstSame == "" {
				firstSame = pair
			}
			continue
		}
		differ = append(differ, dup.Name)
		differFiles = append(differFiles, ref.File.Name, dup.File.Name)
		if firstDiffer == "" {
			firstDiffer = pair + ": " + why
		}
	}
	if len(differ) > 0 {
		c.Issues = append(c.Issues, Finding{ID: IndexTensorDuplicate, Status: Fail, Tensors: differ, Files: uniq(differFiles),
			Message: fmt.Sprintf("%d tensor(s) are stored in more than one shard with different contents, and loaders disagree on which copy they take (first: %s)",
				len(differ), firstDiffer)})
	}
	if len(same) > 0 {
		c.Issues = append(c.Issues, Finding{ID: IndexTensorDuplicate, Status: Warn, Tensors: same, Files: uniq(sameFiles),
			Message: fmt.Sprintf("%d tensor(s) are stored in more than one shard, in byte-identical copies (first: %s)", len(same), firstSame)})
	}
	return nil
}

// copiesDiffer says how two copies of a tensor differ, "" when they are
// equal in dtype, shape and bytes.
func copiesDiffer(ctx context.Context, a, b *Tensor) (string, error) {
	if a.DType != b.DType || !slices.Equal(a.Shape, b.Shape) {
		return fmt.Sprintf("%s %v in %s, %s %v in %s", a.DType, a.Shape, a.File.Name, b.DType, b.Shape, b.File.Name), nil
	}
	n := int64(a.NBytes())
	if n != int64(b.NBytes()) {
		return fmt.Sprintf("%d bytes in %s, %d in %s", n, a.File.Name, b.NBytes(), b.File.Name), nil
	}
	const chunk = 1 << 20
	ba, bb := make([]byte, min(n, chunk)), make([]byte, min(n, chunk))
	for off := int64(0); off < n; off += chunk {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		m := min(chunk, n-off)
		if _, err := a.ReadAt(ba[:m], off); err != nil {
			return fmt.Sprintf("its copies could not be compared: %v", err), nil
		}
		if _, err := b.ReadAt(bb[:m], off); err != nil {
			return fmt.Sprintf("its copies could not be compared: %v", err), nil
		}
		if !bytes.Equal(ba[:m], bb[:m]) {
			i := int64(0)
			for ba[i] == bb[i] {
				i++
			}
			return fmt.Sprintf("same dtype and shape, bytes differ from byte %d of %d", off+i, n), nil
		}
	}
	return "", nil
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

package cache

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/zeebo/xxh3"
)

// ManifestName is the manifest file of a cache folder
// (<root>/<device>/tensor_cache_<tag>_mesh<R>x<C>/manifest.json). It is
// written last, atomically, by a build that completed; a cache folder
// without it is incomplete. Its file paths are relative to the cache root.
const ManifestName = "manifest.json"

// JournalName is the build journal: one FileRecord per line, appended as
// files are finished. It lets a build that was killed resume without
// redoing finished files. check.Files never accepts a cache that has one.
const JournalName = ".ckpt-cache-journal.jsonl"

// ManifestFormat identifies the manifest schema.
const ManifestFormat = "ckpt-tt-cache/1"

// Manifest describes a built cache: the tool and profile that built it and
// every file with what it was built from.
type Manifest struct {
	Format      string          `json:"format"`
	Tool        string          `json:"tool"`
	ToolVersion string          `json:"tool_version"`
	Profile     string          `json:"profile"`
	Pinned      *mapping.Pinned `json:"pinned,omitempty"`
	Mesh        string          `json:"mesh"`
	// Settings are the profile variables the plan was built with.
	Settings mapping.Settings `json:"settings,omitempty"`
	Device   string           `json:"device"`
	Tag      string           `json:"tag"`
	CacheDir string           `json:"cache_dir"`
	// Part is "" for a model's main (text) folder and "vision" for the
	// folder of its vision tower (mapping.Plan.Part; Profile is then the
	// main profile, whose vision part it is); Companion is the
	// cache_dir of the model's other folder: the vision folder in the main
	// manifest, the main folder in the vision manifest. A vision folder
	// is named without a mesh suffix (<device>/tensor_cache_<tag>), like a
	// single-device text folder upstream; its manifest tells them apart.
	Part      string `json:"part,omitempty"`
	Companion string `json:"companion,omitempty"`
	Source    string `json:"source"`
	// Variant is the variant of a directory source the cache was built
	// from (--variant; ckpt.Options.Variant), "" for the default.
	Variant string       `json:"variant,omitempty"`
	Files   []FileRecord `json:"files"`
	// AllowNonFinite is set when the build was told to accept source
	// tensors holding NaN or Inf; NonFinite lists those it found.
	AllowNonFinite bool             `json:"allow_nonfinite,omitempty"`
	NonFinite      []ckpt.NonFinite `json:"nonfinite,omitempty"`
	// NaN is the NaN style of an AllowNonFinite build (build.WriteOptions.NaN).
	NaN string `json:"nan,omitempty"`
	// Unpacked is set by cache unpack: this manifest and the folder's
	// files came out of an archive, so its hashes are the archive's word
	// for what the files were built from. A build never keeps such a file
	// as unchanged (it rebuilds it from its source and writes a manifest
	// without this mark); cache verify says so unless it compared the data.
	Unpacked *Unpacked `json:"unpacked,omitempty"`
	// Ignore records the --ignore globs of the build (mapping.Plan.Ignore),
	// each with the source tensors it left out of the plan; cache verify
	// plans with these globs and holds the source against the tensors.
	Ignore []IgnoreRecord `json:"ignore,omitempty"`
}

// Unpacked records where an unpacked cache folder came from: the archive's
// file name (no directory) and when it was unpacked.
type Unpacked struct {
	Archive string    `json:"archive"`
	Time    time.Time `json:"time"`
}

// IgnoreRecord is one --ignore glob of a build and the source tensors it
// left out of the plan (their block scales too), in natural order.
type IgnoreRecord struct {
	Glob    string   `json:"glob"`
	Tensors []string `json:"tensors"`
}

// IgnoreRecords are the --ignore globs of a plan (Plan.Ignore), in order,
// each with the tensors of Plan.Ignored it left out.
func IgnoreRecords(pl *mapping.Plan) []IgnoreRecord {
	var out []IgnoreRecord
	for _, g := range pl.Ignore {
		r := IgnoreRecord{Glob: g, Tensors: []string{}}
		for _, ig := range pl.Ignored {
			if ig.Glob == g {
				r.Tensors = append(r.Tensors, ig.Name)
			}
		}
		out = append(out, r)
	}
	return out
}

// IgnoreGlobs are the globs of the records.
func IgnoreGlobs(rs []IgnoreRecord) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.Glob)
	}
	return out
}

// FileRecord is one cache file of a manifest. Path is slash-separated and
// relative to the cache root. HeaderXXH3 is the xxh3-64 (hex) of the
// bytes before the data region (size word, FlatBuffer, padding), DataXXH3
// that of the data region (everything after it), EntryXXH3 the xxh3-64 of the
// canonical plan entry (EntryKey), including every piece. MTimeNS is the
// file's modification time after the build: a rebuild rebuilds files whose
// size or mtime changed (verify also checks the hashes).
type FileRecord struct {
	Path       string         `json:"path"`
	Target     string         `json:"target"`
	Size       int64          `json:"size"`
	MTimeNS    int64          `json:"mtime_ns"`
	HeaderSize uint64         `json:"header_size"`
	HeaderXXH3 string         `json:"header_xxh3"`
	DataXXH3   string         `json:"data_xxh3"`
	EntryXXH3  string         `json:"entry_xxh3"`
	Entry      EntrySummary   `json:"entry"`
	Sources    []SourceRecord `json:"sources"`
	// UnsyncedBoot is the boot id of the system that wrote the file
	// without an fsync (build.WriteOptions.NoSync), until a build in a later
	// boot has found its data hash intact or a durable build has synced
	// it: a power loss may have kept its bytes from the disk.
	UnsyncedBoot string `json:"unsynced_boot,omitempty"`
}

// EntrySummary is the readable part of a plan entry recorded per file (the
// pieces are covered by FileRecord.EntryXXH3 only).
type EntrySummary struct {
	Rule        string               `json:"rule"`
	Transform   []string             `json:"transform"`
	Placement   string               `json:"placement"`
	Devices     int                  `json:"devices"`
	DType       string               `json:"dtype"`
	Layout      string               `json:"layout"`
	Memory      mapping.MemoryConfig `json:"memory_config"`
	Shape       []int64              `json:"shape"`
	DeviceShape []int64              `json:"device_shape"`
}

// SourceRecord identifies one source tensor (weights and their block
// scales) a file was built from. FileSize, MTimeNS and Offset form the
// cheap identity that a rebuild and verify compare first; XXH3 is the
// xxh3-64 (hex) of the tensor's raw bytes, computed while streaming, and is
// only recomputed when the cheap identity changed.
type SourceRecord struct {
	Name     string  `json:"name"`
	File     string  `json:"file"`
	FileSize int64   `json:"file_size"`
	MTimeNS  int64   `json:"mtime_ns"`
	Offset   int64   `json:"offset"`
	NBytes   int64   `json:"nbytes"`
	DType    string  `json:"dtype"`
	Shape    []int64 `json:"shape"`
	XXH3     string  `json:"xxh3"`
}

// entryKey is the canonical form of a plan entry that its fingerprint
// covers.
type entryKey struct {
	Rule        string               `json:"rule"`
	Target      string               `json:"target"`
	File        string               `json:"file"`
	Sources     []string             `json:"sources"`
	Values      []mapping.ValueOp    `json:"values"`
	Transpose   bool                 `json:"transpose"`
	Placement   mapping.Placement    `json:"placement"`
	Devices     int                  `json:"devices"`
	DType       string               `json:"dtype"`
	Layout      string               `json:"layout"`
	Memory      mapping.MemoryConfig `json:"memory"`
	Shape       []int64              `json:"shape"`
	DeviceShape []int64              `json:"device_shape"`
	MatrixRows  int64                `json:"matrix_rows"`
	MatrixCols  int64                `json:"matrix_cols"`
	Flat        bool                 `json:"flat,omitempty"`
	Shards      [][]mapping.Piece    `json:"shards"`
}

// EntryHash returns the fingerprint of a plan entry: the xxh3-64 (hex) of
// its canonical JSON (rule, target, file, source names including scales,
// value ops, transpose, placement, dtype, layout, memory config, shapes and
// every piece of every shard).
func EntryHash(e *mapping.Entry) string {
	k := entryKey{Rule: e.Rule, Target: e.Target, File: e.File, Values: e.Values, Transpose: e.Transpose,
		Placement: e.Placement, Devices: e.Devices, DType: e.DType, Layout: e.Layout, Memory: e.Memory,
		Shape: e.Shape, DeviceShape: e.DeviceShape, MatrixRows: e.MatrixRows, MatrixCols: e.MatrixCols, Flat: e.Flat, Shards: e.Shards}
	for _, s := range e.Sources {
		k.Sources = append(k.Sources, s.Name)
		if s.Scale != nil {
			k.Sources = append(k.Sources, s.Scale.Name)
		}
	}
	b, _ := json.Marshal(k) // plain data: cannot fail
	return HexHash(xxh3.Hash(b))
}

// EntrySummaryOf is the manifest's summary of plan entry e (its rule,
// transform, placement and devices).
func EntrySummaryOf(e *mapping.Entry) EntrySummary {
	return EntrySummary{Rule: e.Rule, Transform: e.Describe(), Placement: e.Placement.String(), Devices: e.Devices,
		DType: e.DType, Layout: e.Layout, Memory: e.Memory, Shape: e.Shape, DeviceShape: e.DeviceShape}
}

// HexHash spells a 64-bit hash as the manifest writes it: 16 lower-case
// hex digits, zero-padded.
func HexHash(h uint64) string { return fmt.Sprintf("%016x", h) }

// EntryTensors lists the tensors an entry reads: each source and its scale.
func EntryTensors(e *mapping.Entry) []*ckpt.Tensor {
	var ts []*ckpt.Tensor
	for _, s := range e.Sources {
		ts = append(ts, s.Tensor)
		if s.Scale != nil {
			ts = append(ts, s.Scale)
		}
	}
	return ts
}

// Identity returns the cheap identity of a source tensor (no data read):
// its file's name, size and modification time (when the file is a local
// path that can be stat'ed, else 0) and the tensor's offset, size, dtype
// and shape. XXH3 is left empty.
func Identity(t *ckpt.Tensor) SourceRecord {
	r := SourceRecord{Name: t.Name, File: t.File.Name, FileSize: t.File.Size, Offset: t.Offset(),
		NBytes: int64(t.NBytes()), DType: string(t.DType), Shape: append([]int64(nil), t.Shape...)}
	if st, err := os.Stat(t.File.Location); err == nil {
		r.MTimeNS = st.ModTime().UnixNano()
	}
	return r
}

// SameIdentity reports whether two records have the same cheap identity.
// A zero modification time (a source that is not a local file) never
// matches, so such sources are always re-hashed.
func SameIdentity(a, b SourceRecord) bool {
	if a.MTimeNS == 0 || b.MTimeNS == 0 {
		return false
	}
	return a.Name == b.Name && a.File == b.File && a.FileSize == b.FileSize && a.MTimeNS == b.MTimeNS &&
		a.Offset == b.Offset && a.NBytes == b.NBytes && a.DType == b.DType && slices.Equal(a.Shape, b.Shape)
}

// HashTensor computes the xxh3-64 (hex) of a tensor's raw bytes, reading
// it in chunks of at most 4 MiB.
func HashTensor(t *ckpt.Tensor, buf []byte) (string, error) {
	n := int64(t.NBytes())
	if len(buf) == 0 {
		// Sized to the tensor: most hashed up front are small scales.
		buf = make([]byte, min(n, 4<<20))
	}
	if n <= int64(len(buf)) {
		if _, err := t.ReadAt(buf[:n], 0); err != nil {
			return "", err
		}
		return HexHash(xxh3.Hash(buf[:n])), nil
	}
	h := xxh3s.New()
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		if _, err := t.ReadAt(buf[:k], off); err != nil {
			return "", err
		}
		h.Write(buf[:k])
		off += k
	}
	return HexHash(h.Sum64()), nil
}

// HashFile computes the xxh3-64 (hex) of the header region [0,
// dataOffset) and of the data region [dataOffset, size) of a .tensorbin
// file.
func HashFile(f io.ReaderAt, dataOffset, size int64) (header, data string, err error) {
	hh, hd := xxh3s.New(), xxh3s.New()
	buf := make([]byte, 256<<10) // read and hashed while in the L2 cache
	if _, err := io.CopyBuffer(hh, io.NewSectionReader(f, 0, dataOffset), buf); err != nil {
		return "", "", err
	}
	if _, err := io.CopyBuffer(hd, io.NewSectionReader(f, dataOffset, size-dataOffset), buf); err != nil {
		return "", "", err
	}
	return HexHash(hh.Sum64()), HexHash(hd.Sum64()), nil
}

// ReadManifest reads DIR/manifest.json (DIR is a cache folder). A missing
// manifest is an error matching fs.ErrNotExist.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	return ParseManifest(b, p)
}

// ParseManifest parses manifest bytes (name is used in errors): the format
// must be this tool's and no file path may escape the cache root.
func ParseManifest(b []byte, name string) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", name, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("reading manifest %s: format %q, want %q", name, m.Format, ManifestFormat)
	}
	if err := CheckRelPath(m.CacheDir); err != nil {
		return nil, fmt.Errorf("reading manifest %s: cache_dir: %w", name, err)
	}
	for _, f := range m.Files {
		if err := CheckRelPath(f.Path); err != nil {
			return nil, fmt.Errorf("reading manifest %s: %w", name, err)
		}
		if !UnderDir(f.Path, m.CacheDir) {
			return nil, fmt.Errorf("reading manifest %s: file %s is outside the cache folder %s", name, strconv.Quote(f.Path), m.CacheDir)
		}
	}
	return &m, nil
}

// CheckRelPath rejects manifest paths that would escape the cache root.
func CheckRelPath(p string) error {
	if err := ckpt.CheckName(p); err != nil {
		return fmt.Errorf("file path %s: %w", strconv.Quote(p), err)
	}
	return nil
}

// encodeManifest is the manifest's JSON, indented.
func encodeManifest(m *Manifest) ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteManifest writes DIR/manifest.json atomically (temp, fsync, rename).
func WriteManifest(dir string, m *Manifest) error {
	b, err := encodeManifest(m)
	if err != nil {
		return err
	}
	af, err := atomicfile.Create(filepath.Join(dir, ManifestName))
	if err != nil {
		return err
	}
	defer af.Abort()
	if _, err := af.Write(b); err != nil {
		return fmt.Errorf("writing manifest: %w", err)
	}
	return af.Commit()
}

// ReadJournal returns the records of a build journal; a torn last line (a
// build killed mid-write) is ignored.
func ReadJournal(dir string) ([]FileRecord, error) {
	f, err := os.Open(filepath.Join(dir, JournalName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []FileRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r FileRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil && CheckRelPath(r.Path) == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

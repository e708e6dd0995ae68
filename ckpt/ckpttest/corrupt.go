package ckpttest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Kind says how opening a corrupt variant must fail.
type Kind int

const (
	// Malformed: the error matches ckpt.ErrMalformed.
	Malformed Kind = iota
	// NotExist: the error matches fs.ErrNotExist.
	NotExist
	// UnknownDType: the error is a *ckpt.UnknownDTypeError and the known
	// part of the checkpoint is still returned (inspect lists it, exits 2).
	UnknownDType
)

// Corrupt is one hostile input: a single file (Data) or a checkpoint
// directory (Files, Links).
type Corrupt struct {
	Name string // short id, e.g. "gap"
	Rule string // the rule of the safetensors format (reference: huggingface/safetensors safetensors/src/tensor.rs) it breaks
	Kind Kind
	// Data is the content of model.safetensors for a single-file variant.
	Data []byte
	// Files are the files of a directory variant (name → content); Links
	// are symlinks in it (name → target; "{outside}" in a target is
	// replaced by a sibling directory that holds a valid checkpoint).
	Files map[string][]byte
	Links map[string]string
	// Entry is the path to open, relative to the variant's directory: the
	// file name for single-file variants, "" for the directory itself.
	Entry string
	// File is the name (relative to the variant's directory) of the file
	// the error must name.
	File string
	// Want are further substrings the error message must contain (tensor
	// names, byte offsets, the reason).
	Want []string
	// Listed are strings inspect must still print for UnknownDType
	// variants (what could be read).
	Listed []string
}

// Write materialises the variant under dir/<Name> and returns the source
// to open and the path the error must name.
func (c Corrupt) Write(dir string) (src, file string, err error) {
	root := filepath.Join(dir, c.Name)
	outside := filepath.Join(dir, c.Name+"-outside")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", "", err
	}
	if c.Data != nil {
		if err := os.WriteFile(filepath.Join(root, "model.safetensors"), c.Data, 0o644); err != nil {
			return "", "", err
		}
	}
	for name, data := range c.Files {
		p := filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(name, "{outside}", outside)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", "", err
		}
	}
	if len(c.Links) > 0 || strings.Contains(string(c.Files[ckpt.IndexFile]), "{outside}") {
		if err := os.MkdirAll(outside, 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(outside, "model.safetensors"), validShard("b"), 0o644); err != nil {
			return "", "", err
		}
		if idx, ok := c.Files[ckpt.IndexFile]; ok {
			idx = []byte(strings.ReplaceAll(string(idx), "{outside}", outside))
			if err := os.WriteFile(filepath.Join(root, ckpt.IndexFile), idx, 0o644); err != nil {
				return "", "", err
			}
		}
	}
	for name, target := range c.Links {
		if err := os.Symlink(strings.ReplaceAll(target, "{outside}", outside), filepath.Join(root, name)); err != nil {
			return "", "", err
		}
	}
	src = root
	if c.Entry != "" {
		src = filepath.Join(root, c.Entry)
	}
	file = root
	if c.File != "" {
		file = filepath.Join(root, c.File)
	}
	return src, file, nil
}

// Frame returns a safetensors file: the 8-byte little-endian length of hdr,
// hdr, and dataLen bytes of deterministic data.
func Frame(hdr string, dataLen int) []byte {
	b := make([]byte, 8+len(hdr)+dataLen)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	copy(b[8:], hdr)
	for i := 8 + len(hdr); i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	return b
}

// entry renders one header entry.
func entry(name, dtype, shape string, begin, end uint64) string {
	n, _ := json.Marshal(name)
	return fmt.Sprintf(`%s:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, n, dtype, shape, begin, end)
}

func obj(entries ...string) string { return "{" + strings.Join(entries, ",") + "}" }

// at is the message fragment for an absolute byte offset.
func at(off int) string { return fmt.Sprintf("at byte %d", off) }

// validShard is a small valid file holding U8 tensors named by names, 4 bytes each.
func validShard(names ...string) []byte {
	var es []string
	for i, n := range names {
		es = append(es, entry(n, "U8", "[4]", uint64(4*i), uint64(4*i+4)))
	}
	return Frame(obj(es...), 4*len(names))
}

func single(name, rule string, data []byte, want ...string) Corrupt {
	return Corrupt{Name: name, Rule: rule, Data: data, Entry: "model.safetensors", File: "model.safetensors", Want: want}
}

// CorruptFiles returns single-file variants that break each rule of the
// safetensors format (the safetensors format rules) and the schema.
func CorruptFiles() []Corrupt {
	var out []Corrupt
	add := func(c Corrupt) { out = append(out, c) }
	lenOnly := func(n uint64, total int) []byte {
		b := make([]byte, total)
		binary.LittleEndian.PutUint64(b, n)
		return b
	}
	add(single("empty-file", "file < 8 bytes", []byte{}, "header too small"))
	add(single("tiny-file", "file < 8 bytes", []byte{2, 0, 0, 0, 0}, "header too small", "5 bytes"))
	add(single("header-too-large", "N > 100,000,000", lenOnly(100_000_001, 64), "header too large", "100000001"))
	add(single("header-2p62", "N = 2^62 must not allocate", lenOnly(1<<62, 64), "header too large"))
	add(single("header-max-u64", "N = 2^64-1", lenOnly(^uint64(0), 16), "header too large"))
	add(single("header-beyond-file", "8+N beyond the file", lenOnly(1000, 100), "invalid header length", at(0)))
	{
		hdr := "{\"a\xffb\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}" // entry would repair the UTF-8
		add(single("invalid-utf8", "header not UTF-8", Frame(hdr, 4), "invalid UTF-8", at(8+strings.IndexByte(hdr, 0xff))))
	}
	add(single("empty-header", "N = 0 is not JSON", Frame("", 0), "invalid JSON"))
	add(single("bad-json", "not JSON", Frame(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}`, 4), "invalid JSON"))
	add(single("bad-json-syntax", "not JSON", Frame(`{"a":{"dtype":"U8" "shape":[4]}}`, 0), "invalid JSON"))
	add(single("not-object", "header is not an object", Frame(`[1,2]`, 0), "invalid JSON"))
	add(single("null-header", "header is null", Frame(`null    `, 0), "invalid JSON"))
	add(single("trailing-garbage", "data after the JSON object", Frame(obj(entry("a", "U8", "[4]", 0, 4))+` {}`, 4), "after the header object"))
	add(single("trailing-text", "data after the JSON object", Frame(obj(entry("a", "U8", "[4]", 0, 4))+`x`, 4), "invalid JSON"))
	add(single("metadata-non-string", "__metadata__ value not a string", Frame(`{"__metadata__":{"format":1}}`, 0),
		"__metadata__", `"format"`, "must be a string"))
	add(single("metadata-not-object", "__metadata__ not an object", Frame(`{"__metadata__":["pt"]}`, 0), "__metadata__", "must be an object"))
	add(single("metadata-nested", "__metadata__ value an object", Frame(`{"__metadata__":{"a":{"b":"c"}}}`, 0), "__metadata__", "must be a string"))
	add(single("duplicate-key", "duplicate tensor name", Frame(obj(entry("w", "U8", "[4]", 0, 4), entry("w", "U8", "[4]", 4, 8)), 8), `tensor "w"`, "duplicate"))
	add(single("duplicate-metadata", "duplicate __metadata__", Frame(`{"__metadata__":{},"__metadata__":{}}`, 0), "duplicate", "__metadata__"))
	add(single("duplicate-dtype", "a field twice in a tensor entry", Frame(`{"w":{"dtype":"I32","dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 4),
		`tensor "w"`, "duplicate field dtype", at(28)))
	add(single("duplicate-shape", "a field twice in a tensor entry", Frame(`{"w":{"shape":[2],"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 4),
		`tensor "w"`, "duplicate field shape"))
	add(single("duplicate-offsets", "a field twice in a tensor entry", Frame(`{"w":{"data_offsets":[0,4],"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 4),
		`tensor "w"`, "duplicate field data_offsets"))
	add(single("lone-surrogate", "an escape of a lone surrogate", Frame(`{"w\ud800":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 4),
		`invalid escape \uD800`, at(11)))
	add(single("lone-low-surrogate", "an escape of a lone surrogate",
		Frame(`{"__metadata__":{"k":"\udc00"},"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 4), `invalid escape \uDC00`))
	add(single("bad-escape", "an invalid escape", Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":"\q"}}`, 4), `invalid escape "\\q"`))
	add(single("control-in-string", "a raw control character in a string", Frame("{\"w\x01\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4),
		"control character 0x01"))
	add(single("float-out-of-range", "a number beyond float64 in an unknown field",
		Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":1e400}}`, 4), "number out of range"))
	add(single("upper-case-field", "field names are case-sensitive", Frame(`{"w":{"DTYPE":"U8","shape":[4],"data_offsets":[0,4]}}`, 4),
		`tensor "w"`, "missing field dtype"))
	add(single("missing-dtype", "missing dtype", Frame(`{"w":{"shape":[4],"data_offsets":[0,4]}}`, 4), `tensor "w"`, "missing field dtype"))
	add(single("missing-shape", "missing shape", Frame(`{"w":{"dtype":"U8","data_offsets":[0,4]}}`, 4), `tensor "w"`, "missing field shape"))
	add(single("missing-offsets", "missing data_offsets", Frame(`{"w":{"dtype":"U8","shape":[4]}}`, 4), `tensor "w"`, "missing field data_offsets"))
	add(single("tensor-not-object", "tensor entry not an object", Frame(`{"w":[1,2]}`, 0), "invalid JSON", `"w"`))
	add(single("dtype-not-string", "dtype not a string", Frame(`{"w":{"dtype":8,"shape":[4],"data_offsets":[0,4]}}`, 4), `tensor "w"`, "dtype must be a string"))
	add(single("shape-not-array", "bad shape", Frame(`{"w":{"dtype":"U8","shape":4,"data_offsets":[0,4]}}`, 4), "shape", `"w"`))
	add(single("shape-string", "bad shape", Frame(`{"w":{"dtype":"U8","shape":["4"],"data_offsets":[0,4]}}`, 4), `tensor "w"`, "non-negative integers"))
	add(single("negative-dim", "negative shape", Frame(`{"w":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}}`, 4), `tensor "w"`, "-4"))
	add(single("fractional-dim", "fractional shape", Frame(`{"w":{"dtype":"U8","shape":[4.0],"data_offsets":[0,4]}}`, 4), `tensor "w"`, "4.0"))
	add(single("exponent-dim", "exponent notation", Frame(`{"w":{"dtype":"U8","shape":[4e0],"data_offsets":[0,4]}}`, 4), `tensor "w"`, "4e0"))
	add(single("dim-over-u64", "number > 2^64", Frame(`{"w":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,4]}}`, 4),
		`tensor "w"`, "18446744073709551616"))
	add(single("dim-over-i64", "shape dimension > 2^63-1", Frame(`{"w":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,4]}}`, 4),
		`tensor "w"`, "too large"))
	add(single("negative-offset", "negative offset", Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[-1,4]}}`, 4), `tensor "w"`, "data_offsets"))
	add(single("fractional-offset", "fractional offset", Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4.5]}}`, 4), `tensor "w"`, "4.5"))
	add(single("offset-over-u64", "offset > 2^64", Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551620]}}`, 4),
		`tensor "w"`, "18446744073709551620"))
	add(single("offsets-one", "data_offsets needs 2 entries", Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[4]}}`, 4), `tensor "w"`, "2 entries"))
	add(single("offsets-three", "data_offsets needs 2 entries", Frame(`{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4,4]}}`, 4), `tensor "w"`, "2 entries"))
	{
		hdr := obj(entry("a", "U8", "[4]", 0, 4), entry("b", "U8", "[0]", 8, 4))
		add(single("end-before-begin", "end < begin", Frame(hdr, 4), `tensor "b"`, "end before begin"))
	}
	{
		hdr := obj(entry("a", "U8", "[8]", 0, 8), entry("b", "U8", "[4]", 12, 16))
		add(single("gap", "gap between tensors", Frame(hdr, 16), `tensor "b"`, "gap", at(8+len(hdr)+12)))
	}
	{
		hdr := obj(entry("a", "U8", "[8]", 0, 8), entry("b", "U8", "[8]", 4, 12))
		add(single("overlap", "overlapping tensors", Frame(hdr, 12), `tensor "b"`, "overlap", at(8+len(hdr)+4)))
	}
	{
		hdr := obj(entry("a", "U8", "[4]", 4, 8))
		add(single("not-at-zero", "first tensor not at 0", Frame(hdr, 8), `tensor "a"`, "gap", at(8+len(hdr)+4)))
	}
	{
		hdr := obj(entry("a", "U8", "[4]", 0, 4), entry("b", "U8", "[4]", 0, 4))
		add(single("same-offsets", "two tensors share bytes", Frame(hdr, 4), "overlap"))
	}
	{
		hdr := obj(entry("a", "F32", "[3]", 0, 8))
		add(single("size-mismatch", "bytes != numel × bits / 8", Frame(hdr, 8), `tensor "a"`, "needs 12 bytes", at(8+len(hdr))))
	}
	add(single("numel-overflow", "numel overflows", Frame(obj(entry("a", "U8", "[4294967296,4294967296,2]", 0, 4)), 4), `tensor "a"`, "overflow"))
	add(single("bits-overflow", "numel × bits overflows", Frame(obj(entry("a", "F64", "[2305843009213693952]", 0, 4)), 4), `tensor "a"`, "overflow"))
	add(single("f4-odd", "F4 with odd numel", Frame(obj(entry("a", "F4", "[3]", 0, 2)), 2), `tensor "a"`, "misaligned"))
	add(single("f6-numel", "F6 with numel % 4 != 0", Frame(obj(entry("a", "F6_E2M3", "[2,3]", 0, 5)), 5), `tensor "a"`, "misaligned"))
	{
		hdr := obj(entry("a", "U8", "[4]", 0, 4))
		add(single("trailing-bytes", "bytes after the last tensor", Frame(hdr, 7), "3 trailing bytes", at(8+len(hdr)+4)))
	}
	{
		hdr := obj(entry("a", "U8", "[4]", 0, 4), entry("b", "BF16", "[16]", 4, 36))
		add(single("truncated", "file shorter than the tensors", Frame(hdr, 20), "truncated", "16 bytes missing"))
	}
	{
		hdr := obj(entry("a", "U8", "[4]", 0, 4))
		b := Frame(hdr, 4)
		add(single("truncated-header", "file cut inside the header", b[:8+len(hdr)/2], "invalid header length"))
	}
	add(single("deep-nesting", "unknown field nested deeper than serde_json's limit (127 levels, the header object included)",
		Frame(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":`+strings.Repeat("[", 4096)+strings.Repeat("]", 4096)+`}}`, 4), "nested deeper than 127"))
	add(single("deep-nesting-unclosed", "100 KB of '[' in an unknown field",
		Frame(`{"a":{"x":`+strings.Repeat("[", 100_000), 0), "nested deeper"))
	{
		hdr := obj(entry("a", "U8", "[4]", 0, 4), entry("b\x1b[2J", "F7_E3M3", "[4]", 4, 8), entry("c", "BF16", "[2]", 8, 12))
		c := single("unknown-dtype", "dtype not in the table", Frame(hdr, 12), `"F7_E3M3"`, `b\x1b[2J`)
		c.Kind = UnknownDType
		c.Listed = []string{"U8", "F7_E3M3", "BF16"}
		add(c)
	}
	return out
}

// CorruptDirs returns checkpoint-directory variants: broken indexes, shard
// names that escape the directory, missing shards and tensors, ambiguous or
// empty directories, and a corrupt shard behind a valid index.
func CorruptDirs() []Corrupt {
	index := func(wm map[string]any) []byte {
		b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 8}, "weight_map": wm})
		return b
	}
	s1, s2 := "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	good := map[string][]byte{s1: validShard("a")}
	with := func(m map[string][]byte, k string, v []byte) map[string][]byte {
		out := map[string][]byte{}
		for a, b := range m {
			out[a] = b
		}
		out[k] = v
		return out
	}
	idx := ckpt.IndexFile
	twoCopies := validShard("a", "b") // "a" again, with other bytes
	twoCopies[len(twoCopies)-8] = 1
	return []Corrupt{
		{Name: "missing-shard", Rule: "index names a shard that does not exist", Files: with(good, idx, index(map[string]any{"a": s1, "b": s2})),
			File: idx, Want: []string{s2, `"b"`, "cannot be opened"}},
		{Name: "tensor-missing", Rule: "index names a tensor its shard lacks",
			Files: with(with(good, s2, validShard("c")), idx, index(map[string]any{"a": s1, "b": s2, "c": s2})),
			File:  idx, Want: []string{`"b"`, s2, "missing from their shard"}},
		{Name: "dotdot-shard", Rule: "shard name with ../",
			Files: with(good, idx, index(map[string]any{"a": s1, "b": "../" + "dotdot-shard-outside/model.safetensors"})),
			File:  idx, Want: []string{"../", "escapes"}},
		{Name: "absolute-shard", Rule: "absolute shard name", Files: with(good, idx, []byte(`{"weight_map":{"a":"`+s1+`","b":"{outside}/model.safetensors"}}`)),
			File: idx, Want: []string{"absolute", `"b"`}},
		{Name: "symlink-out", Rule: "shard is a symlink that leads out of the directory", Files: with(good, idx, index(map[string]any{"a": s1, "b": s2})),
			Links: map[string]string{s2: "{outside}/model.safetensors"}, File: idx, Want: []string{s2, "escape"}},
		{Name: "index-bad-json", Rule: "index is not JSON", Files: with(good, idx, []byte(`{"weight_map":{"a":"`+s1+`",}}`)),
			File: idx, Want: []string{"invalid JSON in index"}},
		{Name: "index-not-object", Rule: "index is not an object", Files: with(good, idx, []byte(`[]`)),
			File: idx, Want: []string{"invalid JSON in index"}},
		{Name: "index-no-weight-map", Rule: "index without weight_map", Files: with(good, idx, []byte(`{"metadata":{}}`)),
			File: idx, Want: []string{"no weight_map"}},
		{Name: "weight-map-array", Rule: "weight_map not an object", Files: with(good, idx, []byte(`{"weight_map":["a"]}`)),
			File: idx, Want: []string{"weight_map must be an object"}},
		{Name: "weight-map-number", Rule: "weight_map value not a string", Files: with(good, idx, []byte(`{"weight_map":{"a":1}}`)),
			File: idx, Want: []string{`tensor "a"`, "must be a shard file name"}},
		{Name: "weight-map-null", Rule: "weight_map value null", Files: with(good, idx, []byte(`{"weight_map":{"a":null}}`)),
			File: idx, Want: []string{`tensor "a"`, "must be a shard file name"}},
		{Name: "weight-map-empty-name", Rule: "weight_map value empty", Files: with(good, idx, []byte(`{"weight_map":{"a":""}}`)),
			File: idx, Want: []string{`"a"`, "empty file name"}},
		{Name: "index-upper-case-key", Rule: "index keys are case-sensitive (json.load, then [\"weight_map\"])",
			Files: with(good, idx, []byte(`{"WEIGHT_MAP":{"a":"`+s1+`"}}`)),
			File:  idx, Want: []string{"no weight_map", `"WEIGHT_MAP"`, "case-sensitive"}},
		{Name: "index-duplicate-key", Rule: "a key twice in the index", Files: with(good, idx, []byte(`{"weight_map":{},"weight_map":{"a":"`+s1+`"}}`)),
			File: idx, Want: []string{`duplicate key "weight_map"`, "at byte 17"}},
		{Name: "index-lone-surrogate", Rule: "an escape of a lone surrogate in the index", Files: with(good, idx, []byte(`{"weight_map":{"a\udc00":"`+s1+`"}}`)),
			File: idx, Want: []string{`invalid escape \uDC00`}},
		{Name: "tensor-in-two-shards", Rule: "a tensor stored in two shards with different bytes",
			Files: with(with(good, s2, twoCopies), idx, index(map[string]any{"a": s1, "b": s2})),
			File:  idx, Want: []string{`"a" in ` + s1 + ` and ` + s2, "different contents", "bytes differ from byte 0"}},
		{Name: "two-files-no-index", Rule: "directory with two .safetensors and no index", Files: with(good, s2, validShard("b")),
			Want: []string{"ambiguous", s1, s2}},
		{Name: "empty-dir", Rule: "empty directory", Files: map[string][]byte{},
			Want: []string{"not a checkpoint directory", ckpt.IndexFile}},
		{Name: "only-config", Rule: "directory with only a config", Files: map[string][]byte{"config.json": []byte(`{}`)},
			Want: []string{"not a checkpoint directory"}},
		{Name: "bad-config", Rule: "config.json is not JSON", Files: with(good, "config.json", []byte(`{"text_config": {`)),
			File: "config.json", Want: []string{"invalid JSON in config"}},
		{Name: "config-not-object", Rule: "config.json is not an object", Files: with(good, "config.json", []byte(`[1]`)),
			File: "config.json", Want: []string{"invalid JSON in config"}},
		{Name: "corrupt-shard", Rule: "a shard behind a valid index breaks a header rule",
			Files: with(with(good, s2, Frame(obj(entry("b", "U8", "[4]", 4, 8)), 8)), idx, index(map[string]any{"a": s1, "b": s2})),
			File:  s2, Want: []string{`tensor "b"`, "gap"}},
		{Name: "shard-is-directory", Rule: "a shard named by the index is a directory",
			Files: with(with(good, s2+"/x", []byte("x")), idx, index(map[string]any{"a": s1, "b": s2})),
			File:  s2, Want: []string{"not a regular file"}},
		{Name: "unknown-dtype-two-shards", Rule: "unknown dtypes in two shards are all listed", Kind: UnknownDType,
			Files: with(with(with(good, s2, Frame(obj(entry("b", "F7", "[4]", 0, 4)), 4)),
				"model-00003.safetensors", Frame(obj(entry("c", "Q4_K", "[4]", 0, 4)), 4)), idx,
				index(map[string]any{"a": s1, "b": s2, "c": "model-00003.safetensors"})),
			File: s2, Want: []string{`"F7"`, `"Q4_K"`, "model-00003.safetensors"}, Listed: []string{"U8", "F7", "Q4_K"}},
		{Name: "missing-path", Rule: "source does not exist", Kind: NotExist, Entry: "nope.safetensors", File: "nope.safetensors"},
	}
}

// Valid is a small valid file: an edge case the reference crate accepts.
type Valid struct {
	Name    string
	Data    []byte
	Tensors int
	Lints   []string // lint IDs expected
}

// ValidFiles returns edge cases that must be accepted: zero-size and
// rank-0 tensors, the empty header, whitespace around the JSON object,
// sub-byte dtypes, and every dtype of the table.
func ValidFiles() []Valid {
	var all []string
	off := uint64(0)
	for _, d := range numfmt.AllDTypes() {
		n := uint64(8) // 8 elements fill whole bytes for every dtype
		nb := n * uint64(d.Bits()) / 8
		all = append(all, entry("t_"+string(d), string(d), "[2,4]", off, off+nb))
		off += nb
	}
	return []Valid{
		{Name: "empty-header", Data: Frame(`{}`, 0)},
		{Name: "empty-header-padded", Data: Frame(`{}      `, 0)},
		{Name: "metadata-only", Data: Frame(`{"__metadata__":{"format":"pt"}}`, 0)},
		{Name: "metadata-null", Data: Frame(`{"__metadata__":null}`, 0)},
		{Name: "zero-size", Data: Frame(obj(entry("z", "F32", "[2,0]", 0, 0)), 0), Tensors: 1},
		{Name: "zero-size-between", Data: Frame(obj(entry("a", "U8", "[4]", 0, 4), entry("z", "BF16", "[0,5]", 4, 4), entry("b", "U8", "[2]", 4, 6)), 6),
			Tensors: 3, Lints: []string{"header.order"}},
		{Name: "rank-0", Data: Frame(obj(entry("s", "F32", "[]", 0, 4)), 4), Tensors: 1},
		{Name: "leading-whitespace", Data: Frame(" \t\r\n"+obj(entry("a", "U8", "[4]", 0, 4)), 4), Tensors: 1, Lints: []string{"header.start"}},
		{Name: "trailing-whitespace", Data: Frame(obj(entry("a", "U8", "[4]", 0, 4))+"\n\t  ", 4), Tensors: 1, Lints: []string{"header.padding"}},
		{Name: "f4-even", Data: Frame(obj(entry("a", "F4", "[2,3]", 0, 3)), 3), Tensors: 1},
		{Name: "f6-four", Data: Frame(obj(entry("a", "F6_E3M2", "[4]", 0, 3)), 3), Tensors: 1},
		{Name: "unknown-fields", Data: Frame(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"extra":{"x":[1,{"y":null}]}}}`, 4), Tensors: 1},
		{Name: "all-dtypes", Data: Frame(obj(all...), int(off)), Tensors: len(all), Lints: []string{"header.order"}},
		{Name: "json-order-differs", Data: Frame(obj(entry("b", "U8", "[4]", 4, 8), entry("a", "U8", "[4]", 0, 4)), 8), Tensors: 2},
		{Name: "not-writer-order", Data: Frame(obj(entry("a", "BF16", "[2]", 0, 4), entry("b", "F32", "[1]", 4, 8)), 8), Tensors: 2, Lints: []string{"header.order"}},
	}
}

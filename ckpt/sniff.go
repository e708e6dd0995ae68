package ckpt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// NotSafetensorsError says a file is not safetensors at all and names
// what it looks like (a Git LFS pointer, an HTML page, JSON, a PyTorch
// checkpoint, GGUF...). It matches ErrMalformed.
type NotSafetensorsError struct {
	File string
	Kind string // "git-lfs-pointer", "html", "json", "pytorch-zip", "pickle", "gguf", "gzip", "zstd", "numpy", "text"
	Hint string // what it is and what to do
}

// Error is the message of the NotSafetensorsError.
func (e *NotSafetensorsError) Error() string {
	return fmt.Sprintf("%s: not a safetensors file: %s", e.File, e.Hint)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *NotSafetensorsError) Is(target error) bool { return target == ErrMalformed }

// sniffBytes is how much of a file sniff reads.
const sniffBytes = 1024

// sniff names what a file that failed to parse as safetensors is, from
// its first bytes; nil when it does not look like anything known. It is
// only called on the error path, so valid files cost no extra read.
func sniff(r io.ReaderAt, size int64, name string, w Words) *NotSafetensorsError {
	buf := make([]byte, min(size, sniffBytes))
	n, _ := r.ReadAt(buf, 0)
	kind, hint := sniffKind(buf[:n], w)
	if kind == "" {
		return nil
	}
	return &NotSafetensorsError{File: name, Kind: kind, Hint: hint}
}

func sniffKind(b []byte, w Words) (kind, hint string) {
	t := bytes.TrimLeft(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), " \t\r\n")
	lower := bytes.ToLower(t[:min(len(t), 64)])
	switch {
	case bytes.HasPrefix(b, []byte("version https://git-lfs.github.com/spec/")):
		return "git-lfs-pointer", "this is a Git LFS pointer, not the weights (the repository was cloned without git-lfs): run `git lfs pull` in the clone, or " +
			"download the file with `hf download`"
	case bytes.HasPrefix(lower, []byte("<!doctype html")) || bytes.HasPrefix(lower, []byte("<html")) || bytes.HasPrefix(lower, []byte("<head")):
		return "html", "this is an HTML page (a download that saved an error or login page?), not safetensors"
	case bytes.HasPrefix(lower, []byte("<?xml")):
		return "xml", "this is XML text (an error response of a storage service?), not safetensors"
	case bytes.HasPrefix(b, []byte("GGUF")):
		return "gguf", "this is a GGUF file (llama.cpp), not safetensors"
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return "pytorch-zip", "this is a zip archive, such as a PyTorch checkpoint written by torch.save (pytorch_model.bin, .pt): convert it to safetensors first"
	case len(b) >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5:
		return "pickle", "this is a Python pickle, such as a legacy PyTorch checkpoint (.bin, .pt, .pth): convert it to safetensors first"
	case bytes.HasPrefix(b, []byte("\x1f\x8b")):
		return "gzip", "this is a gzip-compressed file: decompress it first"
	case bytes.HasPrefix(b, []byte("\x28\xb5\x2f\xfd")):
		return "zstd", "this is a zstd-compressed file (a `ckpt cache pack` archive?): decompress it first"
	case bytes.HasPrefix(b, []byte("\x93NUMPY")):
		return "numpy", "this is a NumPy .npy array, not safetensors"
	case len(t) > 0 && (t[0] == '{' || t[0] == '['):
		return "json", "this is JSON text" + jsonLooksLike(b, w) + ", not a safetensors file"
	case len(b) > 0 && isText(b):
		return "text", "this is a text file, not safetensors"
	}
	return "", ""
}

// notAnIndex names what a .json entry is when it is not an index: a JSON
// object without weight_map that looks like something known (a
// config.json, a ckpt contract, a tokenizer file), any other JSON object
// unless it is named like an index (*.index.json), or no JSON at all (an
// HTML page, a Git LFS pointer...), in the words sniff uses for the same
// bytes under another name. It returns nil for what may be an index: an
// object with weight_map, an *.index.json without one, and broken JSON,
// whose faults ParseIndex reports.
func notAnIndex(data []byte, name string, w Words) *NotSafetensorsError {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) == nil && top != nil {
		if _, ok := top["weight_map"]; ok {
			return nil
		}
		if jsonLooksLike(data, w) == "" && strings.HasSuffix(name, ".index.json") {
			return nil
		}
		kind, hint := sniffKind(data, w)
		return &NotSafetensorsError{File: name, Kind: kind, Hint: hint}
	}
	kind, hint := sniffKind(data[:min(len(data), sniffBytes)], w)
	if kind == "" || kind == "json" {
		return nil
	}
	return &NotSafetensorsError{File: name, Kind: kind, Hint: hint}
}

// DescribeBytes names what the start of a file looks like when it is not
// what was expected: "a Git LFS pointer", "an HTML page", "JSON text (it
// looks like a config.json)"...; "" when nothing is recognised. w are
// the caller's words for the options a hint names (Against: a contract).
func DescribeBytes(b []byte, w Words) string {
	if len(b) > 9 && b[8] == '{' && binary.LittleEndian.Uint64(b) <= uint64(len(b)-8) {
		return "it is a safetensors file"
	}
	kind, hint := sniffKind(b[:min(len(b), sniffBytes*64)], w)
	switch kind {
	case "":
		return ""
	case "json":
		if l := jsonLooksLike(b, w); l != "" {
			return l[2 : len(l)-1] // without " (" and ")"
		}
		return "JSON text"
	}
	return hint
}

// jsonLooksLike names common JSON files from their keys (the file may be
// cut off: keys are scanned, not parsed).
func jsonLooksLike(b []byte, w Words) string {
	var m map[string]json.RawMessage
	full := json.Unmarshal(b, &m) == nil
	has := func(k string) bool {
		if full {
			_, ok := m[k]
			return ok
		}
		return bytes.Contains(b, []byte(`"`+k+`"`))
	}
	switch {
	case has("weight_map"):
		return " (it looks like a model.safetensors.index.json: pass the checkpoint directory or the index)"
	case has("contract_version"):
		return " (it looks like a ckpt contract: use it with verify " + w.Of("Against") + ")"
	case has("architectures") || has("model_type"):
		return " (it looks like a config.json)"
	case has("added_tokens") || has("model_max_length"):
		return " (it looks like a tokenizer file)"
	}
	return ""
}

func isText(b []byte) bool {
	if !utf8.Valid(b[:len(b)-min(len(b), 3)]) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

// dirNames adds the subdirectories of a local directory store to its
// file names (as "name/").
func dirNames(store Store, names []string) []string {
	ds, ok := store.(*DirStore)
	if !ok {
		return names
	}
	ents, err := os.ReadDir(ds.dir)
	if err != nil {
		return names
	}
	out := append([]string(nil), names...)
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name()+"/")
		}
	}
	return out
}

// deviceFolder matches the device folders a Tenstorrent serving stack
// names its cache roots after (P150, P300, P150x4, T3K..., and MESH_DEVICE
// values such as P300x2).
var deviceFolder = regexp.MustCompile(`^(P100|P150|P300|BHGLX|N150|N300|T3K|TG)(x[0-9]+)?$`)

// describeDir says what a directory without safetensors holds, from its
// file names.
func describeDir(names []string) string {
	var bins, ggufs, caches, other []string
	hf := 0
	for _, n := range names {
		b := path.Base(n)
		switch {
		case strings.HasSuffix(b, ".bin") || strings.HasSuffix(b, ".pt") || strings.HasSuffix(b, ".pth") || strings.HasSuffix(b, ".ckpt"):
			bins = append(bins, b)
		case strings.HasSuffix(b, ".gguf"):
			ggufs = append(ggufs, b)
		case strings.HasPrefix(b, "tensor_cache_") || deviceFolder.MatchString(b):
			caches = append(caches, b)
		case b == "blobs" || b == "refs" || b == "snapshots":
			hf++
		default:
			other = append(other, b)
		}
	}
	sort.Strings(other)
	switch {
	case hf >= 2:
		return "it is a Hugging Face cache repository folder (models--org--name): open it as hf:org/name, or pass one of its snapshots/<commit> folders"
	case len(bins) > 0:
		return fmt.Sprintf("it holds a PyTorch checkpoint (%s): convert it to safetensors first", list(bins, 3))
	case len(ggufs) > 0:
		return fmt.Sprintf("it holds GGUF files (%s), not safetensors", list(ggufs, 3))
	case len(caches) > 0:
		return "it looks like a Tenstorrent tensor cache root (see ckpt cache ls), not a checkpoint"
	case len(other) == 0:
		return "it is empty"
	}
	return fmt.Sprintf("it holds %s", list(other, 5))
}

func list(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

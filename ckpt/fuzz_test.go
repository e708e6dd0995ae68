package ckpt_test

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// paddedReader serves data followed by zeros up to size, so that the fuzzer
// can explore large declared file sizes with small inputs.
type paddedReader struct {
	data []byte
	size int64
}

func (r *paddedReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	c := 0
	if off < int64(len(r.data)) {
		c = copy(p[:n], r.data[off:])
	}
	clear(p[c:n])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fileBytes frames a header with its 8-byte length and data.
func fileBytes(hdr string, data int) []byte {
	b := make([]byte, 8+len(hdr)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	copy(b[8:], hdr)
	return b
}

func FuzzReadHeader(f *testing.F) {
	f.Add(fileBytes(`{}`, 0), uint32(0))
	f.Add(fileBytes(` {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  `, 8), uint32(0))
	f.Add(fileBytes(`{"__metadata__":{"format":"pt"},"w":{"dtype":"F8_E4M3","shape":[2,3],"data_offsets":[0,6]},"s":{"dtype":"BF16","shape":[],"data_offsets":[6,8]}}`, 0), uint32(8))
	f.Add(fileBytes(`{"x":{"dtype":"F4","shape":[3],"data_offsets":[0,2]},"z":{"dtype":"BF16","shape":[2,0],"data_offsets":[2,2]}}`, 2), uint32(0))
	f.Add(fileBytes(`{"x":{"dtype":"F7","shape":[3],"data_offsets":[0,3]}}`, 3), uint32(0))
	// An empty tensor at the begin of another, listed after it (found by
	// the fuzzer: the check sorted by begin alone).
	f.Add(fileBytes(`{"":{"dtype":"","shape":[],"data_offsets":[0,7]},"0":{"dtype":"","shape":[],"data_offsets":[0,0]}}`, 7), uint32(0))
	for _, v := range ckpttest.CorruptFiles() {
		f.Add(v.Data, uint32(0))
	}
	for _, v := range ckpttest.ValidFiles() {
		f.Add(v.Data, uint32(0))
	}
	// Headers of the small FP8 fixture's shards, data left to the padding.
	dir := f.TempDir()
	if err := synth.Write(dir, synth.Small()); err != nil {
		f.Fatal(err)
	}
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for _, p := range shards {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		n := 8 + int(binary.LittleEndian.Uint64(b))
		f.Add(b[:n], uint32(len(b)-n))
	}
	f.Fuzz(func(t *testing.T, data []byte, pad uint32) {
		const name = "fuzz.safetensors"
		// Padding up to 4 MiB: larger declared sizes only let the header
		// length (and its allocation) grow toward 100 MB, which slows the
		// fuzzer without reaching new code; TestHugeHeaderDoesNotAllocate
		// covers them.
		size := int64(len(data)) + int64(pad%(4<<20))
		h, err := ckpt.ReadHeader(&paddedReader{data: data, size: size}, size, name)
		var unknown *ckpt.UnknownDTypeError
		if err != nil {
			if !errors.Is(err, ckpt.ErrMalformed) {
				t.Fatalf("error does not match ErrMalformed: %v", err)
			}
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			if !errors.As(err, &unknown) {
				if h != nil {
					t.Fatalf("header returned with error %v", err)
				}
				return
			}
			if h == nil {
				t.Fatalf("unknown dtype error without a header: %v", err)
			}
		}
		checkHeaderInvariants(t, h, size, unknown != nil)
	})
}

// checkHeaderInvariants asserts what a successful parse promises: tensors
// contiguous from 0 and covering the data section exactly, sizes matching
// shape × dtype, unique names.
func checkHeaderInvariants(t *testing.T, h *ckpt.Header, size int64, unknownOK bool) {
	t.Helper()
	if h.Size > ckpt.MaxHeaderSize || int64(h.Size)+8 > size || h.FileSize != size {
		t.Fatalf("header size %d / file size %d inconsistent with %d", h.Size, h.FileSize, size)
	}
	// In the reference crate's order (by begin, then end): an empty tensor
	// at the start of another is contiguous before it.
	ts := append([]ckpt.TensorInfo(nil), h.Tensors...)
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Begin != ts[j].Begin {
			return ts[i].Begin < ts[j].Begin
		}
		return ts[i].End < ts[j].End
	})
	seen := map[string]bool{}
	var end uint64
	for _, ti := range ts {
		if seen[ti.Name] {
			t.Fatalf("duplicate tensor %q accepted", ti.Name)
		}
		seen[ti.Name] = true
		if ti.Begin != end || ti.End < ti.Begin {
			t.Fatalf("tensor %q at [%d,%d) not contiguous after %d", ti.Name, ti.Begin, ti.End, end)
		}
		end = ti.End
		got, ok := h.Lookup(ti.Name)
		if !ok || got.Begin != ti.Begin {
			t.Fatalf("Lookup(%q) failed", ti.Name)
		}
		if !ti.DType.Known() {
			if !unknownOK {
				t.Fatalf("unknown dtype %q accepted without error", ti.DType)
			}
			continue
		}
		n := ti.Numel()
		if n == ^uint64(0) && len(ti.Shape) > 0 {
			t.Fatalf("tensor %q: numel overflow accepted", ti.Name)
		}
		bitsTotal := n * uint64(ti.DType.Bits())
		if n != 0 && bitsTotal/n != uint64(ti.DType.Bits()) {
			t.Fatalf("tensor %q: byte size overflow accepted", ti.Name)
		}
		if bitsTotal%8 != 0 || bitsTotal/8 != ti.NBytes() {
			t.Fatalf("tensor %q: %d bytes for shape %v of %s", ti.Name, ti.NBytes(), ti.Shape, ti.DType)
		}
	}
	if end != uint64(size-h.DataStart()) {
		t.Fatalf("tensors end at %d but the data section has %d bytes", end, size-h.DataStart())
	}
}

// FuzzParseIndex: an index never panics the parser; a parsed index has
// unique tensor names and every duplicate recorded.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":8},"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"x","a":"y"}}`))
	f.Add([]byte(`{"metadata":{"total_size":"12"},"weight_map":{}}`))
	for _, c := range ckpttest.CorruptDirs() {
		if b, ok := c.Files[ckpt.IndexFile]; ok {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := ckpt.ParseIndex(data, "idx.json")
		if err != nil {
			if !errors.Is(err, ckpt.ErrMalformed) || !strings.Contains(err.Error(), "idx.json") {
				t.Fatalf("bad error: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, e := range idx.WeightMap {
			if seen[e.Tensor] {
				t.Fatalf("duplicate %q in WeightMap", e.Tensor)
			}
			seen[e.Tensor] = true
		}
		for _, d := range idx.Duplicates {
			if !seen[d] {
				t.Fatalf("duplicate %q not in WeightMap", d)
			}
		}
		_ = idx.Shards()
	})
}

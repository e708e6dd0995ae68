package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
)

// The ids of the data checks (CheckOptions.ReadData).
const (
	DataScaleValues    ckpt.FindingID = "data.scale_values"    // scale values not finite and > 0
	DataFP8NaN         ckpt.FindingID = "data.fp8_nan"         // NaN codes 0x7f/0xff in F8_E4M3 tensors
	DataFloatNonFinite ckpt.FindingID = "data.float_nonfinite" // NaN/Inf in float tensors
	DataHash           ckpt.FindingID = "data.hash"            // per-tensor xxh3-64 of the raw bytes
	DataRead           ckpt.FindingID = "data.read"            // tensors that could not be read
)

var dataIDs = []ckpt.FindingID{DataScaleValues, DataFP8NaN, DataFloatNonFinite, DataHash}

// kinds of data scan.
const (
	kindOther = iota
	kindScale
	kindE4M3
	kindFloat
)

func kindOf(t *ckpt.Tensor) int {
	isScale := strings.HasSuffix(t.Name, ckpt.ScaleSuffix) || isCompressedScale(t.Name)
	switch {
	case isScale && (t.DType == numfmt.F32 || t.DType == numfmt.BF16 || t.DType == numfmt.F16 || t.DType == numfmt.F64 ||
		t.DType == numfmt.F8E4M3 || t.DType == numfmt.F8E8M0):
		return kindScale
	case t.DType == numfmt.F8E4M3:
		return kindE4M3
	case t.DType == numfmt.BF16 || t.DType == numfmt.F16 || t.DType == numfmt.F32 || t.DType == numfmt.F64 || t.DType == numfmt.F8E5M2:
		return kindFloat
	}
	return kindOther
}

// tensorData is the outcome of reading one tensor.
type tensorData struct {
	t      *ckpt.Tensor
	kind   int
	c      counts
	hasher *xxh3s.Hasher
	hash   string
	err    error
	cut    bool // not read: its file is truncated
}

// scanChunk scans one chunk; off is the byte offset in the tensor.
func scanChunk(td *tensorData, p []byte, off int64, c *counts, tmp []float32) []float32 {
	bits := int64(td.t.DType.Bits())
	if bits == 0 {
		return tmp
	}
	base := off * 8 / bits
	switch td.kind {
	case kindScale:
		tmp = scanScales(td.t.DType, p, base, c, tmp)
	case kindE4M3:
		scanValues(numfmt.F8E4M3, p, base, c)
	case kindFloat:
		switch td.t.DType {
		case numfmt.BF16, numfmt.F16, numfmt.F32, numfmt.F64, numfmt.F8E5M2:
			scanValues(td.t.DType, p, base, c)
		}
	}
	return tmp
}

// fileSHA is the SHA-256 of a whole file computed from the tensor bytes
// readAll streams (in file order) plus the bytes between them (header,
// padding, the tail), read on the side: a file is read once for both its
// tensor checks and its digest.
type fileSHA struct {
	f      *ckpt.File
	h      hash.Hash
	next   int64 // file offset hashed up to
	sum    string
	failed bool // the stream could not be hashed: hash the file itself
}

// gap hashes the file bytes [fs.next, to) read from the store.
func (fs *fileSHA) gap(ctx context.Context, st ckpt.Store, to int64) {
	if fs.failed || to <= fs.next {
		fs.failed = fs.failed || to < fs.next
		return
	}
	b, err := st.Open(ctx, fs.f.Name)
	if err != nil {
		fs.failed = true
		return
	}
	defer b.Close()
	if _, err := io.Copy(fs.h, io.NewSectionReader(b, fs.next, to-fs.next)); err != nil {
		fs.failed = true
		return
	}
	fs.next = to
}

// readAll streams every tensor once: chunks are read and scanned in
// parallel (at most workers at a time, each with one chunk-sized buffer),
// and each tensor's hash is fed in chunk order. Chunks are scheduled in
// file order, tensor by tensor by offset; for the files in sha (may be
// nil) the chunks are also fed, in file order, into the file's SHA-256.
func readAll(ctx context.Context, c *ckpt.Checkpoint, opt CheckOptions, sha map[*ckpt.File]*fileSHA) ([]*tensorData, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	chunk := int64(opt.ChunkSize)
	if chunk <= 0 {
		chunk = ckpt.StreamChunk(c)
	}
	out := make([]*tensorData, len(c.Tensors))
	order := make([]*tensorData, 0, len(out))
	for i, t := range c.Tensors {
		td := &tensorData{t: t, kind: kindOf(t), hasher: xxh3s.New()}
		td.c.first = -1
		td.cut = t.Offset()+int64(t.NBytes()) > t.File.RealSize
		out[i] = td
		if !td.cut {
			order = append(order, td)
		}
	}
	ckpt.InFileOrder(c, order, func(td *tensorData) *ckpt.Tensor { return td.t })
	lastOf := map[*ckpt.File]*tensorData{}
	ts := make([]*ckpt.Tensor, len(order))
	for i, td := range order {
		lastOf[td.t.File] = td
		ts[i] = td.t
	}
	for f, fs := range sha {
		if lastOf[f] == nil { // no tensor streamed: hash the file itself
			fs.failed = true
		}
	}
	err := ckpt.StreamTensors(ctx, ts, ckpt.StreamOptions[counts]{Workers: workers, Chunk: chunk, Progress: opt.Progress,
		Chain: func(f *ckpt.File) bool { return sha[f] != nil },
		Read: func(ch *ckpt.Chunk) counts {
			cc := counts{first: -1}
			if ch.Err == nil {
				scanChunk(order[ch.Index], ch.Data, ch.Off, &cc, nil)
			}
			return cc
		},
		Feed: func(ch *ckpt.Chunk, cc counts) {
			td, fs := order[ch.Index], sha[ch.Tensor.File]
			if td.err == nil && ch.Err != nil {
				td.err = ch.Err
			}
			if td.err == nil {
				td.hasher.Write(ch.Data)
				td.c.merge(&cc)
			}
			if fs != nil {
				fs.gap(ctx, c.Store, td.t.Offset()+ch.Off)
				if ch.Err != nil {
					fs.failed = true
				}
				if !fs.failed {
					fs.h.Write(ch.Data)
					fs.next += int64(len(ch.Data))
				}
				if ch.Last && lastOf[td.t.File] == td {
					fs.gap(ctx, c.Store, td.t.File.Size)
					if !fs.failed {
						fs.sum = hex.EncodeToString(fs.h.Sum(nil))
					}
				}
			}
			if ch.Last {
				if td.err == nil {
					td.hash = fmt.Sprintf("%016x", td.hasher.Sum64())
				}
				td.hasher = nil
			}
		}})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// streamedSHA returns the files whose SHA-256 the cache checks will want
// (--read-data on a source that records digests), to be hashed while
// readAll streams them.
func streamedSHA(c *ckpt.Checkpoint, opt CheckOptions) map[*ckpt.File]*fileSHA {
	ds, ok := ckpt.UnwrapStore(c.Store).(ckpt.DigestStore)
	if !ok || !opt.ReadData {
		return nil
	}
	out := map[*ckpt.File]*fileSHA{}
	for _, f := range c.Files {
		if _, ok := ds.ExpectedSHA256(f.Name); ok {
			out[f] = &fileSHA{f: f, h: sha256.New()}
		}
	}
	return out
}

// digests returns file name → SHA-256 (hex) of the files hashed while
// streaming.
func digests(sha map[*ckpt.File]*fileSHA) map[string]string {
	out := map[string]string{}
	for f, fs := range sha {
		if fs.sum != "" {
			out[f.Name] = fs.sum
		}
	}
	return out
}

// dataChecks reads every tensor once (with --read-data) and returns the
// data checks, the xxh3 of every tensor read and the SHA-256 of the files
// hashed on the way (see streamedSHA).
func dataChecks(ctx context.Context, c *ckpt.Checkpoint, opt CheckOptions) ([]ckpt.Finding, map[string]string, map[string]string, error) {
	if !opt.ReadData {
		out := make([]ckpt.Finding, len(dataIDs))
		for i, id := range dataIDs {
			out[i] = ckpt.Finding{ID: id, Status: ckpt.Skip, Message: "not checked: tensor data is read only with " + opt.Words.Of("ReadData")}
		}
		return out, nil, nil, nil
	}
	sha := streamedSHA(c, opt)
	res, err := readAll(ctx, c, opt, sha)
	if err != nil {
		return nil, nil, nil, err
	}
	hashes := make(map[string]string, len(res))
	var scales, overflow, fp8, floats []ckpt.Finding
	var nScale, nFP8, nFloat, nHash int
	var bytes int64
	var readFails []ckpt.Finding
	var cut []string
	for _, td := range res {
		t := td.t
		switch {
		case td.cut:
			cut = append(cut, t.Name)
			continue
		case td.err != nil:
			readFails = append(readFails, ckpt.Finding{ID: DataRead, Status: ckpt.Fail, Tensors: []string{t.Name},
				Message: fmt.Sprintf("%s could not be read: %v", ckpt.EscapeName(t.Name), td.err)})
			continue
		}
		hashes[t.Name] = td.hash
		nHash++
		bytes += int64(t.NBytes())
		cc := &td.c
		switch td.kind {
		case kindScale:
			nScale++
			if cc.bad() > 0 {
				scales = append(scales, ckpt.Finding{ID: DataScaleValues, Status: ckpt.Fail, Tensors: []string{t.Name},
					Message: fmt.Sprintf("%s: %d of %d scale values are not finite and > 0 (NaN %d, Inf %d, zero %d, negative %d; first at element %d = %s)",
						ckpt.EscapeName(t.Name), cc.bad(), cc.n, cc.nan, cc.inf, cc.zero, cc.neg, cc.first, cc.firstValue)})
			}
			if cc.over > 0 {
				overflow = append(overflow, scaleOverflowCheck(t, cc, opt.Words))
			}
		case kindE4M3:
			nFP8++
			if cc.nan > 0 {
				fp8 = append(fp8, ckpt.Finding{ID: DataFP8NaN, Status: ckpt.Fail, Tensors: []string{t.Name},
					Message: fmt.Sprintf("%s: %d of %d F8_E4M3 codes are NaN (0x7f/0xff); first at element %d", ckpt.EscapeName(t.Name), cc.nan, cc.n, cc.first)})
			}
		case kindFloat:
			nFloat++
			if cc.nan+cc.inf > 0 {
				floats = append(floats, ckpt.Finding{ID: DataFloatNonFinite, Status: ckpt.Fail, Tensors: []string{t.Name},
					Message: fmt.Sprintf("%s (%s): %d NaN and %d Inf of %d values; first at element %d = %s",
						ckpt.EscapeName(t.Name), t.DType, cc.nan, cc.inf, cc.n, cc.first, cc.firstValue)})
			}
		}
	}
	var out []ckpt.Finding
	out = ckpt.AppendOr(out, scales, ckpt.Finding{ID: DataScaleValues, Status: ckpt.Pass,
		Message: fmt.Sprintf("every value of %s is finite and > 0", ckpt.Plural(nScale, "scale tensor", "scale tensors"))})
	out = append(out, overflow...)
	out = ckpt.AppendOr(out, fp8, ckpt.Finding{ID: DataFP8NaN, Status: ckpt.Pass,
		Message: fmt.Sprintf("no NaN codes in %s", ckpt.Plural(nFP8, "F8_E4M3 tensor", "F8_E4M3 tensors"))})
	out = ckpt.AppendOr(out, floats, ckpt.Finding{ID: DataFloatNonFinite, Status: ckpt.Pass,
		Message: fmt.Sprintf("no NaN or Inf in %s", ckpt.Plural(nFloat, "float tensor", "float tensors"))})
	out = append(out, ckpt.Finding{ID: DataHash, Status: ckpt.Pass,
		Message: fmt.Sprintf("xxh3-64 of %s (%d bytes) computed", ckpt.Plural(nHash, "tensor", "tensors"), bytes)})
	if len(cut) > 0 {
		out = append(out, ckpt.Finding{ID: DataRead, Status: ckpt.Skip, Tensors: cut,
			Message: fmt.Sprintf("%s not read: cut off by a truncated file (see file.size)", ckpt.Plural(len(cut), "tensor", "tensors"))})
	}
	out = ckpt.AppendOr(out, readFails, ckpt.Finding{ID: DataRead, Status: ckpt.Pass, Message: fmt.Sprintf("%s read", ckpt.Plural(nHash, "tensor", "tensors"))})
	return out, hashes, digests(sha), nil
}

// scaleOverflowCheck warns about the scales of t whose product with the
// largest F8_E4M3 code (448) is beyond the bf16 range: the weight's values
// in those blocks dequantise to Inf in bf16 (and in float32 when the
// product overflows that too).
func scaleOverflowCheck(t *ckpt.Tensor, cc *counts, w ckpt.Words) ckpt.Finding {
	_, cols := ckpt.Matrix(t.Shape)
	block := fmt.Sprintf("element %d", cc.overFirst)
	if len(t.Shape) == 2 && cols > 0 {
		block = fmt.Sprintf("block [%d, %d]", cc.overFirst/cols, cc.overFirst%cols)
	}
	in := fmt.Sprintf("the BF16 maximum %.5g", numfmt.MaxFinite(numfmt.BF16))
	if !numfmt.FiniteIn(numfmt.F32, cc.overValue*numfmt.E4M3MaxFinite) {
		in = fmt.Sprintf("the F32 maximum %.5g (and BF16's)", numfmt.MaxFinite(numfmt.F32))
	}
	return ckpt.Finding{ID: DataScaleValues, Status: ckpt.Warn, Tensors: []string{t.Name},
		Message: fmt.Sprintf("%s: %d of %d scale values times the largest F8_E4M3 code %d exceed %s; first at %s = %s: dequantised weights there are Inf "+
			"(cache build and extract %s refuse them)",
			ckpt.EscapeName(t.Name), cc.over, cc.n, numfmt.E4M3MaxFinite, in, block, formatFloat(cc.overValue), w.Of("DType"))}
}

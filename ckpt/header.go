package ckpt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// maxHeaderSize is the largest header the reference implementation accepts.
const maxHeaderSize = 100_000_000

// TensorInfo is one header entry. Begin and End are relative to the start of
// the data section, End exclusive.
type TensorInfo struct {
	Name       string
	DType      numfmt.DType
	Shape      []int64
	Begin, End uint64
}

// Numel is the number of elements (1 for a rank-0 tensor). It saturates at
// math.MaxUint64 on overflow, which ReadHeader rejects.
func (t *TensorInfo) Numel() uint64 {
	n := uint64(1)
	for _, d := range t.Shape {
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 {
			return math.MaxUint64
		}
		n = lo
	}
	return n
}

// NBytes is End - Begin.
func (t *TensorInfo) NBytes() uint64 { return t.End - t.Begin }

// Lint is a deviation from the strict format that the reference reader
// tolerates (reported by verify as a warning).
type Lint struct {
	ID      LintID
	Message string
}

// LintID names a strict-format deviation (Lint.ID).
type LintID string

// The ids of the header lints.
const (
	LintStart   LintID = "header.start"   // the header starts with whitespace, not '{'
	LintPadding LintID = "header.padding" // padding other than spaces after the JSON
	LintOrder   LintID = "header.order"   // tensors not in the reference writer's order
	LintForm    LintID = "header.form"    // an entry as an array, or a dtype as an object
)

// Header is a parsed safetensors header.
type Header struct {
	File        string // name used in errors
	FileSize    int64
	Size        uint64 // N, the JSON length
	Metadata    map[string]string
	HasMetadata bool
	Tensors     []TensorInfo // in the order of the JSON
	Lints       []Lint
	byName      map[string]int
}

// DataStart is the absolute offset of the data section (8 + N).
func (h *Header) DataStart() int64 { return 8 + int64(h.Size) }

// Lookup returns the tensor named name.
func (h *Header) Lookup(name string) (*TensorInfo, bool) {
	i, ok := h.byName[name]
	if !ok {
		return nil, false
	}
	return &h.Tensors[i], true
}

// ReadHeader reads and validates the header of a safetensors file of the
// given size. name is used in error messages. It never reads tensor data and
// allocates at most the header's length, after checking it against size.
//
// If some dtypes are unknown, the header is returned together with an
// *UnknownDTypeError; any other error returns a nil header.
func ReadHeader(r io.ReaderAt, size int64, name string) (*Header, error) {
	h, _, err := readHeader(r, size, name, false, nil)
	return h, err
}

// readHeader is ReadHeader. With lenient set, a file whose size differs
// from the size its header implies (8 + header + the end of the last
// tensor: a truncated download, trailing bytes) is not an error: the header
// is validated against the implied size, which is returned (else size).
// w are the caller's words for the hint of a file that is not safetensors.
func readHeader(r io.ReaderAt, size int64, name string, lenient bool, w Words) (*Header, int64, error) {
	ferr := func(off int64, format string, args ...any) error {
		return &FormatError{File: name, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if size < 8 {
		if e := sniff(r, size, name, w); e != nil {
			return nil, 0, e
		}
		return nil, 0, ferr(0, "header too small: file has %d bytes, need at least 8 for the header length", size)
	}
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, 0, fmt.Errorf("reading header length of %s: %w", name, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderSize || int64(n) > size-8 {
		if e := sniff(r, size, name, w); e != nil { // what is it, then? (sniff.go)
			return nil, 0, e
		}
	}
	if n > maxHeaderSize {
		return nil, 0, ferr(0, "header too large: length field says %d bytes, limit is %d", n, maxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, 0, ferr(0, "invalid header length: length field says %d bytes but the file has only %d after it (truncated?)", n, size-8)
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, 8); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size-8) {
		return nil, 0, fmt.Errorf("reading header of %s: %w", name, err)
	}
	h, err := parseHeader(buf, name)
	if h == nil {
		return nil, 0, err
	}
	if lenient {
		var end uint64
		for _, t := range h.Tensors {
			end = max(end, t.End)
		}
		if end <= 1<<62 {
			size = 8 + int64(n) + int64(end)
		}
	}
	h.FileSize = size
	if verr := h.validate(size); verr != nil {
		return nil, 0, verr
	}
	return h, size, err
}

// parseHeader parses the JSON header bytes (without the 8-byte length) and
// checks the schema, but not offsets against a file size; ReadHeader does
// both. Offsets in errors are absolute file offsets (8 + position).
func parseHeader(buf []byte, name string) (*Header, error) {
	h := &Header{File: name, Size: uint64(len(buf)), byName: map[string]int{}}
	if !utf8.Valid(buf) {
		bad := 0
		for bad < len(buf) {
			r, sz := utf8.DecodeRune(buf[bad:])
			if r == utf8.RuneError && sz <= 1 {
				break
			}
			bad += sz
		}
		return nil, &FormatError{File: name, Offset: 8 + int64(bad), Reason: "invalid UTF-8 in header"}
	}
	p := &headerParser{s: jscan{buf: buf, maxDepth: serdeMaxDepth, base: 8}, h: h, name: name}
	if err := p.parse(); err != nil {
		return nil, err
	}
	// Lints: leading byte and trailing padding.
	trimmed := bytes.TrimLeft(buf, " \t\r\n")
	if len(buf) > 0 && buf[0] != '{' && len(trimmed) > 0 && trimmed[0] == '{' {
		h.Lints = append(h.Lints, Lint{LintStart, fmt.Sprintf("header starts with %d byte(s) of whitespace, not '{'", len(buf)-len(trimmed))})
	}
	end := p.end
	for i, c := range buf[end:] {
		if c != ' ' {
			h.Lints = append(h.Lints, Lint{LintPadding, fmt.Sprintf("header padding at byte %d is 0x%02x, not a space", 8+end+i, c)})
			break
		}
	}
	var unknown *UnknownDTypeError
	for _, t := range h.Tensors {
		if !t.DType.Known() {
			if unknown == nil {
				unknown = &UnknownDTypeError{File: name}
			}
			unknown.Tensors = append(unknown.Tensors, t.Name)
			unknown.DTypes = append(unknown.DTypes, string(t.DType))
		}
	}
	if unknown != nil {
		return h, unknown
	}
	return h, nil
}

// serdeMaxDepth is serde_json's nesting limit as the reference crate meets
// it: 127 levels of objects and arrays, the header object included (its
// recursion limit of 128, measured against safetensors 0.8.0). Without a
// bound a header of 100 MB of '[' would grow the stack without limit.
const serdeMaxDepth = 127

// maxDims bounds a shape (ckpt is stricter than the reference here: no
// framework builds a tensor of more dimensions).
const maxDims = 4096

// headerParser reads a header as the reference crate does: the members of
// the top-level object are tensors, except the key "__metadata__" (an
// object of strings, or null), which may appear once. A tensor entry is an
// object with the fields dtype, shape and data_offsets, each at most once,
// other fields ignored (but still checked as JSON); serde also accepts the
// entry as an array [dtype, shape, data_offsets] and a dtype written as
// {"F32": null}, which ckpt reads alike and lints (header.form). A tensor
// name given twice is an error in ckpt (the reference keeps the last).
type headerParser struct {
	s    jscan
	h    *Header
	name string
	end  int // position after the header object
	form bool
}

// jsonErr turns a scanner error into the header's FormatError.
func (p *headerParser) jsonErr(err error, tensor string) error {
	var se *jsonSyntaxError
	if errors.As(err, &se) {
		return &FormatError{File: p.name, Tensor: tensor, Offset: se.Offset, Reason: "invalid JSON in header: " + se.Msg}
	}
	return err
}

func (p *headerParser) errf(format string, args ...any) error {
	return &FormatError{File: p.name, Offset: 8 + int64(p.s.pos), Reason: "invalid JSON in header: " + fmt.Sprintf(format, args...)}
}

func (p *headerParser) tensorErr(tensor, format string, args ...any) error {
	return p.tensorErrAt(p.s.pos, tensor, format, args...)
}

func (p *headerParser) tensorErrAt(pos int, tensor, format string, args ...any) error {
	return &FormatError{File: p.name, Tensor: tensor, Offset: 8 + int64(pos), Reason: fmt.Sprintf(format, args...)}
}

func (p *headerParser) parse() error {
	s := &p.s
	if c := s.peek(); c != '{' {
		return p.errf("expected '{' to start the header, found %s", s.found())
	}
	if err := s.open('{'); err != nil {
		return p.jsonErr(err, "")
	}
	for first := true; ; first = false {
		ok, err := s.more('}', first)
		if err != nil {
			return p.jsonErr(err, "")
		}
		if !ok {
			break
		}
		key, at, err := s.key()
		if err != nil {
			return p.jsonErr(err, "")
		}
		if key == "__metadata__" {
			if p.h.HasMetadata {
				return p.tensorErrAt(at, key, "duplicate key __metadata__ in header")
			}
			if err := p.parseMetadata(); err != nil {
				return err
			}
			continue
		}
		if _, dup := p.h.byName[key]; dup {
			return p.tensorErrAt(at, key, "duplicate tensor name in header (the reference reader keeps the last entry, other parsers the first)")
		}
		ti, err := p.parseTensor(key)
		if err != nil {
			return err
		}
		p.h.byName[key] = len(p.h.Tensors)
		p.h.Tensors = append(p.h.Tensors, ti)
	}
	p.end = s.pos
	if err := s.end(); err != nil {
		return p.errf("unexpected data after the header object")
	}
	if p.form {
		p.h.Lints = append(p.h.Lints, Lint{LintForm, "a tensor entry is written as an array, or a dtype as an object: the reference reader accepts it, its " +
			"writer never produces it"})
	}
	return nil
}

func (p *headerParser) parseMetadata() error {
	s := &p.s
	p.h.HasMetadata = true
	switch s.peek() {
	case 'n':
		if _, err := s.literal(); err != nil {
			return p.jsonErr(err, "__metadata__")
		}
		return nil // "__metadata__": null is accepted as no metadata
	case '{':
	default:
		return p.tensorErr("__metadata__", "__metadata__ must be an object of strings, found %s", s.found())
	}
	if err := s.open('{'); err != nil {
		return p.jsonErr(err, "__metadata__")
	}
	p.h.Metadata = map[string]string{}
	for first := true; ; first = false {
		ok, err := s.more('}', first)
		if err != nil {
			return p.jsonErr(err, "__metadata__")
		}
		if !ok {
			return nil
		}
		k, _, err := s.key()
		if err != nil {
			return p.jsonErr(err, "__metadata__")
		}
		if s.peek() != '"' {
			return p.tensorErr("__metadata__", "value of __metadata__ key %s must be a string, found %s", Quote(k), s.found())
		}
		v, err := s.str()
		if err != nil {
			return p.jsonErr(err, "__metadata__")
		}
		p.h.Metadata[k] = v // a repeated key: the last wins, as in the reference
	}
}

func (p *headerParser) parseTensor(name string) (TensorInfo, error) {
	s := &p.s
	ti := TensorInfo{Name: name}
	switch s.peek() {
	case '{':
	case '[':
		return p.parseTensorSeq(name)
	default:
		return ti, p.tensorErr(name, "invalid JSON in header: tensor entry must be an object, found %s", s.found())
	}
	if err := s.open('{'); err != nil {
		return ti, p.jsonErr(err, name)
	}
	var haveDType, haveShape, haveOffsets bool
	for first := true; ; first = false {
		ok, err := s.more('}', first)
		if err != nil {
			return ti, p.jsonErr(err, name)
		}
		if !ok {
			break
		}
		field, at, err := s.key()
		if err != nil {
			return ti, p.jsonErr(err, name)
		}
		var dup bool
		switch field {
		case "dtype":
			dup, haveDType = haveDType, true
		case "shape":
			dup, haveShape = haveShape, true
		case "data_offsets":
			dup, haveOffsets = haveOffsets, true
		default:
			if err := s.skip(); err != nil {
				return ti, p.jsonErr(err, name)
			}
			continue
		}
		if dup {
			return ti, p.tensorErrAt(at, name, "invalid JSON in header: duplicate field %s in the tensor entry (the reference reader refuses it)", field)
		}
		if err := p.parseField(&ti, field); err != nil {
			return ti, err
		}
	}
	switch {
	case !haveDType:
		return ti, p.tensorErr(name, "missing field dtype")
	case !haveShape:
		return ti, p.tensorErr(name, "missing field shape")
	case !haveOffsets:
		return ti, p.tensorErr(name, "missing field data_offsets")
	}
	return ti, nil
}

// parseTensorSeq reads the array form [dtype, shape, data_offsets].
func (p *headerParser) parseTensorSeq(name string) (TensorInfo, error) {
	s := &p.s
	ti := TensorInfo{Name: name}
	if err := s.open('['); err != nil {
		return ti, p.jsonErr(err, name)
	}
	fields := []string{"dtype", "shape", "data_offsets"}
	n := 0
	for first := true; ; first = false {
		ok, err := s.more(']', first)
		if err != nil {
			return ti, p.jsonErr(err, name)
		}
		if !ok {
			break
		}
		if n == len(fields) {
			return ti, p.tensorErr(name, "invalid JSON in header: tensor entry as an array must have 3 elements (dtype, shape, data_offsets), found more")
		}
		if err := p.parseField(&ti, fields[n]); err != nil {
			var fe *FormatError
			if errors.As(err, &fe) && !strings.HasPrefix(fe.Reason, "invalid JSON") {
				fe.Reason = "invalid JSON in header: in the tensor entry as an array: " + fe.Reason
			}
			return ti, err
		}
		n++
	}
	if n != len(fields) {
		return ti, p.tensorErr(name, "invalid JSON in header: tensor entry as an array must have 3 elements (dtype, shape, data_offsets), found %d", n)
	}
	p.form = true
	return ti, nil
}

func (p *headerParser) parseField(ti *TensorInfo, field string) error {
	s := &p.s
	switch field {
	case "dtype":
		switch s.peek() {
		case '"':
			v, err := s.str()
			if err != nil {
				return p.jsonErr(err, ti.Name)
			}
			ti.DType = numfmt.DType(v)
			return nil
		case '{': // serde's externally tagged form of a unit variant: {"F32": null}
			if err := s.open('{'); err != nil {
				return p.jsonErr(err, ti.Name)
			}
			ok, err := s.more('}', true)
			if err != nil {
				return p.jsonErr(err, ti.Name)
			}
			if ok {
				k, _, err := s.key()
				if err != nil {
					return p.jsonErr(err, ti.Name)
				}
				if s.peek() == 'n' {
					if _, err := s.literal(); err != nil {
						return p.jsonErr(err, ti.Name)
					}
					if ok, err := s.more('}', false); err == nil && !ok {
						ti.DType = numfmt.DType(k)
						p.form = true
						return nil
					}
				}
			}
			return p.tensorErr(ti.Name, "dtype must be a string (or an object of one dtype key with the value null)")
		}
		return p.tensorErr(ti.Name, "dtype must be a string, found %s", s.found())
	case "shape":
		dims, err := p.parseUints(ti.Name, "shape", -1)
		if err != nil {
			return err
		}
		ti.Shape = make([]int64, len(dims))
		for i, d := range dims {
			if d > math.MaxInt64 {
				return p.tensorErr(ti.Name, "shape dimension %d is too large (%d)", i, d)
			}
			ti.Shape[i] = int64(d)
		}
	default: // data_offsets
		offs, err := p.parseUints(ti.Name, "data_offsets", 2)
		if err != nil {
			return err
		}
		ti.Begin, ti.End = offs[0], offs[1]
	}
	return nil
}

// parseUints reads an array of non-negative integers; want < 0 means any length.
func (p *headerParser) parseUints(tensor, field string, want int) ([]uint64, error) {
	s := &p.s
	if s.peek() != '[' {
		return nil, p.tensorErr(tensor, "invalid JSON in header: expected '[' to start %s of tensor %s, found %s", field, Quote(tensor), s.found())
	}
	if err := s.open('['); err != nil {
		return nil, p.jsonErr(err, tensor)
	}
	out := make([]uint64, 0, 4)
	for first := true; ; first = false {
		ok, err := s.more(']', first)
		if err != nil {
			return nil, p.jsonErr(err, tensor)
		}
		if !ok {
			break
		}
		c := s.peek()
		if c != '-' && (c < '0' || c > '9') {
			return nil, p.tensorErr(tensor, "%s must hold non-negative integers, found %s", field, s.found())
		}
		lit, isInt, err := s.number()
		if err != nil {
			return nil, p.jsonErr(err, tensor)
		}
		v, perr := strconv.ParseUint(lit, 10, 64)
		if !isInt || perr != nil {
			return nil, p.tensorErr(tensor, "%s must hold non-negative integers that fit in 64 bits, found %s", field, truncLit(lit))
		}
		if len(out) >= maxDims {
			return nil, p.tensorErr(tensor, "%s has more than %d entries", field, maxDims)
		}
		out = append(out, v)
	}
	if want >= 0 && len(out) != want {
		return nil, p.tensorErr(tensor, "%s must have %d entries, found %d", field, want, len(out))
	}
	return out, nil
}

// validate applies the reference crate's offset and size rules against the
// file size.
func (h *Header) validate(size int64) error {
	order := make([]int, len(h.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := &h.Tensors[order[a]], &h.Tensors[order[b]]
		if ta.Begin != tb.Begin {
			return ta.Begin < tb.Begin
		}
		return ta.End < tb.End
	})
	data := h.DataStart()
	abs := func(off uint64) int64 {
		if off > uint64(math.MaxInt64-data) {
			return -1
		}
		return data + int64(off)
	}
	var end uint64
	for _, i := range order {
		t := &h.Tensors[i]
		if t.End < t.Begin {
			return &FormatError{File: h.File, Tensor: t.Name, Offset: abs(t.Begin),
				Reason: fmt.Sprintf("invalid offset: data_offsets [%d, %d] end before begin", t.Begin, t.End)}
		}
		if t.Begin != end {
			what := "a gap"
			if t.Begin < end {
				what = "an overlap"
			}
			return &FormatError{File: h.File, Tensor: t.Name, Offset: abs(t.Begin),
				Reason: fmt.Sprintf("invalid offset: data begins at %d but the previous tensor ends at %d (%s)", t.Begin, end, what)}
		}
		end = t.End
		if !t.DType.Known() {
			continue
		}
		numel := uint64(1)
		overflow := false
		for _, d := range t.Shape {
			hi, lo := bits.Mul64(numel, uint64(d))
			overflow = overflow || hi != 0
			numel = lo
		}
		hi, nbits := bits.Mul64(numel, uint64(t.DType.Bits()))
		if overflow || hi != 0 {
			return &FormatError{File: h.File, Tensor: t.Name, Offset: abs(t.Begin),
				Reason: fmt.Sprintf("overflow computing byte size from shape %v and dtype %s", t.Shape, t.DType)}
		}
		if nbits%8 != 0 {
			return &FormatError{File: h.File, Tensor: t.Name, Offset: abs(t.Begin),
				Reason: fmt.Sprintf("misaligned slice: %d elements of %s (%d bits) do not fill whole bytes", numel, t.DType, t.DType.Bits())}
		}
		if t.End-t.Begin != nbits/8 {
			return &FormatError{File: h.File, Tensor: t.Name, Offset: abs(t.Begin),
				Reason: fmt.Sprintf("invalid tensor info: shape %v of %s needs %d bytes, data_offsets [%d, %d] span %d",
					t.Shape, t.DType, nbits/8, t.Begin, t.End, t.End-t.Begin)}
		}
	}
	dataLen := uint64(size - data)
	if end != dataLen {
		if end > dataLen {
			return &FormatError{File: h.File, Offset: size,
				Reason: fmt.Sprintf("incomplete file: tensors need %d data bytes (file size %d) but the file has %d (%d bytes missing; truncated download?)",
					end, data+int64(min(end, uint64(math.MaxInt64/2))), size, end-dataLen)}
		}
		return &FormatError{File: h.File, Offset: data + int64(end),
			Reason: fmt.Sprintf("metadata incomplete: %d trailing bytes after the last tensor are not covered by any tensor", dataLen-end)}
	}
	// Lint: the reference writer's order (dtype descending, then name).
	for k := 1; k < len(order); k++ {
		a, b := &h.Tensors[order[k-1]], &h.Tensors[order[k]]
		if !writerLess(a, b) {
			h.Lints = append(h.Lints, Lint{LintOrder, fmt.Sprintf("tensor %s is stored after %s, not in the reference writer's order (dtype alignment descending, "+
				"then name)", Quote(b.Name), Quote(a.Name))})
			break
		}
	}
	return nil
}

// writerLess is the reference writer's order: dtype descending in enum
// order, then name ascending.
func writerLess(a, b *TensorInfo) bool {
	if a.DType.Order() != b.DType.Order() {
		return a.DType.Order() > b.DType.Order()
	}
	return a.Name < b.Name
}

// sortWriterOrder sorts tensors in the order the reference safetensors
// writer lays them out.
func sortWriterOrder(ts []TensorInfo) {
	sort.SliceStable(ts, func(i, j int) bool { return writerLess(&ts[i], &ts[j]) })
}

package ckpt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"sort"

	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// WriteSpec describes one tensor to write.
type WriteSpec struct {
	Name  string
	DType numfmt.DType
	Shape []int64
}

// streamWriter streams a safetensors file: the header is computed up
// front from the specs, then tensor data is written in Order(), in any
// number of Write calls. It never holds tensor data.
type streamWriter struct {
	w       io.Writer
	order   []TensorInfo
	written uint64
	total   uint64
}

// LayoutHeader computes the header bytes (padded with spaces to a multiple
// of 8) and the tensors in the reference writer's order with their offsets.
func LayoutHeader(specs []WriteSpec, metadata map[string]string) ([]byte, []TensorInfo, error) {
	ts := make([]TensorInfo, len(specs))
	seen := map[string]bool{}
	for i, s := range specs {
		if !s.DType.Known() {
			return nil, nil, fmt.Errorf("tensor %s: unknown dtype %s", Quote(s.Name), Quote(string(s.DType)))
		}
		if seen[s.Name] || s.Name == "__metadata__" {
			return nil, nil, fmt.Errorf("tensor %s: duplicate or reserved name", Quote(s.Name))
		}
		seen[s.Name] = true
		ts[i] = TensorInfo{Name: s.Name, DType: s.DType, Shape: append([]int64{}, s.Shape...)}
	}
	sortWriterOrder(ts)
	var off uint64
	for i := range ts {
		n := ts[i].Numel()
		hi, nb := bits.Mul64(n, uint64(ts[i].DType.Bits()))
		if hi != 0 || n == ^uint64(0) || nb%8 != 0 {
			return nil, nil, fmt.Errorf("tensor %s: shape %v of %s is not a whole number of bytes or overflows", Quote(ts[i].Name), ts[i].Shape, ts[i].DType)
		}
		ts[i].Begin, ts[i].End = off, off+nb/8
		off = ts[i].End
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	if metadata != nil {
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSONString(&buf, k)
			buf.WriteByte(':')
			writeJSONString(&buf, metadata[k])
		}
		buf.WriteByte('}')
		first = false
	}
	for _, t := range ts {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		writeJSONString(&buf, t.Name)
		fmt.Fprintf(&buf, `:{"dtype":%q,"shape":[`, string(t.DType))
		for i, d := range t.Shape {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, "%d", d)
		}
		fmt.Fprintf(&buf, `],"data_offsets":[%d,%d]}`, t.Begin, t.End)
	}
	buf.WriteByte('}')
	for buf.Len()%8 != 0 {
		buf.WriteByte(' ')
	}
	return buf.Bytes(), ts, nil
}

func writeJSONString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}

// newStreamWriter writes the 8-byte length and the header to w.
func newStreamWriter(w io.Writer, specs []WriteSpec, metadata map[string]string) (*streamWriter, error) {
	hdr, order, err := LayoutHeader(specs, metadata)
	if err != nil {
		return nil, err
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return nil, err
	}
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	wr := &streamWriter{w: w, order: order}
	if len(order) > 0 {
		wr.total = order[len(order)-1].End
	}
	return wr, nil
}

// Order is the order in which tensor data must be written, with offsets.
func (w *streamWriter) Order() []TensorInfo { return w.order }

// Write writes tensor data; it refuses more bytes than the header declares.
func (w *streamWriter) Write(p []byte) (int, error) {
	if w.written+uint64(len(p)) > w.total {
		return 0, fmt.Errorf("writing safetensors data: %d bytes more than the header declares", w.written+uint64(len(p))-w.total)
	}
	n, err := w.w.Write(p)
	w.written += uint64(n)
	return n, err
}

// Finish checks that exactly the declared bytes were written.
func (w *streamWriter) Finish() error {
	if w.written != w.total {
		return fmt.Errorf("writing safetensors data: wrote %d of %d bytes", w.written, w.total)
	}
	return nil
}

// MemTensor is a tensor held in memory, for small files and fixtures.
type MemTensor struct {
	WriteSpec
	Data []byte
}

// WriteFile writes tensors held in memory as a safetensors file, atomically.
func WriteFile(path string, tensors []MemTensor, metadata map[string]string) error {
	specs := make([]WriteSpec, len(tensors))
	byName := make(map[string][]byte, len(tensors))
	for i, t := range tensors {
		specs[i] = t.WriteSpec
		byName[t.Name] = t.Data
	}
	af, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer af.Abort()
	bw := newBufWriter(af.File)
	w, err := newStreamWriter(bw, specs, metadata)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	for _, t := range w.Order() {
		d := byName[t.Name]
		if uint64(len(d)) != t.NBytes() {
			return fmt.Errorf("writing %s: tensor %s has %d bytes of data, shape %v of %s needs %d", path, Quote(t.Name), len(d), t.Shape, t.DType, t.NBytes())
		}
		if _, err := w.Write(d); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := w.Finish(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return af.Commit()
}

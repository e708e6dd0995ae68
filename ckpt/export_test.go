package ckpt

import (
	"io"

	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
)

// The tests' names for what only they use.

// MaxHeaderSize is maxHeaderSize.
const MaxHeaderSize = maxHeaderSize

// Writer is streamWriter.
type Writer = streamWriter

// NewWriter is newStreamWriter.
func NewWriter(w io.Writer, specs []WriteSpec, metadata map[string]string) (*Writer, error) {
	return newStreamWriter(w, specs, metadata)
}

// ParseHeader is parseHeader.
func ParseHeader(buf []byte, name string) (*Header, error) { return parseHeader(buf, name) }

// NewValues is newValues.
func NewValues(t *Tensor, scale *Tensor, bm, bn int64) (*Values, error) {
	return newValues(t, scale, bm, bn)
}

// CheckSelection returns *EmptySelectionError when the globs (non-empty)
// select none of the names of the given lists (together, e.g. both sides
// of a diff), or when any one --match or --exclude glob matches none of
// those names at all (whatever the other globs select); nil when every
// glob matches some name, when there are no globs or no names. Invalid
// globs return NewMatcher's error.
func CheckSelection(match, exclude []string, source string, names ...[]string) error {
	if len(match) == 0 && len(exclude) == 0 {
		return nil
	}
	m, err := NewMatcher(match, exclude)
	if err != nil {
		return err
	}
	return m.CheckSelection(source, names...)
}

// TextInt returns an integer setting of the text model.
func (c *Config) TextInt(key string) (int64, bool) {
	return jsonval.Int(c.Text()[key])
}

// Section returns a reader over the tensor's raw bytes.
func (t *Tensor) Section() *io.SectionReader {
	return io.NewSectionReader(t.File.blob, t.Offset(), int64(t.NBytes()))
}

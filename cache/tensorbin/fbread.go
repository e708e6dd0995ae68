package tensorbin

import (
	"encoding/binary"
	"fmt"
)

// Limits that keep the reader's work and memory bounded on hostile input.
const (
	maxVectorLen = 1 << 16 // elements of any vector (shards, coords, ...)
	maxRank      = 16      // length of shape-like uint32 vectors
)

// fbuf is a FlatBuffer with bounds-checked accessors. base is the file offset
// of buf[0], used in error messages.
type fbuf struct {
	buf  []byte
	base int64
}

func (f *fbuf) errorf(pos int, format string, args ...any) error {
	return fmt.Errorf("byte %d: %s", f.base+int64(pos), fmt.Sprintf(format, args...))
}

func (f *fbuf) check(pos, n int, what string) error {
	if pos < 0 || n < 0 || pos > len(f.buf) || n > len(f.buf)-pos {
		return f.errorf(pos, "%s (%d bytes) out of bounds of the %d-byte header", what, n, len(f.buf))
	}
	return nil
}

func (f *fbuf) u32(pos int, what string) (uint32, error) {
	if err := f.check(pos, 4, what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(f.buf[pos:]), nil
}

// deref follows the uoffset stored at pos.
func (f *fbuf) deref(pos int, what string) (int, error) {
	v, err := f.u32(pos, what)
	if err != nil {
		return 0, err
	}
	t := int64(pos) + int64(v)
	if t >= int64(len(f.buf)) {
		return 0, f.errorf(pos, "%s offset %d points past the header", what, v)
	}
	return int(t), nil
}

// table is a parsed table: its position, the vtable entries and the size of
// the inline object.
type table struct {
	f     *fbuf
	pos   int
	name  string
	vt    int // vtable position
	nslot int // number of vtable entries
	osize int // inline object size
}

func (f *fbuf) table(pos int, name string) (table, error) {
	t := table{f: f, pos: pos, name: name}
	if err := f.check(pos, 4, name+" table"); err != nil {
		return t, err
	}
	so := int64(int32(binary.LittleEndian.Uint32(f.buf[pos:])))
	vt := int64(pos) - so
	if vt < 0 || vt+4 > int64(len(f.buf)) {
		return t, f.errorf(pos, "%s vtable at %d out of bounds", name, vt)
	}
	vsize := int(binary.LittleEndian.Uint16(f.buf[vt:]))
	osize := int(binary.LittleEndian.Uint16(f.buf[vt+2:]))
	if vsize < 4 || vsize%2 != 0 {
		return t, f.errorf(int(vt), "%s vtable size %d invalid", name, vsize)
	}
	if err := f.check(int(vt), vsize, name+" vtable"); err != nil {
		return t, err
	}
	if osize < 4 {
		return t, f.errorf(int(vt), "%s object size %d invalid", name, osize)
	}
	if err := f.check(pos, osize, name+" object"); err != nil {
		return t, err
	}
	t.vt, t.nslot, t.osize = int(vt), (vsize-4)/2, osize
	return t, nil
}

// at returns the position of field slot and whether it is present; size is
// the field's byte size, checked against the object.
func (t table) at(slot, size int) (int, bool, error) {
	if slot >= t.nslot {
		return 0, false, nil
	}
	fo := int(binary.LittleEndian.Uint16(t.f.buf[t.vt+4+2*slot:]))
	if fo == 0 {
		return 0, false, nil
	}
	if fo < 4 || fo+size > t.osize {
		return 0, false, t.f.errorf(t.vt+4+2*slot, "%s field %d at %d outside its %d-byte object", t.name, slot, fo, t.osize)
	}
	p := t.pos + fo
	if err := t.f.check(p, size, fmt.Sprintf("%s field %d", t.name, slot)); err != nil {
		return 0, false, err
	}
	return p, true, nil
}

func (t table) u8(slot int) (uint8, error) {
	p, ok, err := t.at(slot, 1)
	if !ok || err != nil {
		return 0, err
	}
	return t.f.buf[p], nil
}

func (t table) u16(slot int) (uint16, error) {
	p, ok, err := t.at(slot, 2)
	if !ok || err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint16(t.f.buf[p:]), nil
}

func (t table) u32(slot int) (uint32, error) {
	p, ok, err := t.at(slot, 4)
	if !ok || err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(t.f.buf[p:]), nil
}

// ref returns the position an offset field points at, if present.
func (t table) ref(slot int) (int, bool, error) {
	p, ok, err := t.at(slot, 4)
	if !ok || err != nil {
		return 0, false, err
	}
	q, err := t.f.deref(p, fmt.Sprintf("%s field %d", t.name, slot))
	return q, err == nil, err
}

// sub returns the table an offset field points at; required fields that are
// absent are an error.
func (t table) sub(slot int, name string, required bool) (table, bool, error) {
	p, ok, err := t.ref(slot)
	if err != nil {
		return table{}, false, err
	}
	if !ok {
		if required {
			return table{}, false, t.f.errorf(t.pos, "%s has no %s", t.name, name)
		}
		return table{}, false, nil
	}
	s, err := t.f.table(p, name)
	return s, err == nil, err
}

// vector returns the element count and first element position of the vector
// an offset field points at; absent vectors have length 0.
func (t table) vector(slot int, name string, elem, maxLen int) (int, int, error) {
	p, ok, err := t.ref(slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	n, err := t.f.u32(p, name+" length")
	if err != nil {
		return 0, 0, err
	}
	if int64(n) > int64(maxLen) {
		return 0, 0, t.f.errorf(p, "%s has %d elements, limit %d", name, n, maxLen)
	}
	if err := t.f.check(p+4, int(n)*elem, name); err != nil {
		return 0, 0, err
	}
	return int(n), p + 4, nil
}

func (t table) uint32s(slot int, name string, maxLen int) ([]uint32, error) {
	n, p, err := t.vector(slot, name, 4, maxLen)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(t.f.buf[p+4*i:])
	}
	return out, nil
}

// tables returns the tables of a vector of tables.
func (t table) tables(slot int, name string) ([]table, error) {
	n, p, err := t.vector(slot, name, 4, maxVectorLen)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]table, n)
	for i := range out {
		q, err := t.f.deref(p+4*i, fmt.Sprintf("%s[%d]", name, i))
		if err != nil {
			return nil, err
		}
		if out[i], err = t.f.table(q, fmt.Sprintf("%s[%d]", name, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

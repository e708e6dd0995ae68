package tensorbin

import (
	"bytes"
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"
)

// tables writes FlatBuffer tables into a flatbuffers.Builder with the table
// semantics of the C++ FlatBufferBuilder (StartTable/AddElement/EndTable).
// The Go runtime's own StartObject/EndObject differ in one way that changes
// bytes: its vtable de-duplication compares only the field offsets, while
// C++ compares whole vtables including the object size, so Go shares a
// vtable between tables whose inline sizes differ only by alignment padding
// (in the reconstructed samples, TensorSpec would reuse Tile's vtable).
// Buffer management, alignment, vectors and Finish stay the Go runtime's.
type tables struct {
	b       *flatbuffers.Builder
	start   flatbuffers.UOffsetT
	fields  []tableField
	vtables []flatbuffers.UOffsetT // offsets (from the end) of written vtables
}

type tableField struct {
	slot int
	off  flatbuffers.UOffsetT
}

func (t *tables) startTable() {
	t.start = t.b.Offset()
	t.fields = t.fields[:0]
}

func (t *tables) track(slot int) {
	t.fields = append(t.fields, tableField{slot, t.b.Offset()})
}

// The add methods skip default values, like C++ with force_defaults off.

func (t *tables) addU8(slot int, v, def uint8) {
	if v != def {
		t.b.PrependByte(v)
		t.track(slot)
	}
}

func (t *tables) addBool(slot int, v bool) {
	if v {
		t.b.PrependBool(v)
		t.track(slot)
	}
}

func (t *tables) addU16(slot int, v, def uint16) {
	if v != def {
		t.b.PrependUint16(v)
		t.track(slot)
	}
}

func (t *tables) addU32(slot int, v, def uint32) {
	if v != def {
		t.b.PrependUint32(v)
		t.track(slot)
	}
}

func (t *tables) addI32(slot int, v, def int32) {
	if v != def {
		t.b.PrependInt32(v)
		t.track(slot)
	}
}

// addOffset stores a reference; a zero offset means null and is skipped.
func (t *tables) addOffset(slot int, off flatbuffers.UOffsetT) {
	if off != 0 {
		t.b.PrependUOffsetT(off)
		t.track(slot)
	}
}

// endTable writes the soffset to the vtable and the vtable itself unless an
// identical one (same size, object size and field offsets) exists.
func (t *tables) endTable() flatbuffers.UOffsetT {
	t.b.PrependSOffsetT(0)
	obj := t.b.Offset()
	nslots := 0
	for _, f := range t.fields {
		nslots = max(nslots, f.slot+1)
	}
	vt := make([]byte, 4+2*nslots)
	binary.LittleEndian.PutUint16(vt, uint16(len(vt)))
	binary.LittleEndian.PutUint16(vt[2:], uint16(obj-t.start))
	for _, f := range t.fields {
		binary.LittleEndian.PutUint16(vt[4+2*f.slot:], uint16(obj-f.off))
	}
	buf := t.b.Bytes
	var use flatbuffers.UOffsetT
	for _, v := range t.vtables {
		at := len(buf) - int(v)
		if at+len(vt) <= len(buf) && bytes.Equal(buf[at:at+len(vt)], vt) {
			use = v
			break
		}
	}
	if use == 0 {
		for i := len(vt) - 2; i >= 0; i -= 2 {
			t.b.PrependVOffsetT(flatbuffers.VOffsetT(binary.LittleEndian.Uint16(vt[i:])))
		}
		use = t.b.Offset()
		t.vtables = append(t.vtables, use)
	}
	buf = t.b.Bytes // the prepends may have grown the buffer
	binary.LittleEndian.PutUint32(buf[len(buf)-int(obj):], uint32(int32(use)-int32(obj)))
	return obj
}

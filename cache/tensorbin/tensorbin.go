package tensorbin

import (
	"encoding/binary"
	"fmt"
)

// EncodeHeader returns the bytes that precede the data region of a
// .tensorbin file for h: the u64 little-endian header size, the FlatBuffer
// Tensor header and zero padding up to a multiple of DataAlignment. It also
// sets h.HeaderSize and h.DataOffset. Shard offsets must be 64-aligned and
// distinct shard buffers must not overlap.
func EncodeHeader(h *Header) ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("encoding tensorbin header: %w", err)
	}
	fb := encodeFlatbuffer(h)
	dataOff := alignUp(8 + uint64(len(fb)))
	out := make([]byte, dataOff)
	binary.LittleEndian.PutUint64(out, dataOff-8)
	copy(out[8:], fb)
	h.HeaderSize = dataOff - 8
	h.DataOffset = dataOff
	return out, nil
}

package tensorbin

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// FuzzReadTensorbin feeds arbitrary bytes to the header reader: it must
// never panic, and any header it accepts that is writable must survive a
// write/read round trip unchanged.
func FuzzReadTensorbin(f *testing.F) {
	dir := "testdata"
	for _, c := range sampleCases {
		data, err := os.ReadFile(filepath.Join(dir, "reconstructed", c.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	var buf bytes.Buffer
	h := NewMeshShardedHeader(NewTensorSpec([]int{64, 96}, tile.BFLOAT8_B, tile.TILE, WidthShardedConfig(64, 96)), -1, []uint64{64, 64})
	if err := WriteTensorbin(&buf, &h, [][]byte{make([]byte, 64), make([]byte, 64)}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())

	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadTensorbinHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		prefix, err := EncodeHeader(h)
		if err != nil {
			return // e.g. unaligned or overlapping shards from an older writer
		}
		file := append(prefix, make([]byte, h.DataSize())...)
		back, err := ReadTensorbinHeader(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatalf("re-reading our own encoding: %v", err)
		}
		back.HeaderSize, back.DataOffset = h.HeaderSize, h.DataOffset
		if !headersEqual(h, back) {
			t.Fatalf("round trip changed the header:\n%+v\n%+v", h, back)
		}
	})
}

// headersEqual compares two headers through their canonical encoding, which
// covers every field.
func headersEqual(a, b *Header) bool {
	pa, err1 := EncodeHeader(a)
	pb, err2 := EncodeHeader(b)
	return err1 == nil && err2 == nil && bytes.Equal(pa, pb)
}

package ckpt

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriterRoundTripAllDTypes streams every standard dtype (sub-byte F4/F6,
// rank 0, zero size) through newStreamWriter in small pieces and reads the
// file back with our reader: identical names, dtypes, shapes and bytes, in
// the reference writer's order with no lints.
func TestWriterRoundTripAllDTypes(t *testing.T) {
	t.Parallel()
	ts := writerTestTensors()
	specs := make([]WriteSpec, len(ts))
	byName := map[string][]byte{}
	for i, x := range ts {
		specs[i] = x.WriteSpec
		byName[x.Name] = x.Data
	}
	var buf bytes.Buffer
	w, err := newStreamWriter(&buf, specs, map[string]string{"format": "pt", "k": "v\"q"})
	require.NoError(t, err)
	for _, ti := range w.Order() {
		d := byName[ti.Name]
		for len(d) > 0 { // three bytes at a time
			n := min(3, len(d))
			_, err := w.Write(d[:n])
			require.NoError(t, err)
			d = d[n:]
		}
	}
	require.NoError(t, w.Finish())

	h, err := parseHeader(buf.Bytes()[8:8+binary.LittleEndian.Uint64(buf.Bytes())], "mem")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "pt", "k": "v\"q"}, h.Metadata)

	p := filepath.Join(t.TempDir(), "all.safetensors")
	require.NoError(t, WriteFile(p, ts, map[string]string{"format": "pt"}))
	for _, data := range [][]byte{buf.Bytes(), mustReadFile(t, p)} {
		hdr, err := ReadHeader(bytes.NewReader(data), int64(len(data)), "mem")
		require.NoError(t, err)
		require.Empty(t, hdr.Lints)
		require.Len(t, hdr.Tensors, len(ts))
		for _, x := range ts {
			ti, ok := hdr.Lookup(x.Name)
			require.True(t, ok, x.Name)
			assert.Equal(t, x.DType, ti.DType, x.Name)
			assert.Equal(t, len(x.Shape), len(ti.Shape), x.Name)
			if len(x.Shape) > 0 {
				assert.Equal(t, x.Shape, ti.Shape, x.Name)
			}
			got := data[hdr.DataStart()+int64(ti.Begin) : hdr.DataStart()+int64(ti.End)]
			assert.Equal(t, x.Data, got, x.Name)
		}
	}
}

// writerTestTensors is one tensor of every standard dtype, plus a rank-0
// tensor and a zero-size tensor of each (rank 0 only where one element is
// a whole number of bytes), with random contents.
func writerTestTensors() []MemTensor {
	var ts []MemTensor
	for _, dt := range numfmt.AllDTypes() {
		add := func(name string, shape []int64) {
			n := int64(1)
			for _, d := range shape {
				n *= d
			}
			r := rand.New(rand.NewPCG(uint64(len(ts)+1), 7))
			data := make([]byte, n*int64(dt.Bits())/8)
			for i := range data {
				data[i] = byte(r.Uint32())
			}
			ts = append(ts, MemTensor{WriteSpec: WriteSpec{Name: name, DType: dt, Shape: shape}, Data: data})
		}
		add("t."+string(dt), []int64{3, 8}) // 24 elements: whole bytes for 4- and 6-bit dtypes
		add("zero."+string(dt), []int64{2, 0})
		if dt.Bits()%8 == 0 {
			add("scalar."+string(dt), []int64{})
		}
	}
	return ts
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

package extract

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// randBytes returns n deterministic pseudo-random bytes.
func randBytes(seed uint64, n int64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// specBytes is the byte size of a spec.
func specBytes(s ckpt.WriteSpec) int64 {
	n := int64(1)
	for _, d := range s.Shape {
		n *= d
	}
	return n * int64(s.DType.Bits()) / 8
}

// allDTypeTensors is one tensor of every standard dtype, plus a rank-0
// tensor and a zero-size tensor of each (rank 0 only where one element is
// a whole number of bytes), with random contents.
func allDTypeTensors() []ckpt.MemTensor {
	var ts []ckpt.MemTensor
	for _, dt := range numfmt.AllDTypes() {
		shape := []int64{3, 8} // 24 elements: whole bytes for 4- and 6-bit dtypes
		add := func(name string, shape []int64) {
			s := ckpt.WriteSpec{Name: name, DType: dt, Shape: shape}
			ts = append(ts, ckpt.MemTensor{WriteSpec: s, Data: randBytes(uint64(len(ts)+1), specBytes(s))})
		}
		add("t."+string(dt), shape)
		add("zero."+string(dt), []int64{2, 0})
		if dt.Bits()%8 == 0 {
			add("scalar."+string(dt), []int64{})
		}
	}
	return ts
}

// openFile opens a checkpoint, closing it at the end of the test.
func openCkpt(t *testing.T, src string) *ckpt.Checkpoint {
	t.Helper()
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// readTensor reads a whole (small) tensor.
func readTensor(t *testing.T, x *ckpt.Tensor) []byte {
	t.Helper()
	b := make([]byte, x.NBytes())
	_, err := x.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}

// requireClean checks what the structural verification checks of an
// output: every file opens, no header lints, a sharded index whose
// total_size is the payload and whose weight_map lists exactly the stored
// tensors, and every FP8 weight's scale in the weight's shard.
func requireClean(t *testing.T, c *ckpt.Checkpoint) {
	t.Helper()
	require.Empty(t, c.Issues)
	var payload int64
	for _, f := range c.Files {
		require.Empty(t, f.Header.Lints, "lints of %s", f.Name)
		require.Zero(t, f.Header.Size%8, "header of %s padded to 8", f.Name)
		for _, ti := range f.Header.Tensors {
			payload += int64(ti.NBytes())
		}
	}
	if c.Sharded {
		require.Equal(t, payload, c.Index.TotalSize, "index total_size")
		require.Len(t, c.Index.WeightMap, len(c.Tensors))
	}
	for _, x := range c.Tensors {
		if s, ok := c.Lookup(ckpt.ScaleName(x.Name)); ok {
			require.Equal(t, x.File.Name, s.File.Name, "scale of %s in the same shard", x.Name)
		}
	}
}

// listDir lists the names in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// writeSource writes tensors as dir/src.safetensors and returns its path.
func writeSource(t *testing.T, dir string, ts []ckpt.MemTensor, md map[string]string) string {
	t.Helper()
	p := filepath.Join(dir, "src.safetensors")
	require.NoError(t, ckpt.WriteFile(p, ts, md))
	return p
}

func readAll(p string) ([]byte, error) { return os.ReadFile(p) }

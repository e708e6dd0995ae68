package extract

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	buf bytes.Buffer
	n   int
	err error
}

func (f *failAfter) Write(b []byte) (int, error) {
	if f.buf.Len()+len(b) > f.n {
		return 0, f.err
	}
	return f.buf.Write(b)
}

// TestPipeWriter: writes of any size arrive in order and whole; the
// underlying writer's first error comes back unchanged from a later Write
// or from Close.
func TestPipeWriter(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	data := randBytes(9, 1<<20+77)
	for _, size := range []int{1, 7, 4096, 100000} {
		var out bytes.Buffer
		p := newPipeWriter(&out, size, 3)
		for off := 0; off < len(data); {
			k := min(len(data)-off, rng.IntN(3*size+2))
			n, err := p.Write(data[off : off+k])
			require.NoError(t, err)
			require.Equal(t, k, n)
			off += k
		}
		require.NoError(t, p.Close())
		require.NoError(t, p.Close())
		require.Equal(t, data, out.Bytes(), "buffers of %d", size)
	}
	boom := errors.New("boom")
	f := &failAfter{n: 10000, err: boom}
	p := newPipeWriter(f, 4096, 2)
	var werr error
	for off := 0; off < len(data) && werr == nil; off += 3000 {
		_, werr = p.Write(data[off : off+3000])
	}
	cerr := p.Close()
	require.ErrorIs(t, cerr, boom)
	if werr != nil {
		require.ErrorIs(t, werr, boom)
	}
	require.Equal(t, data[:f.buf.Len()], f.buf.Bytes())
}

package ckpttest

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// SetNaN overwrites n elements of tensor name in the checkpoint at src
// (a file or directory), spread evenly over the tensor, with a NaN
// encoding of its dtype: the code 0x7f for F8_E4M3, a quiet NaN for BF16,
// F16 and F32.
func SetNaN(src, name string, n int) error {
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	if err != nil {
		return err
	}
	t, ok := c.Lookup(name)
	if !ok {
		c.Close()
		return fmt.Errorf("no tensor %s in %s", name, src)
	}
	path, off, numel := t.File.Location, t.Offset(), int64(t.Numel())
	var code []byte
	switch t.DType {
	case numfmt.F8E4M3:
		code = []byte{0x7f}
	case numfmt.BF16:
		code = []byte{0xc0, 0x7f}
	case numfmt.F16:
		code = []byte{0x00, 0x7e}
	case numfmt.F32:
		code = []byte{0x00, 0x00, 0xc0, 0x7f}
	default:
		c.Close()
		return fmt.Errorf("SetNaN: dtype %s not supported", t.DType)
	}
	c.Close()
	if int64(n) > numel {
		return fmt.Errorf("SetNaN: %d elements asked, %s has %d", n, name, numel)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	step := numel / int64(max(n, 1))
	for i := range int64(n) {
		if _, err := f.WriteAt(code, off+i*step*int64(len(code))); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

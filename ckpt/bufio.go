package ckpt

import "bufio"

func newBufWriter(w interface{ Write([]byte) (int, error) }) *bufio.Writer {
	return bufio.NewWriterSize(w, 1<<20)
}

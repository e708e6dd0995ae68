package ckpt_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// header1606 is a header shaped like one of the 27B checkpoint's: 1606
// entries with long dotted names, 2-D shapes and a __metadata__ block.
func header1606() []byte {
	var b strings.Builder
	b.WriteString(`{"__metadata__":{"format":"pt"}`)
	off := 0
	for i := range 1606 {
		n := 5120 * 2
		fmt.Fprintf(&b, `,"model.language_model.layers.%d.self_attn.q_proj.weight_%d":{"dtype":"BF16","shape":[5120,1],"data_offsets":[%d,%d]}`, i/25, i, off, off+n)
		off += n
	}
	b.WriteString("}")
	return []byte(b.String())
}

func BenchmarkParseHeader1606(b *testing.B) {
	hdr := header1606()
	b.SetBytes(int64(len(hdr)))
	for b.Loop() {
		if _, err := ckpt.ParseHeader(hdr, "bench.safetensors"); err != nil {
			b.Fatal(err)
		}
	}
}

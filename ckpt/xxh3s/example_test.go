package xxh3s_test

import (
	"fmt"

	"github.com/zeebo/xxh3"

	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
)

// A stream hashed in pieces of any size gives the library's one-shot hash
// of the same bytes.
func Example() {
	data := make([]byte, 5000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	h := xxh3s.New()
	h.Write(data[:3])
	h.Write(data[3:1500])
	h.Write(data[1500:])
	fmt.Println(h.Sum64() == xxh3.Hash(data))
	// Output: true
}

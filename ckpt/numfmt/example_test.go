package numfmt_test

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Rounding a weight to the formats of a block-FP8 checkpoint: the E4M3
// code and the value it stands for, the bfloat16 bits, and the dtype's
// width and largest finite value.
func Example() {
	w := float32(0.3)
	c := numfmt.EncodeE4M3(w)
	fmt.Printf("E4M3 code %#02x = %g\n", c, numfmt.DecodeE4M3(c))
	b := numfmt.F32ToBF16(w)
	fmt.Printf("BF16 bits %#04x = %g\n", b, numfmt.BF16ToF32(b))
	fmt.Println(numfmt.F8E4M3.Bits(), "bits, max", numfmt.MaxFinite(numfmt.F8E4M3))
	fmt.Println("saturates:", numfmt.DecodeE4M3(numfmt.EncodeE4M3(1000)))
	// Output:
	// E4M3 code 0x2a = 0.3125
	// BF16 bits 0x3e9a = 0.30078125
	// 8 bits, max 448
	// saturates: 448
}

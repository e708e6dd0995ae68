package ckpt_test

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// A library hint names an option by its Go spelling unless the caller gives
// its own word for it, as the CLI gives its flags.
func ExampleWords_Of() {
	const readData ckpt.Option = "verify.Options.ReadData"
	hint := func(w ckpt.Words) string { return "not checked: tensor data is read only with " + w.Of(readData) }
	fmt.Println(hint(nil))
	fmt.Println(hint(ckpt.Words{readData: "--read-data"}))
	// Output:
	// not checked: tensor data is read only with verify.Options.ReadData
	// not checked: tensor data is read only with --read-data
}

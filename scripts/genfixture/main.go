// Command genfixture writes a generated checkpoint for benchmark scripts:
// genfixture DIR [small|large].
package main

import (
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: genfixture DIR [small|large]")
		os.Exit(2)
	}
	o := ckpttest.Large()
	if len(os.Args) > 2 && os.Args[2] == "small" {
		o = ckpttest.Small()
	}
	if err := ckpttest.Write(os.Args[1], o); err != nil {
		fmt.Fprintln(os.Stderr, "genfixture:", err)
		os.Exit(1)
	}
}

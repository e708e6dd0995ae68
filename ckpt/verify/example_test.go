package verify_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
)

// Verify a checkpoint and list the checks that did not pass.
func ExampleRun() {
	dir, _ := os.MkdirTemp("", "verify-example-")
	defer os.RemoveAll(dir)
	o := synth.Small()
	o.Vision = false
	if err := synth.Write(dir, o); err != nil {
		fmt.Println(err)
		return
	}
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{Lenient: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	rep, err := verify.Check(context.Background(), c, verify.CheckOptions{ReadData: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ok:", rep.OK)
	for _, ch := range rep.Checks {
		if ch.Status == ckpt.Fail || ch.Status == ckpt.Warn {
			fmt.Println(ch.Status, ch.ID)
		}
	}
	// Output:
	// ok: true
}

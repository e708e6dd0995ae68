package atomicfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// Example places an output the way a command's -o is placed: Open
// applies the output policy, the bytes go to a temporary file beside the
// target, and Commit renames it into place. An output that is one of the
// command's inputs is refused before anything is written.
func Example() {
	dir, err := os.MkdirTemp("", "atomicfile-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("input\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	policy := atomicfile.Policy{Flag: "-o", Inputs: []string{in}}

	out := filepath.Join(dir, "out.txt")
	f, err := atomicfile.Open(out, policy)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Abort() // a no-op after Commit
	if _, err := f.Write([]byte("hello\n")); err != nil {
		fmt.Println(err)
		return
	}
	_, err = os.Stat(out)
	fmt.Println("before Commit, out.txt exists:", err == nil)
	if err := f.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(out)
	fmt.Printf("after Commit: %q\n", b)

	_, err = atomicfile.Open(in, policy)
	fmt.Println("output onto the input refused:", errors.Is(err, atomicfile.ErrRefused))
	// Output:
	// before Commit, out.txt exists: false
	// after Commit: "hello\n"
	// output onto the input refused: true
}

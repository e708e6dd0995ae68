package compare_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/compare"
)

// writeFolder writes the files of a hand-made cache folder under root.
func writeFolder(root string, entries []cachetest.ArchiveEntry) error {
	for _, e := range entries {
		p := filepath.Join(root, filepath.FromSlash(e.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, e.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Two copies of a cache folder, one with a file missing, compared file by
// file.
func ExampleRun() {
	entries, _, err := cachetest.TinyFolder(3)
	if err != nil {
		panic(err)
	}
	tmp, err := os.MkdirTemp("", "compare-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	if err := writeFolder(a, entries); err != nil {
		panic(err)
	}
	if err := writeFolder(b, entries[:len(entries)-1]); err != nil {
		panic(err)
	}
	res, err := compare.Run(context.Background(), compare.Options{A: a, B: b})
	if err != nil {
		panic(err)
	}
	fmt.Println("common files:", res.Common, "identical:", res.Identical)
	for _, d := range res.Diffs {
		fmt.Println(d.Kind, filepath.Base(d.File))
	}
	doc := res.Document()
	fmt.Println("same:", doc.Same, "unreadable:", doc.Unreadable)
	// Output:
	// common files: 2 identical: 2
	// missing f2.tensorbin
	// same: false unreadable: false
}

package sourcetest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
)

// A fake hub serving a folder, read through the HTTP store with Range
// requests; a fault makes its first response a 503, which the store
// retries.
func Example() {
	dir, err := os.MkdirTemp("", "sourcetest-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3_5"}`), 0o644); err != nil {
		panic(err)
	}
	hub := sourcetest.NewHub(dir, "org/model")
	defer hub.Close()
	var faulted atomic.Bool
	hub.Inject = func(r *http.Request, file string) sourcetest.Fault {
		if !faulted.Swap(true) {
			return sourcetest.Fault{Kind: sourcetest.Status503, RetryAfter: "0"}
		}
		return sourcetest.Fault{}
	}
	ctx := context.Background()
	s, err := source.NewHTTPStore(ctx, hub.URL+"/files", "", source.Options{})
	if err != nil {
		panic(err)
	}
	b, err := s.Open(ctx, "config.json")
	if err != nil {
		panic(err)
	}
	defer b.Close()
	data, err := io.ReadAll(io.NewSectionReader(b, 0, b.Size()))
	fmt.Println(string(data), err)
	fmt.Println("requests:", hub.Requests.Load())
	// Output:
	// {"model_type": "qwen3_5"} <nil>
	// requests: 2
}

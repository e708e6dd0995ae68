package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// Open a checkpoint on a (fake) hub with hf://, reading only headers.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	model := filepath.Join(dir, "model")
	if err := synth.Write(model, synth.Small()); err != nil {
		fmt.Println(err)
		return
	}
	hub := sourcetest.NewHub(model, "org/model")
	defer hub.Close()

	env := map[string]string{"HF_ENDPOINT": hub.URL}
	openers := source.Openers(source.Options{Getenv: func(k string) string { return env[k] }})
	c, err := ckpt.Open(context.Background(), "hf://org/model", ckpt.Options{}, openers...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println(c.Sharded, len(c.Files), "shards,", len(c.Tensors), "tensors")
	fmt.Println(hub.Requests.Load(), "requests")
	// Output:
	// true 4 shards, 124 tensors
	// 6 requests
}

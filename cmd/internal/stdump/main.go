// Command stdump reads checkpoints as ckpt does, for the interop suite's
// differential test (.ci/interop/test_differential.py) to compare with
// the reference readers, many inputs per process:
//
//	stdump read DIR
//	    opens every entry of DIR (a .safetensors file or a checkpoint
//	    directory) with ckpt.Open, as every command does, and prints one
//	    JSON line per entry, in name order: {"entry", "ok", "error",
//	    "tensors": [{"name", "dtype", "shape", "file", "xxh3"}],
//	    "metadata": {file: __metadata__}, "warnings": [...]}.
//	stdump corpus DIR
//	    writes the hostile and edge-case inputs of ckpt/ckpttest: the
//	    single files as DIR/headers/NAME.safetensors, the index of each
//	    directory variant as DIR/indexes/NAME.json.
//
// Exit status 2 on a bad command line or an I/O error on DIR itself.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/zeebo/xxh3"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stdump:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: stdump read DIR | stdump corpus DIR")
	}
	switch args[0] {
	case "read":
		return read(args[1])
	case "corpus":
		return corpus(args[1])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

type tensor struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	File  string  `json:"file"`
	XXH3  string  `json:"xxh3"`
}

type result struct {
	Entry    string                       `json:"entry"`
	OK       bool                         `json:"ok"`
	Error    string                       `json:"error,omitempty"`
	Tensors  []tensor                     `json:"tensors"`
	Metadata map[string]map[string]string `json:"metadata"`
	Warnings []string                     `json:"warnings"`
}

func read(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	enc := json.NewEncoder(os.Stdout)
	for _, n := range names {
		if err := enc.Encode(open(filepath.Join(dir, n), n)); err != nil {
			return err
		}
	}
	return nil
}

func open(path, entry string) result {
	r := result{Entry: entry, Tensors: []tensor{}, Metadata: map[string]map[string]string{}, Warnings: []string{}}
	c, err := ckpt.Open(context.Background(), path, ckpt.Options{})
	if err != nil {
		r.Error = err.Error()
		if c != nil {
			c.Close()
		}
		return r
	}
	defer c.Close()
	for _, f := range c.Files {
		r.Metadata[f.Name] = f.Header.Metadata
	}
	for _, is := range c.Issues {
		r.Warnings = append(r.Warnings, is.Message)
	}
	for _, t := range c.Tensors {
		data := make([]byte, t.NBytes())
		if _, err := t.ReadAt(data, 0); err != nil {
			r.Error = err.Error()
			return r
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		r.Tensors = append(r.Tensors, tensor{Name: t.Name, DType: string(t.DType), Shape: shape, File: t.File.Name,
			XXH3: fmt.Sprintf("%016x", xxh3.Hash(data))})
	}
	r.OK = true
	return r
}

func corpus(dir string) error {
	for _, sub := range []string{"headers", "indexes"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	write := func(p string, b []byte) error { return os.WriteFile(filepath.Join(dir, p), b, 0o644) }
	for _, c := range ckpttest.CorruptFiles() {
		if c.Data != nil {
			if err := write(filepath.Join("headers", "corrupt-"+c.Name+".safetensors"), c.Data); err != nil {
				return err
			}
		}
	}
	for _, v := range ckpttest.ValidFiles() {
		if err := write(filepath.Join("headers", "valid-"+v.Name+".safetensors"), v.Data); err != nil {
			return err
		}
	}
	for _, c := range ckpttest.CorruptDirs() {
		if b, ok := c.Files[ckpt.IndexFile]; ok {
			if err := write(filepath.Join("indexes", c.Name+".json"), b); err != nil {
				return err
			}
		}
	}
	return nil
}

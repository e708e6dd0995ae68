package build

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// CheckpointOutError says the output of a build is a directory holding a
// checkpoint (safetensors files or an index), not a cache root: the
// source and the output were most likely swapped. Nothing was written.
type CheckpointOutError struct {
	Out  string
	File string // the checkpoint file found there
}

// Error names the output and the checkpoint file found there, and asks
// whether the source and the output were swapped.
func (e *CheckpointOutError) Error() string {
	return fmt.Sprintf("refusing to build a cache into %s: it holds a checkpoint (%s), not a cache root; are the source and the output swapped?",
		e.Out, ckpt.EscapeName(e.File))
}

// checkOutRoot refuses a cache root that holds a checkpoint: an index, or
// a .safetensors file directly in it (cache.CheckpointFile). A root that
// does not exist yet is fine.
func checkOutRoot(out string) error {
	if f := cache.CheckpointFile(out); f != "" {
		return &CheckpointOutError{Out: out, File: f}
	}
	return nil
}

// checkFolderInputs refuses a cache folder that is the directory of one of
// the files the build reads (a shard, the index, config.json): the build
// renames its files into the folder and removes files the plan no longer
// names, so an input there could be replaced or removed. A folder that
// does not exist yet holds nothing. flag is the caller's word for the
// option that gave the cache root (the refusal's Flag).
func checkFolderInputs(dir string, c *ckpt.Checkpoint, flag string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	for _, in := range c.InputFiles() {
		dirs := []string{filepath.Dir(in)}
		if real, err := filepath.EvalSymlinks(in); err == nil {
			dirs = append(dirs, filepath.Dir(real)) // the file a link names
		}
		for _, d := range dirs {
			if ds, err := os.Stat(d); err != nil || !os.SameFile(st, ds) {
				continue
			}
			return &atomicfile.RefusedError{Flag: flag, Path: "the cache folder " + dir,
				Reason: fmt.Sprintf("holds %s, a file of the checkpoint being read: refusing to build into it", in)}
		}
	}
	return nil
}

package ckpt

import (
	"errors"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// RefusedOutputError is an output path that CheckOutput refused before
// anything was written: an *atomicfile.RefusedError (errors.As finds it,
// errors.Is matches atomicfile.ErrRefused) that is also a request the workflow
// refuses (errors.Is matches ErrUsage).
type RefusedOutputError struct{ *atomicfile.RefusedError }

// Unwrap returns the *atomicfile.RefusedError.
func (e *RefusedOutputError) Unwrap() error { return e.RefusedError }

// Is makes errors.Is(err, ErrUsage) true.
func (e *RefusedOutputError) Is(target error) bool { return target == ErrUsage }

// InputFiles lists the local files the checkpoint is read from: every
// shard, the index it was opened from (a variant's too), config.json and
// hf_quant_config.json, and the default index and config.json beside the
// shards (whether they exist or not). A remote checkpoint's are URLs, which
// name no local file.
func (c *Checkpoint) InputFiles() []string {
	seen := map[string]bool{}
	var files []string
	if c.Index != nil {
		files = append(files, c.Index.File)
	}
	for _, cfg := range []*Config{c.Config, c.HFQuantConfig} {
		if cfg != nil {
			files = append(files, cfg.File)
		}
	}
	for _, f := range c.Files {
		if f.Location == "" {
			continue
		}
		files = append(files, f.Location)
		dir := filepath.Dir(f.Location)
		if !seen[dir] {
			seen[dir] = true
			files = append(files, filepath.Join(dir, IndexFile), filepath.Join(dir, "config.json"))
		}
	}
	return files
}

// CheckOutput refuses (a *RefusedOutputError, also a usage error) an
// output path given by flag
// ("-o", "--out") that is one of the files the checkpoints cs are read from
// (InputFiles; the same device and inode, through any link): writing there
// would replace an input while it is being read. A path that does not
// exist, or is none of them, is fine.
func CheckOutput(flag, path string, cs ...*Checkpoint) error {
	if path == "" {
		return nil
	}
	var inputs []string
	for _, c := range cs {
		if c != nil {
			inputs = append(inputs, c.InputFiles()...)
		}
	}
	err := atomicfile.CheckInputs(path, atomicfile.Policy{Flag: flag, Inputs: inputs, InputsAre: "the checkpoint being read"})
	var r *atomicfile.RefusedError
	if errors.As(err, &r) {
		return &RefusedOutputError{r}
	}
	return err
}

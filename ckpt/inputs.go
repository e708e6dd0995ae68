package ckpt

import (
	"os"
	"path/filepath"
)

// InputAt reports whether path names a file the checkpoint was read from
// (a shard, its index or its config.json, through any link): writing an
// output there would replace an input while it is being read. It returns
// the input's location. Remote checkpoints have no such file.
func (c *Checkpoint) InputAt(path string) (string, bool) {
	out, err := os.Stat(path)
	if err != nil || !out.Mode().IsRegular() {
		return "", false
	}
	seen := map[string]bool{}
	var candidates []string
	for _, f := range c.Files {
		candidates = append(candidates, f.Location)
		dir := filepath.Dir(f.Location)
		if !seen[dir] {
			seen[dir] = true
			candidates = append(candidates, filepath.Join(dir, IndexFile), filepath.Join(dir, "config.json"))
		}
	}
	for _, in := range candidates {
		if st, err := os.Stat(in); err == nil && os.SameFile(out, st) {
			return in, true
		}
	}
	return "", false
}

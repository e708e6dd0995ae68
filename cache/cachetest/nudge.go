package cachetest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// NudgeF32 moves element elem (in stored order) of every shard of the
// FLOAT32 .tensorbin file at path by ulps units in the last place, on its
// bits (a negative value's magnitude grows with positive ulps), as a
// host whose float32 arithmetic rounds differently would write it. It
// returns the element's byte offset in a shard.
func NudgeF32(path string, elem int, ulps int32) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	h, err := tensorbin.ReadTensorbinHeader(f, st.Size())
	if err != nil {
		return 0, err
	}
	if h.Spec.DType != tile.FLOAT32 {
		return 0, fmt.Errorf("%s: dtype %s, not FLOAT32", path, h.Spec.DType)
	}
	off := int64(elem) * 4
	for _, s := range h.Shards {
		if off+4 > int64(s.Size) {
			return 0, fmt.Errorf("%s: element %d is beyond a shard of %d bytes", path, elem, s.Size)
		}
		at := int64(h.DataOffset+s.Offset) + off
		var b [4]byte
		if _, err := f.ReadAt(b[:], at); err != nil {
			return 0, err
		}
		binary.LittleEndian.PutUint32(b[:], uint32(int32(binary.LittleEndian.Uint32(b[:]))+ulps))
		if _, err := f.WriteAt(b[:], at); err != nil {
			return 0, err
		}
	}
	return off, f.Close()
}

// Rehash rewrites the manifest of the cache folder dir of root with each
// file's size and hashes recomputed from the file it now holds (as
// Forge does for an archive): a cache whose files changed after the
// build, whose manifest still ties them to its source tensors.
func Rehash(root, dir string) error {
	entries, err := Forge(root, root, dir)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, filepath.FromSlash(dir), cache.ManifestName), entries[0].Data, 0o644)
}

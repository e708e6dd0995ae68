// Package cachetest damages built tensor caches in known ways, for tests
// of cache comparison: a renamed file, a changed topology, a changed dtype,
// a changed memory config and one flipped byte in one tile of one shard.
package cachetest

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// Injected names the damaged files, relative to the cache directory.
type Injected struct {
	RenamedFrom, RenamedTo string
	Topology               string // 2-D topology replaced by the 1-D one
	DType                  string // BFLOAT8_B recorded as BFLOAT4_B
	Memory                 string // DRAM interleaved recorded as width-sharded
	Flipped                string // one byte flipped
	FlippedShard           int
	FlippedTile            int
	FlippedByte            int64 // offset of the flipped byte in the shard
}

// Targets of the small fixture (synth.Small) that Inject damages (Injected
// names them as paths).
const (
	renameTarget   = "layers.0/tp/qkvzab.il"
	topologyTarget = "layers.2.input_layernorm.weight_distributed"
	dtypeTarget    = "layers.1/tp/out"
	memoryTarget   = "layers.3/tp/wqkv_fused_qkvg.il"
	flipTarget     = "layers.1/mlp.down_proj.weight.tp"
)

// CopyTree copies the directory tree src to dst (regular files only).
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, r), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, r), b, 0o644)
	})
}

// RewriteHeader rewrites a .tensorbin file with an edited header and the
// same shard bytes.
func RewriteHeader(path string, edit func(h *tensorbin.Header)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	h, err := tensorbin.ReadTensorbinHeader(f, st.Size())
	if err != nil {
		f.Close()
		return err
	}
	var shards [][]byte
	for i := range h.Shards {
		b, err := io.ReadAll(tensorbin.ShardSection(f, h, i))
		if err != nil {
			f.Close()
			return err
		}
		shards = append(shards, b)
	}
	f.Close()
	edit(h)
	return writeTensorbin(path, h, shards)
}

// writeTensorbin writes a whole .tensorbin file at path: the header of h,
// then shards[i] at h.Shards[i].Offset of the data region (shards sharing a
// buffer write the same bytes twice), zero gaps between them.
func writeTensorbin(path string, h *tensorbin.Header, shards [][]byte) error {
	prefix, err := tensorbin.EncodeHeader(h)
	if err != nil {
		return err
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = out.Write(prefix)
	for i, s := range h.Shards {
		if err == nil {
			_, err = out.WriteAt(shards[i], int64(h.DataOffset+s.Offset))
		}
	}
	if err == nil {
		err = out.Truncate(h.FileSize())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Inject damages the cache directory cdir (the plan's tensor_cache_*
// directory, built from synth.Small at 1x2) in five ways, one file
// each, and says which.
func Inject(cdir string, plan *mapping.Plan) (Injected, error) {
	rel := func(target string) string {
		for _, e := range plan.Entries {
			if e.Target == target {
				return strings.TrimPrefix(e.File, plan.CacheDir+"/")
			}
		}
		return ""
	}
	inj := Injected{RenamedFrom: rel(renameTarget), Topology: rel(topologyTarget), DType: rel(dtypeTarget),
		Memory: rel(memoryTarget), Flipped: rel(flipTarget),
		// down_proj of Small: [160, 128] BFLOAT8_B per device, 5 x 4 tiles.
		FlippedShard: 1, FlippedTile: 6}
	for _, f := range []string{inj.RenamedFrom, inj.Topology, inj.DType, inj.Memory, inj.Flipped} {
		if f == "" {
			return inj, fmt.Errorf("the plan lacks a target Inject damages")
		}
	}
	inj.RenamedTo = strings.Replace(inj.RenamedFrom, "qkvzab.il", "qkvzab.dramshard", 1)
	p := func(r string) string { return filepath.Join(cdir, filepath.FromSlash(r)) }
	if err := os.Rename(p(inj.RenamedFrom), p(inj.RenamedTo)); err != nil {
		return inj, err
	}
	if err := RewriteHeader(p(inj.Topology), func(h *tensorbin.Header) {
		// The 1-D ShardTensorToMesh topology instead of ShardTensor2dMesh's.
		h.Topology.DistributionShape = []uint32{uint32(len(h.Shards))}
		h.Topology.Placements = []tensorbin.Placement{tensorbin.PlacementShard(2)}
	}); err != nil {
		return inj, err
	}
	if err := RewriteHeader(p(inj.DType), func(h *tensorbin.Header) { h.Spec.DType = tile.BFLOAT4_B }); err != nil {
		return inj, err
	}
	if err := RewriteHeader(p(inj.Memory), func(h *tensorbin.Header) {
		h.Spec.Memory = tensorbin.WidthShardedConfig(int(h.Spec.Shape[0]), int(h.Spec.Shape[1]))
	}); err != nil {
		return inj, err
	}
	h, err := tensorbin.ReadTensorbinFile(p(inj.Flipped))
	if err != nil {
		return inj, err
	}
	f, err := os.OpenFile(p(inj.Flipped), os.O_RDWR, 0)
	if err != nil {
		return inj, err
	}
	defer f.Close()
	inj.FlippedByte = int64(inj.FlippedTile)*tile.BFP8TileBytes + 64 + 300 // a code byte of the tile
	at := int64(h.DataOffset+h.Shards[inj.FlippedShard].Offset) + inj.FlippedByte
	var b [1]byte
	if _, err := f.ReadAt(b[:], at); err != nil {
		return inj, err
	}
	b[0] ^= 0x11
	if _, err := f.WriteAt(b[:], at); err != nil {
		return inj, err
	}
	return inj, f.Close()
}

// Want is what a comparison must report for the injected damage, per file
// as "kind:field": with data, the flipped byte too (cache compare); without,
// only names and headers (a plan held against the cache).
func (i Injected) Want(data bool) map[string][]string {
	w := map[string][]string{
		i.RenamedFrom: {"missing:"},
		i.RenamedTo:   {"extra:"},
		i.Topology:    {"header:topology.distribution_shape", "header:topology.placements"},
		i.DType:       {"header:dtype"},
		i.Memory:      {"header:memory_config"},
	}
	if data {
		w[i.Flipped] = []string{"data:"}
	}
	return w
}

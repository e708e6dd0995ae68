package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"golang.org/x/sync/errgroup"
)

// SparseFineTune describes a base / fine-tune pair in the real layout of
// the 27B FP8 checkpoint (names, dtypes, shapes and sharding of the
// inventory, see WriteInventory), restricted to some decoder layers so
// that tests stay fast, with data holes everywhere except where the pair
// needs values.
type SparseFineTune struct {
	// Layers are the decoder layers included, every tensor of each. MTP
	// includes the whole MTP head; Visual a few vision tensors (the patch
	// and position embeddings, the first block, the merger). The final norm
	// is always included; the 2.5 GB embedding and lm_head are not.
	Layers      []int
	MTP, Visual bool
	// Dense are the decoder layers the fine-tune changes everywhere: both
	// sides are written with values there (FP8 codes without NaN, bf16
	// weights, positive scales), and every element of every tensor of the
	// fine-tune differs from the base's (codes and bf16 values in their
	// lowest bit, scales by one ulp). Elsewhere both sides are holes.
	Dense []int
	// Filled are tensors written with values on both sides, identically
	// (with their scale tensors, if any), to be changed in single elements
	// with PokeTensor.
	Filled []string
	Seed   uint64
}

// WriteSparseFineTune writes the pair into dir/base and dir/ft and returns
// the two directories.
func WriteSparseFineTune(dir string, o SparseFineTune) (base, ft string, err error) {
	keep := func(name string) bool {
		g, _, layer := ckpt.GroupOf(name)
		switch {
		case g == ckpt.GroupMTP:
			return o.MTP
		case g == ckpt.GroupVisual:
			return o.Visual && (strings.Contains(name, ".patch_embed.") || strings.Contains(name, ".pos_embed.") ||
				strings.Contains(name, ".blocks.0.") || strings.Contains(name, ".merger."))
		case layer >= 0:
			return slices.Contains(o.Layers, layer)
		}
		return name == "model.language_model.norm.weight"
	}
	edit := func(ts []InventoryTensor, _ map[string]any) []InventoryTensor {
		var out []InventoryTensor
		for _, t := range ts {
			if keep(t.Name) {
				out = append(out, t)
			}
		}
		return out
	}
	base, ft = filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	for _, d := range []string{base, ft} {
		if _, err := WriteInventoryEdited(d, "fp8", edit); err != nil {
			return "", "", err
		}
	}
	ctx := context.Background()
	bc, err := ckpt.Open(ctx, base, ckpt.Options{})
	if err != nil {
		return "", "", err
	}
	defer bc.Close()
	fc, err := ckpt.Open(ctx, ft, ckpt.Options{})
	if err != nil {
		return "", "", err
	}
	defer fc.Close()
	filled := map[string]bool{}
	for _, n := range o.Filled {
		filled[n] = true
		filled[ckpt.ScaleName(n)] = true
	}
	var g errgroup.Group
	g.SetLimit(2)
	for _, bt := range bc.Tensors {
		_, _, layer := ckpt.GroupOf(bt.Name)
		dense := layer >= 0 && slices.Contains(o.Dense, layer) // GroupOf gives MTP and vision layers -1
		if !dense && !filled[bt.Name] {
			continue
		}
		ftT, ok := fc.Lookup(bt.Name)
		if !ok {
			return "", "", fmt.Errorf("tensor %s missing from %s", bt.Name, ft)
		}
		g.Go(func() error { return fillPair(bt, ftT, o.Seed, dense) })
	}
	if err := g.Wait(); err != nil {
		return "", "", err
	}
	return base, ft, nil
}

// fillPair writes values into a tensor of the base and its fine-tune
// counterpart: equal, or (changed) every element different.
func fillPair(bt, ftT *ckpt.Tensor, seed uint64, changed bool) error {
	var valMask, valSet, flip uint64
	switch {
	case bt.DType == numfmt.F8E4M3:
		// No NaN: exponent below 0b1111; flip the lowest mantissa bit.
		valMask, valSet, flip = 0xbfbfbfbfbfbfbfbf, 0, 0x0101010101010101
	case bt.DType == numfmt.BF16 && strings.HasSuffix(bt.Name, ckpt.ScaleSuffix):
		// Positive scales near 2^-10; one ulp apart.
		valMask, valSet, flip = 0x007f007f007f007f, 0x3a803a803a803a80, 0x0001000100010001
	case bt.DType == numfmt.BF16:
		// Values ±[2^-7, 2^-6); one ulp apart.
		valMask, valSet, flip = 0x807f807f807f807f, 0x3c003c003c003c00, 0x0001000100010001
	default:
		return fmt.Errorf("tensor %s: no fill for dtype %s", bt.Name, bt.DType)
	}
	if !changed {
		flip = 0
	}
	h := fnv.New64a()
	h.Write([]byte(bt.Name))
	s := h.Sum64() ^ seed*0x9e3779b97f4a7c15 | 1
	fb, err := os.OpenFile(bt.File.Location, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer fb.Close()
	ff, err := os.OpenFile(ftT.File.Location, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer ff.Close()
	const chunk = 1 << 20
	bb, fbuf := make([]byte, chunk), make([]byte, chunk)
	n := int64(bt.NBytes())
	for off := int64(0); off < n; off += chunk {
		k := min(chunk, n-off)
		for i := int64(0); i < k; i += 8 {
			s ^= s << 13
			s ^= s >> 7
			s ^= s << 17
			v := s&valMask | valSet
			binary.LittleEndian.PutUint64(bb[i:], v)
			binary.LittleEndian.PutUint64(fbuf[i:], v^flip)
		}
		if _, err := fb.WriteAt(bb[:k], bt.Offset()+off); err != nil {
			return err
		}
		if _, err := ff.WriteAt(fbuf[:k], ftT.Offset()+off); err != nil {
			return err
		}
	}
	return nil
}

// PokeTensor overwrites bytes of a tensor's data, at off from its start,
// in the checkpoint at dir (to change single elements of a fixture).
func PokeTensor(dir, name string, off int64, data []byte) error {
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	t, ok := c.Lookup(name)
	if !ok {
		return fmt.Errorf("no tensor %s in %s", name, dir)
	}
	if off < 0 || off+int64(len(data)) > int64(t.NBytes()) {
		return fmt.Errorf("tensor %s: bytes [%d, %d) outside its %d", name, off, off+int64(len(data)), t.NBytes())
	}
	f, err := os.OpenFile(t.File.Location, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, t.Offset()+off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

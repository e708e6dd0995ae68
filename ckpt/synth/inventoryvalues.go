package synth

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// ValuesOptions selects what WriteInventoryValues writes.
type ValuesOptions struct {
	// Layers keeps decoder layers [0, Layers) only (0: all 64), with the
	// config's layer count and layer_types cut to match: a reduced run of
	// the same tensors and shapes.
	Layers int
	Seed   uint64
	// FineTune writes the light fine-tune of the base with the same
	// options: about one tensor in 40 (BF16 ones, and FP8 weights with
	// their scales) has other values; shards with none are hard links to
	// Base's (so the pair costs little more disk than the base).
	FineTune bool
	Base     string // the base's directory (FineTune)
}

// poolBytes is the size of each pool of realistic data the big tensors
// are filled from.
const poolBytes = 8 << 20

// valuePools are realistic data to copy from: FP8 codes of a
// block-quantised normal weight, bf16 weights (spread 0.02) and bf16 norms
// (around 1). A big tensor is filled with 64 KiB pieces of its pool at
// offsets drawn from its own seed, at the speed of memory.
type valuePools struct {
	fp8, weight, norm []byte
}

func newValuePools(seed uint64) *valuePools {
	p := &valuePools{}
	const rows, cols = 2048, poolBytes / 2048
	w := make([]float32, rows*cols)
	r := newRNG(seed ^ 0x51ed)
	for i := range w {
		w[i] = 0.02 * (r.sym() + r.sym() + r.sym()) // roughly normal
	}
	p.fp8 = make([]byte, rows*cols)
	scales := make([]float32, (rows/128)*(cols/128))
	numfmt.QuantizeBlockFP8(w, rows, cols, 128, 128, numfmt.BF16, p.fp8, scales)
	p.weight = make([]byte, poolBytes)
	p.norm = make([]byte, poolBytes)
	for i := 0; i < poolBytes/2; i++ {
		binary.LittleEndian.PutUint16(p.weight[2*i:], numfmt.F32ToBF16(w[i]))
		binary.LittleEndian.PutUint16(p.norm[2*i:], numfmt.F32ToBF16(1+0.05*r.sym()))
	}
	return p
}

// fill writes n bytes of t's data to f: small tensors element by element
// (Master's values, realistic block scales), big ones from a pool.
func (p *valuePools) fill(f *os.File, t InventoryTensor, n int64, seed uint64, buf []byte) error {
	h := fnv.New64a()
	h.Write([]byte(t.Name))
	r := newRNG(h.Sum64() ^ seed*0x9e3779b97f4a7c15)
	if n <= 1<<20 || t.DType != numfmt.BF16 && t.DType != numfmt.F8E4M3 {
		data := make([]byte, n)
		switch {
		case t.Role == "fp8_block_scale":
			// amax/448 of blocks of a weight with spread 0.02: ~2^-12.
			for i := int64(0); i+1 < n; i += 2 {
				binary.LittleEndian.PutUint16(data[i:], numfmt.F32ToBF16(float32(math.Ldexp(1+0.5*float64(r.sym()), -12))))
			}
		case t.DType == numfmt.F8E4M3:
			for i := range data {
				data[i] = p.fp8[r.next()%uint64(len(p.fp8))]
			}
		case t.DType.IsFloat():
			v := Master(Options{Seed: seed}, arch.Tensor{Name: t.Name, Shape: t.Shape, DType: t.DType, Role: t.Role})
			if err := numfmt.EncodeFloat32(t.DType, v, data); err != nil {
				return err
			}
		}
		_, err := f.Write(data)
		return err
	}
	pool := p.weight
	switch {
	case t.DType == numfmt.F8E4M3:
		pool = p.fp8
	case t.Role == "gated_norm" || strings.Contains(t.Name, "norm"):
		pool = p.norm
	}
	const piece = 64 << 10
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		for b := int64(0); b < k; b += piece {
			at := int(r.next()%uint64(len(pool)-piece)) &^ 7
			copy(buf[b:min(b+piece, k)], pool[at:])
		}
		if _, err := f.Write(buf[:k]); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// WriteInventoryValues writes the real layout of the 27B checkpoint
// (variant "fp8" or "bf16", the shards of WriteInventory) into dir with
// realistic, seeded values (see valuePools), optionally cut to the first
// o.Layers decoder layers or made the light fine-tune of a base. The full
// fp8 layout is ~31 GB.
func WriteInventoryValues(dir, variant string, o ValuesOptions) error {
	inv, err := LoadInventory()
	if err != nil {
		return err
	}
	ck := inv.Checkpoints[variant]
	if ck == nil {
		return fmt.Errorf("inventory has no %q checkpoint", variant)
	}
	cfg, err := inv.InventoryConfig(variant)
	if err != nil {
		return err
	}
	var ts []InventoryTensor
	for _, t := range ck.Tensors {
		if g, _, layer := ckpt.GroupOf(t.Name); o.Layers > 0 && g == ckpt.GroupText && layer >= o.Layers {
			continue
		}
		ts = append(ts, t)
	}
	if o.Layers > 0 {
		text := cfg["text_config"].(map[string]any)
		text["num_hidden_layers"] = o.Layers
		switch lt := text["layer_types"].(type) {
		case []any:
			text["layer_types"] = lt[:min(len(lt), o.Layers)]
		case []string:
			text["layer_types"] = lt[:min(len(lt), o.Layers)]
		}
	}
	// The fine-tune changes ~1 tensor in 40, a weight together with its
	// scale.
	changed := func(name string) bool {
		h := fnv.New64a()
		h.Write([]byte(strings.TrimSuffix(name, "_scale_inv")))
		return h.Sum64()%40 == 7
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	byShard := map[string][]InventoryTensor{}
	weightMap := map[string]string{}
	for _, t := range ts {
		s := inventoryShard(t.Name)
		byShard[s] = append(byShard[s], t)
		weightMap[t.Name] = s
	}
	shards := make([]string, 0, len(byShard))
	for s := range byShard {
		shards = append(shards, s)
	}
	sort.Strings(shards)
	pools := newValuePools(o.Seed)
	buf := make([]byte, 4<<20)
	var total int64
	for _, shard := range shards {
		ss := byShard[shard]
		var meta map[string]string
		if shard != "outside.safetensors" { // as in the audited copy
			meta = map[string]string{"format": "pt"}
		}
		specs := make([]ckpt.WriteSpec, len(ss))
		byName := map[string]InventoryTensor{}
		edited := false
		for i, t := range ss {
			specs[i] = ckpt.WriteSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}
			byName[t.Name] = t
			edited = edited || changed(t.Name)
		}
		hdr, order, err := ckpt.LayoutHeader(specs, meta)
		if err != nil {
			return fmt.Errorf("laying out %s: %w", shard, err)
		}
		if len(order) > 0 {
			total += int64(order[len(order)-1].End)
		}
		path := filepath.Join(dir, shard)
		if o.FineTune && !edited {
			os.Remove(path)
			if err := os.Link(filepath.Join(o.Base, shard), path); err != nil {
				return err
			}
			continue
		}
		if err := writeValuesShard(path, hdr, order, func(f *os.File, ti ckpt.TensorInfo) error {
			seed := o.Seed
			if o.FineTune && changed(ti.Name) {
				seed ^= 0xf1
			}
			return pools.fill(f, byName[ti.Name], int64(ti.End-ti.Begin), seed, buf)
		}); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ckpt.IndexFile), idx, 0o644); err != nil {
		return err
	}
	c, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), c, 0o644)
}

// writeValuesShard writes the 8-byte length, the header and each tensor's
// data (in order, contiguous) through fill.
func writeValuesShard(path string, hdr []byte, order []ckpt.TensorInfo, fill func(*os.File, ckpt.TensorInfo) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	_, err = f.Write(lenBuf[:])
	if err == nil {
		_, err = f.Write(hdr)
	}
	var at uint64
	for _, ti := range order {
		if err != nil {
			break
		}
		if ti.Begin != at {
			err = fmt.Errorf("tensor %s at %d, want %d", ti.Name, ti.Begin, at)
			break
		}
		err = fill(f, ti)
		at = ti.End
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

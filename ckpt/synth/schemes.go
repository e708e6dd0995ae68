package synth

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// SchemeOptions shape a small checkpoint of one quantisation scheme
// (WriteScheme).
type SchemeOptions struct {
	// Seed varies the codes and scales (0 is a fixed default).
	Seed uint64
	// FineTune writes a bf16 fine-tune of the quantised base instead: the
	// same weights as BF16 values (an MXFP4 pair X_blocks/X_scales becomes
	// X [..., G*32]), every value the base's dequantised value (exact in
	// BF16 by the choice of scales) except every 7th element of
	// SchemeChangedWeight's values, and no quantisation config.
	FineTune bool
	// BadScaleShape gives the scale of SchemeBadScale a wrong shape (of the
	// right dtype, with data for it).
	BadScaleShape bool
	// Requantisable (MXFP4, NVFP4) makes the base's quantised weights by
	// quantising seeded float values with numfmt's recipe (MXFP4:
	// ocp-floor; NVFP4: ModelOpt's, with weight_scale_2 = 2^-10), among
	// them an all-zero block and, for NVFP4, a block with a subnormal
	// E4M3 scale: the fine-tune (FineTune, the dequantised values exactly,
	// without the every-7th change) re-quantises to exactly the base's
	// codes and scales under that recipe.
	Requantisable bool
	// RequantChanged, with Requantisable and FineTune, changes this many
	// elements of SchemeChangedWeight, each in another block, to the next
	// E2M1 value of its block below the block's largest: each fails to
	// re-quantise, the blocks' scales stay the recipe's.
	RequantChanged int
}

// The small model of WriteScheme: a two-layer decoder (hidden 64,
// intermediate 128, vocabulary 64). Embeddings, norms and lm_head stay
// BF16 (lm_head is in the ignore list); for MXFP4, the attention and the
// router stay BF16 (modules_to_not_convert) and the experts (2) are MXFP4,
// as in gpt-oss.
const (
	schemeHidden = 64
	schemeInter  = 128
	schemeVocab  = 64
	schemeLayers = 2
	schemeExpert = 2
)

// SchemeBadScale returns the name of the scale tensor that
// SchemeOptions.BadScaleShape makes wrong in a checkpoint of scheme s, and
// the name of its weight as verify reports it.
func SchemeBadScale(s quant.Scheme) (scale, weight string) {
	if s == quant.MXFP4 {
		return "model.layers.1.mlp.experts.down_proj_scales", "model.layers.1.mlp.experts.down_proj_blocks"
	}
	return "model.layers.1.mlp.down_proj.weight_scale", "model.layers.1.mlp.down_proj.weight"
}

// SchemeChangedWeight returns the name of the weight whose values a bf16
// fine-tune of scheme s changes (every 7th element).
func SchemeChangedWeight(s quant.Scheme) string {
	if s == quant.MXFP4 {
		return "model.layers.1.mlp.experts.down_proj"
	}
	return "model.layers.1.mlp.down_proj.weight"
}

// QuantConfigJSON returns the config.json of a checkpoint of scheme s (and,
// for NVFP4, the hf_quant_config.json, else nil).
func QuantConfigJSON(s quant.Scheme, o SchemeOptions) (config, hfQuant map[string]any, err error) {
	cfg := map[string]any{"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": schemeHidden,
		"intermediate_size": schemeInter, "num_hidden_layers": schemeLayers, "vocab_size": schemeVocab, "torch_dtype": "bfloat16"}
	var q map[string]any
	switch s {
	case quant.MXFP4:
		cfg["architectures"], cfg["model_type"], cfg["num_local_experts"] = []any{"GptOssForCausalLM"}, "gpt_oss", schemeExpert
		q = map[string]any{"quant_method": "mxfp4",
			"modules_to_not_convert": []any{"model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"}}
	case quant.NVFP4:
		// the legacy ModelOpt layout: the recipe in hf_quant_config.json only.
		hfQuant = map[string]any{"producer": map[string]any{"name": "modelopt", "version": "0.0.0-synth"},
			"quantization": map[string]any{"quant_algo": "NVFP4", "kv_cache_quant_algo": nil, "group_size": numfmt.NVFP4BlockSize, "exclude_modules": []any{"lm_head"}}}
	case quant.FP8Tensor, quant.FP8Channel, quant.FP8PerBlock:
		w := map[string]any{"num_bits": 8, "type": "float", "symmetric": true, "dynamic": false, "strategy": strings.TrimPrefix(string(s), "fp8-")}
		if s == quant.FP8PerBlock {
			w["block_structure"] = []any{32, 32}
		}
		q = map[string]any{"quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed", "ignore": []any{"lm_head"},
			"config_groups": map[string]any{"group_0": map[string]any{"targets": []any{"Linear"}, "weights": w,
				"input_activations": map[string]any{"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true, "symmetric": true}}}}
	default:
		return nil, nil, fmt.Errorf("synth: no small checkpoint for scheme %s", s)
	}
	if o.FineTune {
		return cfg, nil, nil
	}
	if q != nil {
		cfg["quantization_config"] = q
	}
	return cfg, hfQuant, nil
}

// schemeRNG seeds one tensor's values from its name.
func schemeRNG(o SchemeOptions, name string) *rng {
	h := fnv.New64a()
	h.Write([]byte(name))
	return newRNG(h.Sum64() ^ (o.Seed+1)*0x9e3779b97f4a7c15)
}

// schemeTensors makes the stored tensors of scheme s and, parallel to the
// quantised weights, their dequantised float32 values (for fine-tunes).
func schemeTensors(s quant.Scheme, o SchemeOptions) ([]ckpt.MemTensor, error) {
	var out []ckpt.MemTensor
	bf16 := func(name string, shape []int64, center, spread float32) {
		r := schemeRNG(o, name)
		n := numel(shape)
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = numfmt.RoundTo(numfmt.BF16, center+spread*r.sym())
		}
		out = append(out, bf16Tensor(name, shape, vals))
	}
	values := func(name string, shape []int64, vals []float32) {
		if o.FineTune && name == SchemeChangedWeight(s) && !o.Requantisable {
			for i := 0; i < len(vals); i += 7 {
				vals[i] = numfmt.RoundTo(numfmt.BF16, vals[i]*1.01+0.001)
			}
		}
		out = append(out, bf16Tensor(name, shape, vals))
	}
	bf16("model.embed_tokens.weight", []int64{schemeVocab, schemeHidden}, 0, 0.02)
	bf16("model.norm.weight", []int64{schemeHidden}, 1, 0.05)
	bf16("lm_head.weight", []int64{schemeVocab, schemeHidden}, 0, 0.02)
	for l := 0; l < schemeLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		bf16(p+"input_layernorm.weight", []int64{schemeHidden}, 1, 0.05)
		bf16(p+"post_attention_layernorm.weight", []int64{schemeHidden}, 1, 0.05)
		if s == quant.MXFP4 {
			for _, m := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
				bf16(p+"self_attn."+m+".weight", []int64{schemeHidden, schemeHidden}, 0, 0.05)
			}
			bf16(p+"mlp.router.weight", []int64{schemeExpert, schemeHidden}, 0, 0.05)
			for _, m := range []struct {
				name       string
				rows, cols int64
			}{{"gate_up_proj", 2 * schemeInter, schemeHidden}, {"down_proj", schemeHidden, schemeInter}} {
				base := p + "mlp.experts." + m.name
				blocks, scales, vals := mxfp4Weight(o, base, m.rows, m.cols)
				if o.Requantisable {
					blocks, scales, vals = mxfp4Recipe(o, base, m.rows, m.cols)
				}
				g := m.cols / numfmt.MXFP4BlockSize
				if o.FineTune {
					values(base, []int64{schemeExpert, m.rows, m.cols}, vals)
					continue
				}
				sshape := []int64{schemeExpert, m.rows, g}
				if o.BadScaleShape && base+"_scales" == mustBad(s) {
					sshape = []int64{schemeExpert, g, m.rows} // transposed: same size, wrong shape
				}
				out = append(out,
					ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: base + "_blocks", DType: numfmt.U8, Shape: []int64{schemeExpert, m.rows, g, numfmt.MXFP4BlockBytes}},
						Data: blocks},
					ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: base + "_scales", DType: numfmt.U8, Shape: sshape}, Data: scales})
			}
			continue
		}
		for _, m := range []struct {
			name       string
			rows, cols int64
		}{{"self_attn.q_proj", schemeHidden, schemeHidden}, {"self_attn.k_proj", schemeHidden, schemeHidden}, {"self_attn.v_proj", schemeHidden, schemeHidden},
			{"self_attn.o_proj", schemeHidden, schemeHidden}, {"mlp.gate_proj", schemeInter, schemeHidden}, {"mlp.up_proj", schemeInter, schemeHidden},
			{"mlp.down_proj", schemeHidden, schemeInter}} {
			mod := p + m.name
			ts, vals, err := quantLinear(s, o, mod, m.rows, m.cols)
			if err != nil {
				return nil, err
			}
			if o.FineTune {
				values(mod+".weight", []int64{m.rows, m.cols}, vals)
				continue
			}
			out = append(out, ts...)
		}
	}
	return out, nil
}

func mustBad(s quant.Scheme) string { n, _ := SchemeBadScale(s); return n }

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

func bf16Tensor(name string, shape []int64, vals []float32) ckpt.MemTensor {
	data := make([]byte, 2*len(vals))
	numfmt.EncodeFloat32(numfmt.BF16, vals, data)
	return ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.BF16, Shape: shape}, Data: data}
}

func f32Bytes(vals ...float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// mxfp4Weight makes the blocks and scales of an MXFP4 expert weight
// [experts, rows, cols] (seeded codes, exponents 2^-7..2^-4) and its
// dequantised values.
func mxfp4Weight(o SchemeOptions, base string, rows, cols int64) (blocks, scales []byte, vals []float32) {
	r := schemeRNG(o, base)
	g := cols / numfmt.MXFP4BlockSize
	nScales := schemeExpert * rows * g
	blocks = make([]byte, nScales*numfmt.MXFP4BlockBytes)
	scales = make([]byte, nScales)
	for i := range blocks {
		blocks[i] = byte(r.next() >> 56)
	}
	for i := range scales {
		scales[i] = byte(127 - 7 + r.next()%4)
	}
	vals = make([]float32, nScales*numfmt.MXFP4BlockSize)
	if err := numfmt.DequantMXFP4(vals, blocks, scales); err != nil {
		panic(err) // the sizes above agree by construction
	}
	return blocks, scales, vals
}

// mxfp4Recipe is mxfp4Weight for SchemeOptions.Requantisable: seeded
// float values (block exponents 2^-9..2^-6, the first block all zero)
// quantised with numfmt.MXFP4OCP, then dequantised.
func mxfp4Recipe(o SchemeOptions, base string, rows, cols int64) (blocks, scales []byte, vals []float32) {
	r := schemeRNG(o, base)
	g := cols / numfmt.MXFP4BlockSize
	nScales := schemeExpert * rows * g
	w := make([]float32, nScales*numfmt.MXFP4BlockSize)
	for i := range w {
		if i >= numfmt.MXFP4BlockSize {
			w[i] = r.sym() * float32(math.Ldexp(1, -6-int(i/numfmt.MXFP4BlockSize)%4))
		}
	}
	blocks, scales = make([]byte, nScales*numfmt.MXFP4BlockBytes), make([]byte, nScales)
	vals = make([]float32, len(w))
	if err := numfmt.QuantizeMXFP4(numfmt.MXFP4OCP, w, blocks, scales); err != nil {
		panic(err) // the sizes agree by construction
	}
	if err := numfmt.DequantMXFP4(vals, blocks, scales); err != nil {
		panic(err)
	}
	if o.FineTune && base == SchemeChangedWeight(quant.MXFP4) {
		requantChange(o, vals, blocks, numfmt.MXFP4BlockSize, func(b int) float32 { return numfmt.E8M0ToFloat32(scales[b]) })
	}
	return blocks, scales, vals
}

// nvfp4Recipe is quantLinear's NVFP4 weight for
// SchemeOptions.Requantisable: seeded float values whose largest is
// 2688 × 2^-10 (so weight_scale_2 is 2^-10 and every dequantised value is
// exact in BF16), block 0 all zero (scale 1.0) and block 1 with the
// subnormal E4M3 scale 3 × 2^-9, quantised with ModelOpt's recipe
// (numfmt.QuantizeNVFP4), then dequantised.
func nvfp4Recipe(o SchemeOptions, mod string, rows, cols int64) ([]ckpt.MemTensor, []float32) {
	r := schemeRNG(o, mod)
	const bs = numfmt.NVFP4BlockSize
	global := math.Ldexp(1, -10)
	w := make([]float32, rows*cols)
	for i := range w {
		switch b := i / bs; b {
		case 0:
		case 1: // largest |w| / (6 × 2^-10) = 3 × 2^-9, a subnormal E4M3 value
			w[i] = r.sym() * float32(6*global*3*math.Ldexp(1, -9)) * 0.4 // sym is in (-2, 2)
		default:
			w[i] = r.sym() * float32(2688*global*math.Ldexp(1, -1-(b%6)))
		}
	}
	w[bs] = float32(6 * global * 3 * math.Ldexp(1, -9))
	w[len(w)-1] = float32(2688 * global)
	packed, scales := make([]byte, rows*cols/2), make([]byte, rows*cols/bs)
	g, err := numfmt.QuantizeNVFP4(w, packed, scales)
	if err != nil || g != float32(global) {
		panic(fmt.Sprintf("synth: nvfp4 recipe: global %v, %v", g, err)) // by construction
	}
	vals := make([]float32, len(w))
	if err := numfmt.DequantNVFP4(vals, packed, scales, g, int(rows), int(cols)); err != nil {
		panic(err)
	}
	if o.FineTune && mod+".weight" == SchemeChangedWeight(quant.NVFP4) {
		requantChange(o, vals, packed, bs, func(b int) float32 { return numfmt.DecodeE4M3(scales[b]) * g })
	}
	return []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight", DType: numfmt.U8, Shape: []int64{rows, cols / 2}}, Data: packed},
		{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight_scale", DType: numfmt.F8E4M3, Shape: []int64{rows, cols / bs}}, Data: scales},
		{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight_scale_2", DType: numfmt.F32, Shape: []int64{}}, Data: f32Bytes(g)},
		{WriteSpec: ckpt.WriteSpec{Name: mod + ".input_scale", DType: numfmt.F32, Shape: []int64{}}, Data: f32Bytes(float32(math.Ldexp(1, -6)))},
	}, vals
}

// requantChange changes o.RequantChanged elements of vals, one in each of
// the blocks 2, 5, 8, ... (group values each; packed their E2M1 codes,
// scale(b) block b's scale): the first element of the block whose code is
// below the block's largest becomes the next E2M1 value, so that the
// block's largest value, and with it its scale, stays.
func requantChange(o SchemeOptions, vals []float32, packed []byte, group int, scale func(b int) float32) {
	code := func(i int) byte { return packed[i/2] >> (4 * (i % 2)) & 15 }
	for k, b := 0, 2; k < o.RequantChanged; b += 3 {
		if (b+1)*group > len(vals) {
			panic("synth: RequantChanged is larger than the weight allows")
		}
		var top byte
		for i := b * group; i < (b+1)*group; i++ {
			top = max(top, code(i)&7)
		}
		for i := b * group; i < (b+1)*group; i++ {
			if c := code(i); c&7 < top {
				vals[i] = numfmt.E2M1ToFloat32(c+1) * scale(b)
				k++
				break
			}
		}
	}
}

// quantLinear makes the stored tensors of one linear weight [rows, cols]
// under scheme s and its dequantised values; the codes and scales are
// seeded and chosen so that every dequantised value is exact in BF16.
func quantLinear(s quant.Scheme, o SchemeOptions, mod string, rows, cols int64) ([]ckpt.MemTensor, []float32, error) {
	r := schemeRNG(o, mod)
	bad := o.BadScaleShape && mod+".weight_scale" == mustBad(s)
	vals := make([]float32, rows*cols)
	if s == quant.NVFP4 && o.Requantisable {
		ts, vals := nvfp4Recipe(o, mod, rows, cols)
		return ts, vals, nil
	}
	if s == quant.NVFP4 {
		packed := make([]byte, rows*cols/2)
		for i := range packed {
			packed[i] = byte(r.next() >> 56)
		}
		scales := make([]byte, rows*cols/numfmt.NVFP4BlockSize)
		for i := range scales {
			scales[i] = byte(0x30 + r.next()%0x20) // positive, finite: 0.5 .. 15
		}
		global := float32(math.Ldexp(1, -8))
		if err := numfmt.DequantNVFP4(vals, packed, scales, global, int(rows), int(cols)); err != nil {
			return nil, nil, err
		}
		sshape := []int64{rows, cols / numfmt.NVFP4BlockSize}
		if bad {
			sshape = []int64{rows / 2, 2 * cols / numfmt.NVFP4BlockSize}
		}
		return []ckpt.MemTensor{
			{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight", DType: numfmt.U8, Shape: []int64{rows, cols / 2}}, Data: packed},
			{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight_scale", DType: numfmt.F8E4M3, Shape: sshape}, Data: scales},
			{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight_scale_2", DType: numfmt.F32, Shape: []int64{}}, Data: f32Bytes(global)},
			{WriteSpec: ckpt.WriteSpec{Name: mod + ".input_scale", DType: numfmt.F32, Shape: []int64{}}, Data: f32Bytes(float32(math.Ldexp(1, -6)))},
		}, vals, nil
	}
	codes := make([]byte, rows*cols)
	for i := range codes {
		c := byte(r.next() >> 56)
		if c&0x7F == 0x7F { // no NaN codes
			c &^= 1
		}
		codes[i] = c
	}
	// scales with at most 4 significant bits: code (4) × scale (4) fits BF16.
	scale := func() float32 { return float32(math.Ldexp(float64(8+r.next()%8), -14-int(r.next()%3))) }
	var sshape []int64
	var svals []float32
	var at func(i, j int64) float32
	switch s {
	case quant.FP8Tensor:
		sshape, svals = []int64{1}, []float32{scale()}
		at = func(int64, int64) float32 { return svals[0] }
		if bad {
			sshape, svals = []int64{2}, append(svals, svals[0])
		}
	case quant.FP8Channel:
		sshape, svals = []int64{rows, 1}, make([]float32, rows)
		for i := range svals {
			svals[i] = scale()
		}
		at = func(i, _ int64) float32 { return svals[i] }
		if bad {
			sshape = []int64{1, rows}
		}
	case quant.FP8PerBlock:
		br, bc := (rows+31)/32, (cols+31)/32
		sshape, svals = []int64{br, bc}, make([]float32, br*bc)
		for i := range svals {
			svals[i] = scale()
		}
		at = func(i, j int64) float32 { return svals[(i/32)*bc+j/32] }
		if bad {
			sshape = []int64{bc, br}
			if br == bc {
				sshape = []int64{br * bc}
			}
		}
	default:
		return nil, nil, fmt.Errorf("synth: no small checkpoint for scheme %s", s)
	}
	for i := int64(0); i < rows; i++ {
		for j := int64(0); j < cols; j++ {
			vals[i*cols+j] = numfmt.DecodeE4M3(codes[i*cols+j]) * at(i, j)
		}
	}
	return []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight", DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: mod + ".weight_scale", DType: numfmt.F32, Shape: sshape}, Data: f32Bytes(svals...)},
	}, vals, nil
}

// WriteScheme writes a small single-file checkpoint of scheme s (MXFP4,
// NVFP4, FP8Tensor, FP8Channel or FP8PerBlock) into dir: model.safetensors,
// config.json and, for NVFP4, hf_quant_config.json (ModelOpt's legacy
// layout, no quantization_config in config.json). With o.FineTune it is a
// bf16 fine-tune of that base instead, with o.BadScaleShape the base with
// one wrong scale shape (SchemeBadScale).
func WriteScheme(dir string, s quant.Scheme, o SchemeOptions) error {
	cfg, hfq, err := QuantConfigJSON(s, o)
	if err != nil {
		return err
	}
	ts, err := schemeTensors(s, o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, v map[string]any) error {
		b, _ := json.MarshalIndent(v, "", "  ")
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err := write("config.json", cfg); err != nil {
		return err
	}
	if hfq != nil {
		if err := write("hf_quant_config.json", hfq); err != nil {
			return err
		}
	}
	return ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"})
}

// SchemePair writes the base of scheme s to dir/base and its bf16
// fine-tune to dir/ft and returns both paths.
func SchemePair(dir string, s quant.Scheme) (base, ft string, err error) {
	base, ft = filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	if err = WriteScheme(base, s, SchemeOptions{}); err != nil {
		return
	}
	err = WriteScheme(ft, s, SchemeOptions{FineTune: true})
	return
}

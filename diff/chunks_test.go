package diff

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkRNG is a small deterministic generator for the fixtures of the
// bounded-chunk tests.
type chunkRNG struct{ s uint64 }

func (r *chunkRNG) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s
}

// bf16 is a value in (-0.05, 0.05) representable in bf16.
func (r *chunkRNG) bf16() float32 {
	return numfmt.RoundTo(numfmt.BF16, float32(int64(r.next()%2000001)-1000000)/2e7)
}

// chunkWeight is the name of the one weight of a bounded-chunk fixture.
const chunkWeight = "model.layers.1.mlp.down_proj"

// chunkSide is one side of a bounded-chunk pair: the stored tensors of one
// weight of a scheme and the config that names the scheme.
type chunkSide struct {
	ts      []ckpt.MemTensor
	cfg     map[string]any
	hfQuant map[string]any
}

func (s chunkSide) write(t *testing.T, dir string) *ckpt.Checkpoint {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	put := func(name string, v map[string]any) {
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), raw, 0o644))
	}
	cfg := s.cfg
	if cfg == nil {
		cfg = map[string]any{"model_type": "llama"}
	}
	put("config.json", cfg)
	if s.hfQuant != nil {
		put("hf_quant_config.json", s.hfQuant)
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), s.ts, nil))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func bytesOf(t *testing.T, dt numfmt.DType, v []float32) []byte {
	b := make([]byte, len(v)*dt.Bits()/8)
	require.NoError(t, numfmt.EncodeFloat32(dt, v, b))
	return b
}

// values are rows×cols bf16 values of seed; nudged, every 997th value of
// the second half moves by a few ulps.
func chunkValues(seed uint64, rows, cols int64, nudged bool) []float32 {
	r := &chunkRNG{s: seed*0x9e3779b97f4a7c15 + 1}
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = r.bf16()
	}
	if nudged {
		for i := len(v) / 2; i < len(v); i += 997 {
			v[i] = numfmt.RoundTo(numfmt.BF16, v[i]*1.03+1e-3)
		}
	}
	return v
}

// bf16Side stores w as a plain bf16 weight (an MXFP4 weight's values
// under its values' name and shape).
func bf16Side(t *testing.T, name string, shape []int64, w []float32, dt numfmt.DType) chunkSide {
	return chunkSide{ts: []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: name, DType: dt, Shape: shape}, Data: bytesOf(t, dt, w)}}}
}

// fp8Side quantises w with the recipe in bm×bn blocks: block FP8
// (weight_scale_inv, quant_method fp8) when ct is "", else the
// compressed-tensors scheme ct (weight_scale: [1], [N, 1] or blocks).
func fp8Side(t *testing.T, w []float32, rows, cols, bm, bn int64, ct quant.Scheme) chunkSide {
	sr, sc := (rows+bm-1)/bm, (cols+bn-1)/bn
	codes, scales := make([]byte, rows*cols), make([]float32, sr*sc)
	sdt := numfmt.F32
	if ct == "" {
		sdt = numfmt.BF16
	}
	numfmt.QuantizeBlockFP8(w, rows, cols, bm, bn, sdt, codes, scales)
	name := chunkWeight + ".weight"
	s := chunkSide{}
	sshape := []int64{sr, sc}
	sname := name + "_scale"
	switch ct {
	case "":
		sname = ckpt.ScaleName(name)
		s.cfg = map[string]any{"model_type": "llama", "quantization_config": map[string]any{"quant_method": "fp8", "weight_block_size": []int64{bm, bn}}}
	case quant.FP8Tensor:
		sshape = []int64{1}
		fallthrough
	default:
		cfg, _, err := synth.QuantConfigJSON(ct, synth.SchemeOptions{})
		require.NoError(t, err)
		if ct == quant.FP8PerBlock {
			cfg["quantization_config"].(map[string]any)["config_groups"].(map[string]any)["group_0"].(map[string]any)["weights"].(map[string]any)["block_structure"] = []any{bm, bn}
		}
		s.cfg = cfg
	}
	s.ts = []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: sname, DType: sdt, Shape: sshape}, Data: bytesOf(t, sdt, scales)},
	}
	return s
}

// packedSide is an NVFP4 weight [rows, cols] or an MXFP4 expert weight
// [2, rows/2, cols] of seed (changed: some codes of the second half
// differ), with its bf16 values.
func packedSide(t *testing.T, s quant.Scheme, seed uint64, rows, cols int64, changed bool) (chunkSide, []float32) {
	r := &chunkRNG{s: seed*0x9e3779b97f4a7c15 + 1}
	g := ckpt.PackedGroup(s)
	packed := make([]byte, rows*cols/2)
	for i := range packed {
		packed[i] = byte(r.next() >> 56)
	}
	// the same scales whatever the seed
	sr := &chunkRNG{s: 7}
	scales := make([]byte, rows*cols/g)
	for i := range scales {
		if s == quant.NVFP4 {
			scales[i] = byte(0x30 + sr.next()%0x20)
		} else {
			scales[i] = byte(120 + sr.next()%8)
		}
	}
	if changed {
		for i := len(packed) / 2; i < len(packed); i += 991 {
			packed[i] ^= 0x11
		}
	}
	vals := make([]float32, rows*cols)
	cfg, hfq, err := synth.QuantConfigJSON(s, synth.SchemeOptions{})
	require.NoError(t, err)
	out := chunkSide{cfg: cfg, hfQuant: hfq}
	if s == quant.NVFP4 {
		global := float32(math.Ldexp(1, -8))
		require.NoError(t, numfmt.DequantNVFP4(vals, packed, scales, global, int(rows), int(cols)))
		gb := make([]byte, 4)
		binary.LittleEndian.PutUint32(gb, math.Float32bits(global))
		out.ts = []ckpt.MemTensor{
			{WriteSpec: ckpt.WriteSpec{Name: chunkWeight + ".weight", DType: numfmt.U8, Shape: []int64{rows, cols / 2}}, Data: packed},
			{WriteSpec: ckpt.WriteSpec{Name: chunkWeight + ".weight_scale", DType: numfmt.F8E4M3, Shape: []int64{rows, cols / g}}, Data: scales},
			{WriteSpec: ckpt.WriteSpec{Name: chunkWeight + ".weight_scale_2", DType: numfmt.F32, Shape: []int64{}}, Data: gb},
		}
		return out, vals
	}
	require.NoError(t, numfmt.DequantMXFP4(vals, packed, scales))
	e, n := int64(2), rows/2
	base := "model.layers.1.mlp.experts.down_proj"
	out.ts = []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: base + "_blocks", DType: numfmt.U8, Shape: []int64{e, n, cols / g, g / 2}}, Data: packed},
		{WriteSpec: ckpt.WriteSpec{Name: base + "_scales", DType: numfmt.U8, Shape: []int64{e, n, cols / g}}, Data: scales},
	}
	return out, vals
}

// TestBoundedChunks: the full value diff of a pair of every scheme reads
// and decodes buffers of at most about ChunkBytes per side, however large
// its scale blocks (before: a compressed-tensors per-tensor FP8 weight was
// one chunk of the whole tensor, its requant comparison two float32
// buffers of it; a 128×128 block-FP8 weight at least 128 rows; a
// per-channel one a row), and its result is the same, bit for bit, as
// reading each chunk at once (the comparison before: hooks.probe
// unbounded): relations, counts, statistics.
func TestBoundedChunks(t *testing.T) {
	t.Parallel()
	// 256 Ki elements: 256 KiB of FP8 codes; with ChunkBytes 64 KiB a
	// piece holds 32 Ki bf16 elements (a 128×128 block fits), with 8 KiB
	// 4 Ki (it does not)
	const R, C = 256, 1024
	w := chunkValues(1, R, C, false)
	w2 := chunkValues(1, R, C, true) // a fine-tune: some values moved
	other := chunkValues(2, R, C, false)
	name := chunkWeight + ".weight"
	shape := []int64{R, C}
	nvB, nvVals := packedSide(t, quant.NVFP4, 3, R, C, false)
	nvF, _ := packedSide(t, quant.NVFP4, 3, R, C, true)
	mxB, mxVals := packedSide(t, quant.MXFP4, 4, R, C, false)
	mxF, _ := packedSide(t, quant.MXFP4, 4, R, C, true)
	mxName, mxShape := "model.layers.1.mlp.experts.down_proj", []int64{2, R / 2, C}
	// the same codes as fp8Side(w), another scale: every value differs
	rescaled := func(s chunkSide) chunkSide {
		out := s
		out.ts = append([]ckpt.MemTensor(nil), s.ts...)
		sc := append([]byte(nil), s.ts[1].Data...)
		v := make([]float32, len(sc)*8/s.ts[1].DType.Bits())
		require.NoError(t, numfmt.DecodeFloat32(s.ts[1].DType, sc, v))
		for i := range v {
			v[i] *= 2
		}
		out.ts[1].Data = bytesOf(t, s.ts[1].DType, v)
		return out
	}
	// codes changed at the end only: the pieces of a large chunk before
	// them are equal (their statistics come from the base afterwards)
	late := func(s chunkSide) chunkSide {
		out := s
		out.ts = append([]ckpt.MemTensor(nil), s.ts...)
		codes := append([]byte(nil), s.ts[0].Data...)
		for i := len(codes) - 1; i >= len(codes)-3000; i -= 300 {
			if c := codes[i] ^ 0x02; c&0x7f != 0x7f { // no NaN code
				codes[i] = c
			}
		}
		out.ts[0].Data = codes
		return out
	}
	type tc struct {
		name      string
		base, ft  chunkSide
		rel       Relation
		unbounded bool    // the chunk was larger than the bound before
		chunks    []int64 // ChunkBytes (default 64 KiB and 8 KiB)
	}
	var cases []tc
	for _, s := range []struct {
		scheme quant.Scheme
		bm, bn int64
		label  string
	}{{"", 128, 128, "block-fp8"}, {quant.FP8Tensor, R, C, "fp8-tensor"}, {quant.FP8Channel, 1, C, "fp8-channel"}, {quant.FP8PerBlock, 128, 128, "fp8-block"}} {
		q := fp8Side(t, w, R, C, s.bm, s.bn, s.scheme)
		q2 := fp8Side(t, w2, R, C, s.bm, s.bn, s.scheme)
		big := s.bm > 1 // 128 rows of 1024 columns, or the tensor: > 64 KiB
		cases = append(cases,
			tc{s.label + " changed", q, q2, Changed, big, nil},
			tc{s.label + " identical", q, q, Identical, big, nil},
			tc{s.label + " late codes changed", q, late(q), Changed, big, nil},
			tc{s.label + " rescaled", q, rescaled(q), Changed, big, nil},
			tc{s.label + " vs bf16 requant_identical", q, bf16Side(t, name, shape, w, numfmt.BF16), RequantIdentical, big, nil},
			tc{s.label + " vs bf16 fine-tune", q, bf16Side(t, name, shape, w2, numfmt.BF16), DTypeChanged, big, nil},
			tc{"bf16 vs " + s.label + " fine-tune", bf16Side(t, name, shape, w, numfmt.BF16), q2, DTypeChanged, big, nil},
			tc{s.label + " vs f32 other", q, bf16Side(t, name, shape, other, numfmt.F32), DTypeChanged, big, nil},
		)
	}
	cases = append(cases,
		tc{"bf16 changed", bf16Side(t, name, shape, w, numfmt.BF16), bf16Side(t, name, shape, w2, numfmt.BF16), Changed, false, nil},
		tc{"f16 vs f32", bf16Side(t, name, shape, w, numfmt.F16), bf16Side(t, name, shape, w2, numfmt.F32), DTypeChanged, false, nil},
		tc{"f32 changed", bf16Side(t, name, shape, w, numfmt.F32), bf16Side(t, name, shape, w2, numfmt.F32), Changed, false, nil},
		tc{"nvfp4 changed", nvB, nvF, Changed, false, nil},
		tc{"nvfp4 vs bf16", nvB, bf16Side(t, name, shape, nvVals, numfmt.BF16), DTypeChanged, false, nil},
		tc{"bf16 vs nvfp4", bf16Side(t, name, shape, w, numfmt.BF16), nvF, DTypeChanged, false, nil},
		tc{"mxfp4 changed", mxB, mxF, Changed, false, nil},
		tc{"mxfp4 vs bf16", mxB, bf16Side(t, mxName, mxShape, mxVals, numfmt.BF16), DTypeChanged, false, nil},
	)
	// a zero tensor (scale 0), and a NaN in the fine-tune
	zeros := make([]float32, R*C)
	withNaN := append([]float32(nil), w...)
	withNaN[R*C-5] = float32(math.NaN())
	qt := fp8Side(t, w, R, C, R, C, quant.FP8Tensor)
	cases = append(cases,
		tc{"fp8-tensor zeros vs bf16 zeros", fp8Side(t, zeros, R, C, R, C, quant.FP8Tensor), bf16Side(t, name, shape, zeros, numfmt.BF16), RequantIdentical, true, nil},
		tc{"fp8-tensor zeros vs bf16", fp8Side(t, zeros, R, C, R, C, quant.FP8Tensor), bf16Side(t, name, shape, w, numfmt.BF16), DTypeChanged, true, nil},
		tc{"fp8-tensor vs bf16 with NaN", qt, bf16Side(t, name, shape, withNaN, numfmt.BF16), DTypeChanged, true, nil},
		tc{"bf16 with NaN vs fp8-tensor", bf16Side(t, name, shape, withNaN, numfmt.BF16), qt, DTypeChanged, true, nil},
	)
	// rows wider than a piece (and than a segment): pieces inside rows
	const WR, WC = 4, 65536
	ww, ww2 := chunkValues(6, WR, WC, false), chunkValues(6, WR, WC, true)
	for _, s := range []quant.Scheme{quant.FP8Channel, quant.FP8Tensor} {
		bm := int64(1)
		if s == quant.FP8Tensor {
			bm = WR
		}
		q := fp8Side(t, ww, WR, WC, bm, WC, s)
		wide := []int64{32 << 10}
		cases = append(cases,
			tc{string(s) + " wide changed", q, fp8Side(t, ww2, WR, WC, bm, WC, s), Changed, true, wide},
			tc{string(s) + " wide late codes changed", q, late(q), Changed, true, wide},
			tc{string(s) + " wide vs bf16", q, bf16Side(t, name, []int64{WR, WC}, ww2, numfmt.BF16), DTypeChanged, true, wide},
			tc{string(s) + " wide requant_identical", q, bf16Side(t, name, []int64{WR, WC}, ww, numfmt.BF16), RequantIdentical, true, wide},
		)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bc := c.base.write(t, filepath.Join(dir, "base"))
			fc := c.ft.write(t, filepath.Join(dir, "ft"))
			chunks := c.chunks
			if chunks == nil {
				chunks = []int64{64 << 10, 8 << 10}
			}
			for _, chunk := range chunks {
				compareBounded(t, bc, fc, chunk, c.rel, c.unbounded && chunk == chunks[0], fmt.Sprintf("case %d, chunk %d", i, chunk))
			}
		})
	}
}

// compareBounded compares bc and fc with chunk ChunkBytes, bounded and
// each chunk at once: the same results, the bounded buffers within chunk
// (decoded float32 values: 4×), the weight's relation rel; unbounded says
// that the chunks at once exceed the bound.
func compareBounded(t *testing.T, bc, fc *ckpt.Checkpoint, chunk int64, rel Relation, unbounded bool, msg string) {
	var bounded, whole chunkProbe
	{
		{
			whole.unbounded = true
			res, err := compareProbed(context.Background(), bc, fc, CompareOptions{ChunkBytes: chunk, Workers: 2}, &bounded)
			require.NoError(t, err)
			ref, err := compareProbed(context.Background(), bc, fc, CompareOptions{ChunkBytes: chunk, Workers: 2}, &whole)
			require.NoError(t, err)
			// the same output (JSON: every float64 in full; NaN and Inf
			// statistics are null) and, for finite ones, the same values
			a, err := json.Marshal(ref.Tensors)
			require.NoError(t, err)
			b, err := json.Marshal(res.Tensors)
			require.NoError(t, err)
			assert.JSONEq(t, string(a), string(b), msg)
			if res.Tensors[0].NonFinite == nil {
				assert.Equal(t, ref.Tensors, res.Tensors, msg)
			}
			if bounded.maxRead != whole.maxRead {
				// a block larger than a piece: the wide side read twice
				// (its absolute maximum, then its values); equal
				// pieces before a different one: read again from the base
				assert.GreaterOrEqual(t, res.BytesRead, ref.BytesRead, msg)
			} else {
				assert.Equal(t, ref.BytesRead, res.BytesRead, msg)
			}
			assert.Equal(t, rel, res.Tensors[0].Relation, msg)
			assert.LessOrEqual(t, bounded.maxRead, chunk, "read buffer: "+msg)
			assert.LessOrEqual(t, bounded.maxDecode, 4*chunk, "decode buffer: "+msg)
			if unbounded {
				assert.Greater(t, whole.maxRead, chunk, "the chunk at once is larger than the bound: "+msg)
			}
		}
	}
}

// TestBoundedChunksPerTensorFP8 is the case found on a 27B-size weight: a
// compressed-tensors per-tensor FP8 weight (8 MiB of codes) was compared in
// one chunk of the whole tensor, and against a bf16 fine-tune through two
// float32 buffers of it (64 MiB); with the default options every buffer is
// now at most ChunkBytes (1 MiB), with the same result.
func TestBoundedChunksPerTensorFP8(t *testing.T) {
	t.Parallel()
	const R, C = 2048, 4096
	w := chunkValues(5, R, C, false)
	w2 := chunkValues(5, R, C, true)
	dir := t.TempDir()
	q := fp8Side(t, w, R, C, R, C, quant.FP8Tensor)
	bc := q.write(t, filepath.Join(dir, "base"))
	for _, ft := range []struct {
		name string
		side chunkSide
		rel  Relation
	}{
		{"fp8", fp8Side(t, w2, R, C, R, C, quant.FP8Tensor), Changed},
		{"bf16", bf16Side(t, chunkWeight+".weight", []int64{R, C}, w, numfmt.BF16), RequantIdentical},
	} {
		fc := ft.side.write(t, filepath.Join(dir, ft.name))
		var bounded, whole chunkProbe
		whole.unbounded = true
		res, err := compareProbed(context.Background(), bc, fc, CompareOptions{}, &bounded)
		require.NoError(t, err)
		ref, err := compareProbed(context.Background(), bc, fc, CompareOptions{}, &whole)
		require.NoError(t, err)
		assert.Equal(t, ref.Tensors, res.Tensors, ft.name)
		assert.Equal(t, ft.rel, res.Tensors[0].Relation, ft.name)
		assert.LessOrEqual(t, bounded.maxRead, int64(1<<20), ft.name)
		assert.LessOrEqual(t, bounded.maxDecode, int64(4<<20), ft.name)
		assert.GreaterOrEqual(t, whole.maxRead, int64(R*C), ft.name)
	}
}

// TestRequantBandsWhole: with the default ChunkBytes, a block-FP8 weight
// compared with its bf16 copy reads each band of 128 rows whole, one read
// per side, when the band is at most 8 MiB; with the bands off (an
// explicit bound) it is read in tiles of whole blocks, a read per row of
// each tile (over HTTP a range request each), with the same result.
// Before, the default read tiles too: 1,024 reads here instead of 4.
func TestRequantBandsWhole(t *testing.T) {
	t.Parallel()
	const R, C = 256, 8192 // a bf16 band is 2 MiB: more than a 1 MiB piece
	w := chunkValues(7, R, C, false)
	dir := t.TempDir()
	bc := fp8Side(t, w, R, C, 128, 128, "").write(t, filepath.Join(dir, "base"))
	fc := bf16Side(t, chunkWeight+".weight", []int64{R, C}, w, numfmt.BF16).write(t, filepath.Join(dir, "ft"))
	var whole, tiles chunkProbe
	tiles.noBands = true
	res, err := compareProbed(context.Background(), bc, fc, CompareOptions{Workers: 2}, &whole)
	require.NoError(t, err)
	ref, err := compareProbed(context.Background(), bc, fc, CompareOptions{Workers: 2}, &tiles)
	require.NoError(t, err)
	assert.Equal(t, ref.Tensors, res.Tensors)
	assert.Equal(t, RequantIdentical, res.Tensors[0].Relation)
	assert.Equal(t, int64(4), whole.reads, "2 bands, 2 sides")
	assert.Equal(t, int64(1024), tiles.reads, "2 bands × 2 tiles × 128 rows × 2 sides")
	assert.LessOrEqual(t, whole.maxRead, int64(4<<20))
}

// TestLocalPieces: with the default ChunkBytes, a pair of local files is
// read in pieces of engine.localPiece per side (here 8 KiB instead of
// 256 KiB, so that these tensors take many; one segment at least), and
// the result is the same,
// bit for bit, as reading each chunk at once.
func TestLocalPieces(t *testing.T) {
	t.Parallel()
	const R, C = 256, 1024
	w := chunkValues(7, R, C, false)
	w2 := chunkValues(7, R, C, true)
	name := chunkWeight + ".weight"
	shape := []int64{R, C}
	q, q2 := fp8Side(t, w, R, C, 128, 128, ""), fp8Side(t, w2, R, C, 128, 128, "")
	for _, c := range []struct {
		name     string
		base, ft chunkSide
		rel      Relation
	}{
		{"block-fp8 changed", q, q2, Changed},
		{"block-fp8 identical", q, q, Identical},
		{"bf16 changed", bf16Side(t, name, shape, w, numfmt.BF16), bf16Side(t, name, shape, w2, numfmt.BF16), Changed},
		{"f32 changed", bf16Side(t, name, shape, w, numfmt.F32), bf16Side(t, name, shape, w2, numfmt.F32), Changed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			bc := c.base.write(t, filepath.Join(dir, "base"))
			fc := c.ft.write(t, filepath.Join(dir, "ft"))
			const piece = 8 << 10
			pieces, whole := chunkProbe{localPiece: piece}, chunkProbe{unbounded: true}
			res, err := compareProbed(context.Background(), bc, fc, CompareOptions{Workers: 2}, &pieces)
			require.NoError(t, err)
			ref, err := compareProbed(context.Background(), bc, fc, CompareOptions{Workers: 2}, &whole)
			require.NoError(t, err)
			a, err := json.Marshal(ref.Tensors)
			require.NoError(t, err)
			b, err := json.Marshal(res.Tensors)
			require.NoError(t, err)
			assert.JSONEq(t, string(a), string(b))
			assert.Equal(t, ref.Tensors, res.Tensors)
			assert.Equal(t, c.rel, res.Tensors[0].Relation)
			// a piece is at least one segment (segMax elements; at most
			// 4 bytes each here)
			limit := max(int64(piece), segMax*4)
			assert.LessOrEqual(t, pieces.maxRead, limit, "read buffer")
			assert.Greater(t, whole.maxRead, limit, "the chunk at once")
			assert.Greater(t, pieces.reads, whole.reads, "more, smaller reads")
		})
	}
}

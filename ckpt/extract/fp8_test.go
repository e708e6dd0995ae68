package extract

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e4m3 decodes an F8_E4M3FN code from the format's definition, in float64,
// independently of numfmt.DecodeE4M3.
func e4m3(c byte) float64 {
	s := 1.0
	if c&0x80 != 0 {
		s = -1
	}
	e, m := int(c>>3)&15, float64(c&7)
	switch {
	case e == 15 && c&7 == 7:
		return math.NaN()
	case e == 0:
		return s * m / 8 * math.Ldexp(1, -6)
	}
	return s * (1 + m/8) * math.Ldexp(1, e-7)
}

// scaleValue decodes one element of a BF16, F16 or F32 scale tensor.
func scaleValue(t *testing.T, dt numfmt.DType, b []byte, i int) float64 {
	switch dt {
	case numfmt.BF16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
	case numfmt.F32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	case numfmt.F16:
		h := binary.LittleEndian.Uint16(b[2*i:])
		e, m := int(h>>10)&31, float64(h&1023)
		v := (1 + m/1024) * math.Ldexp(1, e-15)
		if e == 0 {
			v = m / 1024 * math.Ldexp(1, -14)
		}
		if h&0x8000 != 0 {
			v = -v
		}
		return v
	}
	t.Fatalf("scale dtype %s", dt)
	return 0
}

// roundBits rounds x (exact in float64) to a float of prec significant
// bits, nearest even, and returns its float32 bits (for BF16: prec 8, the
// top 16 bits; for F32: prec 24). Values stay in the normal range here.
func roundBits(x float64, prec uint) uint32 {
	if math.IsNaN(x) {
		return 0x7fc00000
	}
	f, _ := new(big.Float).SetPrec(prec).SetMode(big.ToNearestEven).SetFloat64(x).Float32()
	return math.Float32bits(f)
}

// expectDequant computes, independently of the package, the bytes of an
// FP8 weight dequantised (code × block scale, computed exactly) and rounded
// to target (BF16 or F32) nearest even.
func expectDequant(t *testing.T, codes []byte, rows, cols int64, scale []byte, sdt numfmt.DType, bm, bn int64, target numfmt.DType) []byte {
	sCols := (cols + bn - 1) / bn
	out := make([]byte, rows*cols*int64(target.Bits()/8))
	for i := range rows {
		for j := range cols {
			x := e4m3(codes[i*cols+j]) * scaleValue(t, sdt, scale, int(i/bm*sCols+j/bn))
			k := i*cols + j
			switch target {
			case numfmt.BF16:
				binary.LittleEndian.PutUint16(out[2*k:], uint16(roundBits(x, 8)>>16))
			case numfmt.F32:
				binary.LittleEndian.PutUint32(out[4*k:], roundBits(x, 24))
			default:
				t.Fatalf("target %s", target)
			}
		}
	}
	return out
}

// TestExtractMTPDequantised extracts mtp.** of the FP8 fixture to bf16 and
// f32: every FP8 weight equals code × scale rounded nearest even (computed
// here independently), the scales are gone, every other tensor is copied,
// for chunk sizes that split rows and scale blocks anywhere.
func TestExtractMTPDequantised(t *testing.T) {
	t.Parallel()
	for _, sdt := range []numfmt.DType{numfmt.BF16, numfmt.F32, numfmt.F16} {
		dir := t.TempDir()
		o := synth.Small()
		o.ScaleDType = sdt
		o.Vision = false
		src := filepath.Join(dir, "base")
		require.NoError(t, synth.Write(src, o))
		c := openCkpt(t, src)
		for _, target := range []string{BF16, F32} {
			for _, chunk := range []int64{0, 100, 16} {
				name := fmt.Sprintf("%s-%s-%d", sdt, target, chunk)
				t.Run(name, func(t *testing.T) {
					p, err := NewPlan(c, PlanOptions{Match: []string{"mtp.**"}, DType: target, ChunkBytes: chunk})
					require.NoError(t, err)
					out := filepath.Join(dir, name+".safetensors")
					_, err = p.Write(context.Background(), out)
					require.NoError(t, err)
					oc := openCkpt(t, out)
					requireClean(t, oc)
					require.Len(t, oc.Tensors, 15, "the 15 tensors of the MTP head, scales dropped")
					tdt, _ := TargetDType(target)
					dequantised := 0
					for _, x := range oc.Tensors {
						assert.False(t, strings.HasSuffix(x.Name, ckpt.ScaleSuffix), x.Name)
						assert.Equal(t, tdt, x.DType, x.Name)
						s, _ := c.Lookup(x.Name)
						got := readTensor(t, x)
						if sc, ok := c.Lookup(ckpt.ScaleName(x.Name)); ok {
							dequantised++
							want := expectDequant(t, readTensor(t, s), s.Shape[0], s.Shape[1], readTensor(t, sc), sdt, int64(o.Block[0]), int64(o.Block[1]), tdt)
							require.Equal(t, want, got, x.Name)
							continue
						}
						require.Equal(t, numfmt.BF16, s.DType)
						if tdt == numfmt.BF16 {
							require.Equal(t, readTensor(t, s), got, x.Name)
						} else { // bf16 → f32 is exact: the top half of each word
							src := readTensor(t, s)
							for k := range int(s.Numel()) {
								require.Equal(t, binary.LittleEndian.Uint16(src[2*k:]), uint16(binary.LittleEndian.Uint32(got[4*k:])>>16))
								require.Zero(t, binary.LittleEndian.Uint32(got[4*k:])&0xffff)
							}
						}
					}
					assert.Equal(t, 7, dequantised)
				})
			}
		}
	}
}

// writeFP8Dir writes a directory with one rows×cols block-FP8 weight
// (block bm×bn, so partial blocks when the sizes do not divide), its
// scale, a bf16 bias, an I64 tensor and a config with quantization_config.
func writeFP8Dir(t testing.TB, dir string, rows, cols, bm, bn int64, sdt numfmt.DType) string {
	r := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.02)
		if i%97 == 0 {
			w[i] *= 40 // outliers: saturated codes
		}
	}
	codes := make([]byte, rows*cols)
	sr, sc := (rows+bm-1)/bm, (cols+bn-1)/bn
	scales := make([]float32, sr*sc)
	numfmt.QuantizeBlockFP8(w, rows, cols, bm, bn, sdt, codes, scales)
	sdata := make([]byte, len(scales)*sdt.Bits()/8)
	require.NoError(t, numfmt.EncodeFloat32(sdt, scales, sdata))
	bias := make([]byte, 2*rows)
	require.NoError(t, numfmt.EncodeFloat32(numfmt.BF16, w[:rows], bias))
	ids := randBytes(3, 8*5)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: "w.weight", DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: "w.weight_scale_inv", DType: sdt, Shape: []int64{sr, sc}}, Data: sdata},
		{WriteSpec: ckpt.WriteSpec{Name: "w.bias", DType: numfmt.BF16, Shape: []int64{rows}}, Data: bias},
		{WriteSpec: ckpt.WriteSpec{Name: "ids", DType: numfmt.I64, Shape: []int64{5}}, Data: ids},
	}, map[string]string{"format": "pt"}))
	cfg, _ := json.Marshal(map[string]any{"model_type": "test", "hidden_size": 7, "rms_norm_eps": 1e-6,
		"quantization_config": map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": []int64{bm, bn}}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	return dir
}

// TestDequantPartialBlocks: shapes that blocks do not divide, chunks that
// split rows and blocks anywhere.
func TestDequantPartialBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFP8Dir(t, filepath.Join(dir, "src"), 45, 70, 16, 32, numfmt.F32)
	c := openCkpt(t, src)
	w, _ := c.Lookup("w.weight")
	sc, _ := c.Lookup("w.weight_scale_inv")
	want := expectDequant(t, readTensor(t, w), 45, 70, readTensor(t, sc), numfmt.F32, 16, 32, numfmt.BF16)
	for _, chunk := range []int64{16, 36, 140, 1000, 0} {
		p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: BF16, ChunkBytes: chunk})
		require.NoError(t, err)
		out := filepath.Join(dir, "out.safetensors")
		_, err = p.Write(context.Background(), out)
		require.NoError(t, err)
		oc := openCkpt(t, out)
		requireClean(t, oc)
		got, ok := oc.Lookup("w.weight")
		require.True(t, ok)
		require.Equal(t, want, readTensor(t, got), "chunk %d", chunk)
		_, ok = oc.Lookup("w.weight_scale_inv")
		assert.False(t, ok, "scale dropped")
		ids, _ := oc.Lookup("ids")
		srcIDs, _ := c.Lookup("ids")
		assert.Equal(t, numfmt.I64, ids.DType, "non-float kept")
		assert.Equal(t, readTensor(t, srcIDs), readTensor(t, ids))
	}
}

// TestKeepWithScales: under keep, --with-scales adds the scales the glob
// misses, and every tensor is byte-identical to the source; without it the
// plan warns about each FP8 weight whose scale is left out.
func TestKeepWithScales(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	c := openCkpt(t, src)

	p, err := NewPlan(c, PlanOptions{Match: []string{"mtp.**.weight"}, DType: Keep, WithScales: true, ChunkBytes: 100})
	require.NoError(t, err)
	assert.Empty(t, p.Warnings)
	out := filepath.Join(dir, "mtp.safetensors")
	_, err = p.Write(context.Background(), out)
	require.NoError(t, err)
	oc := openCkpt(t, out)
	requireClean(t, oc)
	require.Len(t, oc.Tensors, 15+7)
	for _, x := range oc.Tensors {
		s, ok := c.Lookup(x.Name)
		require.True(t, ok)
		assert.Equal(t, s.DType, x.DType, x.Name)
		assert.Equal(t, s.Shape, x.Shape, x.Name)
		assert.Equal(t, readTensor(t, s), readTensor(t, x), x.Name)
	}

	p, err = NewPlan(c, PlanOptions{Match: []string{"mtp.**.weight"}})
	require.NoError(t, err)
	assert.Len(t, p.Items, 15)
	assert.Len(t, p.Warnings, 7)
	assert.Contains(t, p.Warnings[0], "(add Options.WithScales, or use Options.DType bf16)")
	p, err = NewPlan(c, PlanOptions{Match: []string{"mtp.**.weight"}, Words: ckpt.Words{"WithScales": "--with-scales", "DType": "--dtype"}})
	require.NoError(t, err)
	assert.Contains(t, p.Warnings[0], "(add --with-scales, or use --dtype bf16)")
}

// TestSelectionErrors: no match, bad globs and bad dtypes are errors.
func TestSelectionErrors(t *testing.T) {
	t.Parallel()
	c := openCkpt(t, writeSource(t, t.TempDir(), allDTypeTensors(), nil))
	for _, tc := range []struct {
		opt  PlanOptions
		want string
	}{
		{PlanOptions{Match: []string{"nothing.**"}}, "no tensor matches"},
		{PlanOptions{Match: []string{"t.*"}, Exclude: []string{"**"}}, "no tensor matches"},
		// an --exclude that matches no name would extract what it meant to leave out
		{PlanOptions{Match: []string{"**"}, Exclude: []string{"F8_*"}}, `so it excludes nothing: did you mean 'scalar.F8_*' or 't.F8_*' or 'zero.F8_*'?`},
		{PlanOptions{Match: []string{"["}}, "invalid Options.Match glob"},
		{PlanOptions{Match: []string{"**"}, DType: "int4"}, "invalid dtype"},
		{PlanOptions{Match: []string{"**"}, MaxShardSize: -1}, "invalid max shard size"},
	} {
		_, err := NewPlan(c, tc.opt)
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestMetadata: __metadata__ is kept when every selected tensor's file has
// the same, else {"format": "pt"}.
func TestMetadata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := allDTypeTensors()[:6]
	src := writeSource(t, dir, ts, map[string]string{"format": "pt", "note": "x"})
	p, err := NewPlan(openCkpt(t, src), PlanOptions{Match: []string{"**"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "pt", "note": "x"}, p.Metadata)

	bare := filepath.Join(dir, "bare.safetensors")
	require.NoError(t, ckpt.WriteFile(bare, ts, nil))
	p, err = NewPlan(openCkpt(t, bare), PlanOptions{Match: []string{"**"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "pt"}, p.Metadata)

	// the fixture: shards with {"format": "pt"}
	base := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(base, synth.Small()))
	p, err = NewPlan(openCkpt(t, base), PlanOptions{Match: []string{"**"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "pt"}, p.Metadata)
}

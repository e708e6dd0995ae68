package diff_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStackedOverHub: the tiny MoE pairs (fused 3-D block-FP8 experts
// [E, R, C] and per-expert, one-tensor and every-tensor fine-tunes) and
// the MXFP4/NVFP4 3-D expert stacks against their bf16 fine-tunes (both
// ways), compared over HTTP (the test hub) and locally, in full, by
// layer, in bytes mode and sampled (--sample-bytes, --sample-budget): the
// rows are the same both ways, no sampled row counts more changed
// elements than the full diff's, and every values-mode row has the full
// diff's element count.
func TestStackedOverHub(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	type pair struct{ name, base, ft string }
	var pairs []pair
	for _, pe := range []bool{false, true} {
		for _, all := range []bool{false, true} {
			o := synth.SmallMoE()
			o.PerExpert = pe
			b := filepath.Join(dir, t.Name(), "b", onOff(pe), onOff(all))
			f := filepath.Join(dir, t.Name(), "f", onOff(pe), onOff(all))
			require.NoError(t, synth.Write(b, o))
			o.FineTune, o.FineTuneAll = true, all
			require.NoError(t, synth.Write(f, o))
			pairs = append(pairs, pair{"moe" + onOff(pe) + onOff(all), b, f})
		}
	}
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		b, _, f := schemeDirs(t, s)
		pairs = append(pairs, pair{string(s), b, f}, pair{string(s) + "rev", f, b})
	}
	ctx := context.Background()
	for _, p := range pairs {
		hub := sourcetest.NewHub(p.base, "org/base")
		hub.AddRepo("org/ft", p.ft)
		env := map[string]string{"HF_ENDPOINT": hub.URL}
		openers := source.Openers(source.Options{Getenv: func(k string) string { return env[k] }, PrefixSize: 16})
		hb, err := ckpt.Open(ctx, "hf://org/base", ckpt.Options{}, openers...)
		require.NoError(t, err)
		hf, err := ckpt.Open(ctx, "hf://org/ft", ckpt.Options{}, openers...)
		require.NoError(t, err)
		bc, fc := openLocal(t, p.base, p.ft)
		full, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{})
		require.NoError(t, err)
		fr := rows(full)
		for _, opt := range []diff.CompareOptions{{}, {ByLayer: true}, {Mode: diff.ModeBytes}, {SampleBytes: 4096, SampleSeed: 2}, {SampleBytes: 100, SampleSeed: 2}, {SampleBudget: 100 << 10, SampleSeed: 2}, {SampleBudget: 100 << 10, ByLayer: true}} {
			loc, err := diff.Compare(ctx, bc, fc, opt)
			require.NoError(t, err, p.name)
			rem, err := diff.Compare(ctx, hb, hf, opt)
			require.NoError(t, err, p.name)
			assert.Equal(t, loc.Tensors, rem.Tensors, "%s %+v", p.name, opt)
			for _, tr := range loc.Tensors {
				u := fr[tr.Name]
				if opt.Mode != diff.ModeBytes {
					assert.Equal(t, u.Numel, tr.Numel, "%s %s %+v %v %v", p.name, tr.Name, opt, tr.Relation, tr.Shape)
				}
				if tr.ChangedElems != nil && u.ChangedElems != nil {
					assert.LessOrEqual(t, *tr.ChangedElems, *u.ChangedElems, "%s %s %+v", p.name, tr.Name, opt)
				}
				if opt.SampleBytes == 0 && opt.SampleBudget == 0 && opt.Mode != diff.ModeBytes {
					if tr.ChangedElems != nil && u.ChangedElems != nil {
						assert.Equal(t, *u.ChangedElems, *tr.ChangedElems, "%s %s", p.name, tr.Name)
					}
				}
			}
			t.Logf("%s %+v ok: %d tensors", p.name, opt.SampleBytes, len(loc.Tensors))
		}
		hb.Close()
		hf.Close()
		hub.Close()
	}
}

func onOff(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

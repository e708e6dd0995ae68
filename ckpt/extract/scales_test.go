package extract

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardKeepsCompanions: a scale companion of any scheme brought along
// by WithScales stays in its weight's shard, like a weight_scale_inv.
func TestShardKeepsCompanions(t *testing.T) {
	t.Parallel()
	mt := func(name string, dt numfmt.DType, shape ...int64) ckpt.MemTensor {
		n := int64(dt.Bits() / 8)
		for _, d := range shape {
			n *= d
		}
		return ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: dt, Shape: shape}, Data: make([]byte, n)}
	}
	for _, scale := range []ckpt.MemTensor{
		mt("m.weight_scale", numfmt.F32, 64, 1),    // per-channel, compressed-tensors
		mt("m.weight_scale_inv", numfmt.F32, 1, 1), // block FP8, 128x128
	} {
		t.Run(scale.Name, func(t *testing.T) {
			t.Parallel()
			src := writeSource(t, t.TempDir(), []ckpt.MemTensor{mt("a.weight", numfmt.BF16, 64, 64), mt("m.weight", numfmt.F8E4M3, 64, 64), scale}, nil)
			c := openCkpt(t, src)
			p, err := NewPlan(c, PlanOptions{Match: []string{"a.weight", "m.weight"}, WithScales: true, MaxShardSize: 4200})
			require.NoError(t, err)
			require.Len(t, p.Shards, 2)
			var names []string
			for _, it := range p.Shards[1].Items {
				names = append(names, it.Name)
			}
			assert.Equal(t, []string{"m.weight", scale.Name}, names)
		})
	}
}

package mapping_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVisionFolder(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "P300/tensor_cache_bfp8", mapping.VisionFolder("P300", false))
	assert.Equal(t, "P150x4/tensor_cache_instruct_bfp8", mapping.VisionFolder("P150x4", true))
}

// Every vision tensor of the 27B layout is ignored by both built-in
// profiles with a reason that names the folder the demo writes it to
// (tensor_cache_bfp8 beside the text folder), not "not part of the cache".
func TestVisionTowerIgnoredWithItsFolder(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "bf16", nil)
	c := open(t, dir)
	var vision int
	for _, tn := range c.Tensors {
		if strings.HasPrefix(tn.Name, mapping.VisionPrefix) {
			vision++
		}
	}
	require.Equal(t, 333, vision, "the 27B's vision tower: 27 blocks of 12 tensors, the merger's 6, patch and position embedding")
	for _, name := range mapping.BuiltinNames() {
		p, err := mapping.Builtin(name)
		require.NoError(t, err)
		pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
		require.NoError(t, err)
		n := 0
		for _, ig := range pl.Ignored {
			if !strings.HasPrefix(ig.Name, mapping.VisionPrefix) {
				continue
			}
			n++
			assert.Contains(t, ig.Reason, "<device>/tensor_cache_bfp8", ig.Name)
			assert.Contains(t, ig.Reason, "tensor_cache_instruct_bfp8", ig.Name)
			assert.NotContains(t, ig.Reason, "not part of", ig.Name)
		}
		assert.Equal(t, vision, n, name)
	}
}

package mapping_test

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, ckpttest.Write(dir, ckpttest.Small()))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	p, _ := mapping.Builtin(mapping.BuiltinName)
	for _, m := range []mapping.Mesh{{1, 2}, {1, 4}} {
		pl, err := mapping.Build(c, p, m)
		t.Log(m, err)
		if pl == nil {
			continue
		}
		t.Log(len(pl.Entries), len(pl.Ignored), pl.Unmapped)
		for _, pr := range pl.Problems {
			t.Log(pr.Message)
		}
		for _, e := range pl.Entries {
			t.Log(e.File, e.Shape, e.DeviceShape, len(e.Shards), e.Warnings)
		}
	}
}

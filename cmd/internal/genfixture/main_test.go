package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// small4 plans with both built-in profiles on a 1x4 mesh (the interop
// suite's P150x4 mesh test builds it) and on 1x2; synth.Small does not
// divide by 4.
func TestSmall4MapsOn1x4(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]synth.Options{"small4": synth.Small4(), "small": synth.Small()} {
		dir := filepath.Join(t.TempDir(), name)
		require.NoError(t, synth.Write(dir, o))
		c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
		require.NoError(t, err)
		for _, profile := range mapping.BuiltinNames() {
			p, err := mapping.Builtin(profile)
			require.NoError(t, err)
			for _, cols := range []int{2, 4} {
				_, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: cols}, nil, nil)
				if name == "small" && cols == 4 {
					require.Error(t, err, "%s %s 1x4", name, profile)
					continue
				}
				require.NoError(t, err, "%s %s 1x%d", name, profile, cols)
			}
		}
		require.NoError(t, c.Close())
	}
}

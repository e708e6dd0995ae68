package mapping_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every value op says whether its result is exactly reproducible: only
// neg_exp (a transcendental, which torch's float32 exp does not round
// correctly) is not, within 1 ulp of float32.
func TestOpTolerance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op  mapping.Op
		ulp uint64 // 0: exactly reproducible
	}{
		{mapping.OpRound, 0}, {mapping.OpAdd, 0}, {mapping.OpNegExp, 1}, {mapping.OpSelectCols, 0},
		{mapping.OpFuse, 0}, {mapping.OpTranspose, 0}, {mapping.OpReshape, 0}, {"no_such_op", 0},
	} {
		tol := tc.op.Tolerance()
		if tc.ulp == 0 {
			assert.Nil(t, tol, tc.op)
			continue
		}
		require.NotNil(t, tol, tc.op)
		assert.Equal(t, tc.op, tol.Op)
		assert.Equal(t, tc.ulp, tol.ULP)
		assert.Contains(t, tol.Why, "transcendental: within 1 ulp of float32")
	}
}

// The tolerance of a plan entry (its steps) and of its file by name alone
// (Profile.FileTolerance, what cache compare has) agree for every file of
// every built-in profile; main's neg_exp_A_fp32 files, and only they,
// are within 1 ulp.
func TestFileTolerance(t *testing.T) {
	t.Parallel()
	small := openSmall(t)
	mesh := mapping.Mesh{Rows: 1, Cols: 2}
	for _, name := range mapping.BuiltinNames() {
		p, err := mapping.Builtin(name)
		require.NoError(t, err)
		plan, err := mapping.BuildWith(small, p, mesh, nil, nil)
		require.NoError(t, err)
		inexact := 0
		for _, e := range plan.Entries {
			rel := strings.TrimPrefix(e.File, plan.CacheDir+"/")
			byName, target := p.FileTolerance(rel)
			assert.Equal(t, e.Tolerance(), byName, "%s: %s", name, rel)
			if strings.Contains(e.Target, "/neg_exp_A_fp32") {
				inexact++
				require.NotNil(t, byName, rel)
				assert.Equal(t, mapping.OpNegExp, byName.Op)
				assert.Equal(t, uint64(1), byName.ULP)
				assert.Equal(t, e.Target, target)
			} else {
				assert.Nil(t, byName, "%s: %s", name, rel)
			}
		}
		if name == mapping.ProfileMain {
			assert.Equal(t, 3, inexact, "one neg_exp_A_fp32 per GDN layer of the small fixture")
		} else {
			assert.Zero(t, inexact, name)
		}
	}
	p, err := mapping.Builtin(mapping.ProfileMain)
	require.NoError(t, err)
	for _, f := range []string{
		"layers.0/tp/neg_exp_A_fp32_dtype_BFLOAT16_layout_TILE.tensorbin", // another dtype: not the rule's file
		"layers.0/tp/neg_exp_A_fp32.tensorbin",
		"neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin",
	} {
		tol, _ := p.FileTolerance(f)
		assert.Nil(t, tol, f)
	}
	var nilProfile *mapping.Profile
	tol, _ := nilProfile.FileTolerance("layers.0/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin")
	assert.Nil(t, tol)
}

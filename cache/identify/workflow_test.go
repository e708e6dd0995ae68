package identify_test

import (
	"context"
	"os"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Run refuses a NaN that is no NaN style with a *ckpt.OptionError naming
// the field, before reading anything (the cache does not exist).
func TestRunIdentifyUsage(t *testing.T) {
	t.Parallel()
	_, err := identify.Run(context.Background(), identify.Options{Dir: "/nonexistent", NaN: "fancy"})
	require.ErrorIs(t, err, ckpt.ErrUsage)
	var oe *ckpt.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "NaN", oe.Field)
}

// Run refuses Rules with Profiles as a *ckpt.OptionError naming the field,
// before reading anything.
func TestRunIdentifyOptionError(t *testing.T) {
	t.Parallel()
	_, err := identify.Run(context.Background(), identify.Options{Dir: "/nonexistent", Rules: "p.json", Profiles: []string{mapping.ProfileMain}})
	require.ErrorIs(t, err, ckpt.ErrUsage)
	var oe *ckpt.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "Rules", oe.Field)
}

// Run takes the source from --source, else from the ckpt
// manifest, else identifies from names and headers alone; the three agree
// on the profile and switches of a cache built with proj_1d_decode=false.
// 16 candidates: the MTP line's three switches and main's three
// (proj_1d_decode, mlp_1d_decode, gdn_fused_decode_enabled), 2^3 each.
// (The folder, not the root: build.Run writes the text folder only, and
// the root of a model whose vision folder is missing is not exact:
// TestIdentifyModelRoot.)
func TestRunIdentifySources(t *testing.T) {
	t.Parallel()
	src, c, _ := fixture(t, synth.Small())
	out, plan := buildWith(t, c, mapping.ProfileMTP, mapping.Settings{mapping.VarProj1DDecode: false})
	folder := cache.FolderOf(out, plan.CacheDir).Path()
	check1 := func(res *identify.Result, source string, namesOnly bool) {
		t.Helper()
		require.True(t, res.Exact)
		assert.Equal(t, mapping.ProfileMTP, res.Best.Profile)
		assert.Equal(t, []string{"proj_1d_decode=false"}, res.Best.Overrides)
		assert.Equal(t, source, res.Source)
		assert.Equal(t, namesOnly, res.NamesOnly)
		assert.Equal(t, namesOnly, len(res.NotCompared) > 0)
		assert.Equal(t, identify.SummaryRecord{Dir: folder, Source: source, Exact: true, Profile: mapping.ProfileMTP,
			Overrides: []string{"proj_1d_decode=false"}, Candidates: 16}, res.SummaryRecord())
	}
	res, err := identify.Run(context.Background(), identify.Options{Dir: folder, Source: src, HeadersOnly: true})
	require.NoError(t, err)
	check1(res, src, false)
	res, err = identify.Run(context.Background(), identify.Options{Dir: folder})
	require.NoError(t, err)
	check1(res, c.Source, false)
	require.NoError(t, os.Remove(folder+"/"+cache.ManifestName))
	res, err = identify.Run(context.Background(), identify.Options{Dir: out})
	require.NoError(t, err)
	check1(res, "", true)
}

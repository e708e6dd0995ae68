package mapping_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMapRefusesRequests: a wrong request is a *ckpt.UsageError (exit 2
// in the CLI) with the message the command has always printed, found
// before the source is read (it does not exist here).
func TestMapRefusesRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  mapping.Options
		want string
	}{
		{"unknown profile", mapping.Options{Dump: true, Plan: mapping.PlanOptions{Profile: "nope"}}, `unknown profile "nope"`},
		{"bad device folder", mapping.Options{Dump: true, Plan: mapping.PlanOptions{MeshDevice: "../x"}}, `device folder "../x"`},
		{"unknown variable", mapping.Options{Source: "nope", Plan: mapping.PlanOptions{Set: mapping.Settings{"nope": true}}},
			`profile ` + mapping.BuiltinName + ` has no variable "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := mapping.Run(context.Background(), tc.req)
			require.Error(t, err)
			assert.Nil(t, res)
			assert.ErrorIs(t, err, ckpt.ErrUsage)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestMapOptionErrors: Options a caller other than the CLI gets wrong
// are a *ckpt.OptionError naming the field.
func TestMapOptionErrors(t *testing.T) {
	t.Parallel()
	_, err := mapping.Run(context.Background(), mapping.Options{Source: "nope", DeviceDRAM: -1})
	var oe *ckpt.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "DeviceDRAM", oe.Field)
	assert.ErrorIs(t, err, ckpt.ErrUsage)

	_, err = mapping.Run(context.Background(), mapping.Options{Source: "nope", Plan: mapping.PlanOptions{Set: mapping.Settings{"nope": true}}})
	var se *mapping.SettingError
	require.ErrorAs(t, err, &se, "a setting the profile refuses")
	assert.NotContains(t, err.Error(), "--set")
}

// TestRunResults: --list-profiles, --dump and the plan each give their
// document; the closing JSON Lines records summarise them.
func TestRunResults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	list, err := mapping.Run(ctx, mapping.Options{List: true})
	require.NoError(t, err)
	require.NotNil(t, list.Profiles)
	assert.Equal(t, mapping.BuiltinName, list.Profiles.Default)
	assert.Equal(t, mapping.ProfileListSummary{Profiles: len(mapping.BuiltinNames()), Default: mapping.BuiltinName}, list.Profiles.Summary())

	dump, err := mapping.Run(ctx, mapping.Options{Dump: true, Plan: mapping.PlanOptions{Profile: mapping.ProfileMain, Tag: "t"}})
	require.NoError(t, err)
	require.NotNil(t, dump.Profile)
	assert.Equal(t, mapping.ProfileMain, dump.Profile.Name)
	assert.Equal(t, "t", dump.Profile.Tag)

	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	res, err := mapping.Run(ctx, mapping.Options{Source: dir, Plan: mapping.PlanOptions{MeshDevice: "P300x2"}})
	require.NoError(t, err)
	require.NotNil(t, res.Doc)
	assert.Nil(t, res.Problems)
	assert.Equal(t, "P300x2/tensor_cache_bfp8_mesh1x2", res.Doc.CacheDir, "MESH_DEVICE names the device folder")
	assert.Equal(t, 82, res.Doc.Summary.Targets)
	assert.NotNil(t, res.Doc.Memory)
	rec := res.Doc.Record()
	assert.Equal(t, res.Doc.Summary, rec.SummaryRecord)
	assert.Equal(t, dir, rec.Source)

	mtp, err := ckpt.NewMatcher([]string{"mtp.**"}, nil)
	require.NoError(t, err)
	sel, err := mapping.Run(ctx, mapping.Options{Source: dir, Select: mtp})
	require.NoError(t, err)
	require.NotNil(t, sel.Doc.Whole)
	assert.Equal(t, 82, sel.Doc.Whole.Targets)
	assert.Less(t, sel.Doc.Summary.Targets, 82)

	against, err := mapping.Run(ctx, mapping.Options{Source: dir, AgainstCache: t.TempDir()})
	require.NoError(t, err)
	assert.NotNil(t, against.Plan)
	assert.Nil(t, against.Doc, "the caller holds the plan against the cache")

	nothing, err := ckpt.NewMatcher([]string{"nothing.matches"}, nil)
	require.NoError(t, err)
	_, err = mapping.Run(ctx, mapping.Options{Source: dir, Select: nothing})
	require.Error(t, err, "a selection that matches nothing")
}

// TestElementwise: the one interpreter of value ops.
func TestElementwise(t *testing.T) {
	t.Parallel()
	e, err := mapping.ValueOp{Op: mapping.OpRound, DType: "BF16"}.Elementwise()
	require.NoError(t, err)
	assert.Equal(t, mapping.Elem{Kind: mapping.ElemRound}, e)
	e, err = mapping.ValueOp{Op: mapping.OpAdd, Value: 1}.Elementwise()
	require.NoError(t, err)
	assert.Equal(t, mapping.Elem{Kind: mapping.ElemAdd, Add: 1}, e)
	e, err = mapping.ValueOp{Op: mapping.OpNegExp}.Elementwise()
	require.NoError(t, err)
	assert.Equal(t, mapping.Elem{Kind: mapping.ElemNegExp}, e)
	_, err = mapping.ValueOp{Op: mapping.OpRound, DType: "FP16"}.Elementwise()
	assert.EqualError(t, err, `round to "FP16" is not supported`)
	_, err = mapping.ValueOp{Op: mapping.OpTranspose}.Elementwise()
	assert.EqualError(t, err, `unknown value op "transpose"`)
	assert.False(t, errors.Is(err, ckpt.ErrUsage))

	// Apply: every kind on a few values, NaN included.
	nan := math.Float32frombits(0x7fc01234)
	cases := []struct {
		e    mapping.Elem
		in   []float32
		want []uint32
	}{
		{mapping.Elem{Kind: mapping.ElemRound}, []float32{1.00390625, 1.01171875, nan},
			[]uint32{0x3f800000, 0x3f820000, 0xffff0000}},
		{mapping.Elem{Kind: mapping.ElemAdd, Add: 1}, []float32{0.5, -1}, []uint32{0x3fc00000, 0}},
		// −exp(0) = −1, −exp(ln 2) rounds to −2 exactly, −exp(−Inf) = −0,
		// −exp(+Inf) = −Inf, a NaN keeps its payload with the sign flipped.
		{mapping.Elem{Kind: mapping.ElemNegExp}, []float32{0, float32(math.Ln2), float32(math.Inf(-1)), float32(math.Inf(1)), nan},
			[]uint32{0xbf800000, 0xc0000000, 0x80000000, 0xff800000, 0xffc01234}},
	}
	for _, c := range cases {
		v := append([]float32(nil), c.in...)
		c.e.Apply(v, numfmt.VectorNaN)
		got := make([]uint32, len(v))
		for i, x := range v {
			got[i] = math.Float32bits(x)
		}
		assert.Equal(t, c.want, got, "%+v", c.e)
	}
}

// TestMapKeepsSourceWarnings: the source's warnings come with the result,
// also when the selection then fails, so that the command can show them.
func TestMapKeepsSourceWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	b, err := os.ReadFile(filepath.Join(dir, "model-00001-of-00004.safetensors"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.SingleFile), b, 0o644))
	res, err := mapping.Run(context.Background(), mapping.Options{Source: dir})
	require.NoError(t, err)
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0], "holds both")
	nothing, err := ckpt.NewMatcher([]string{"nothing.matches"}, nil)
	require.NoError(t, err)
	res, err = mapping.Run(context.Background(), mapping.Options{Source: dir, Select: nothing})
	require.Error(t, err)
	require.NotNil(t, res)
	assert.Len(t, res.Warnings, 1)
}

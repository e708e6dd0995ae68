package ckpt_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/require"
)

func TestCheckSelection(t *testing.T) {
	t.Parallel()
	names := []string{
		"lm_head.weight",
		"model.language_model.embed_tokens.weight",
		"model.language_model.layers.0.mlp.up_proj.weight",
		"model.visual.blocks.0.attn.qkv.weight",
		"mtp.fc.weight",
		"mtp.layers.0.mlp.up_proj.weight",
	}
	tests := []struct {
		name           string
		match, exclude []string
		empty          bool
		suggest        []string
		field, glob    string // the one glob that matches no name
	}{
		{name: "no globs", empty: false},
		{name: "selects", match: []string{"mtp.**"}},
		{name: "star inside a segment", match: []string{"mtp.*"}, empty: true, suggest: []string{"mtp.**"}},
		{name: "missing middle segment", match: []string{"model.layers.**"}, empty: true, suggest: []string{"model.**.layers.**"}},
		{name: "plain prefix", match: []string{"mtp"}, empty: true, suggest: []string{"mtp.**"}},
		{name: "nothing close", match: []string{"nope"}, empty: true},
		{name: "exclude everything", exclude: []string{"**"}, empty: true},
		// every glob must match some name, not only the selection as a whole
		{name: "one of two globs selects nothing", match: []string{"nope", "lm_head.*"}, empty: true, field: "Match", glob: "nope"},
		{name: "a mistyped second match", match: []string{"lm_head.*", "mtp.*"}, empty: true, suggest: []string{"mtp.**"}, field: "Match", glob: "mtp.*"},
		{name: "exclude that matches a name", match: []string{"**"}, exclude: []string{"model.visual.**"}},
		{name: "exclude without a leading segment", match: []string{"**"}, exclude: []string{"visual.**"}, empty: true, suggest: []string{"model.visual.**"}, field: "Exclude", glob: "visual.**"},
		{name: "exclude alone matching nothing", exclude: []string{"mtp.*"}, empty: true, suggest: []string{"mtp.**"}, field: "Exclude", glob: "mtp.*"},
		{name: "exclude matching only unselected names", match: []string{"mtp.**"}, exclude: []string{"lm_head.weight"}},
		{name: "exclude under several leading segments", match: []string{"**"}, exclude: []string{"layers.**"}, empty: true,
			suggest: []string{"model.language_model.layers.**", "mtp.layers.**"}, field: "Exclude", glob: "layers.**"},
		{name: "match without a leading segment", match: []string{"language_model.**"}, empty: true, suggest: []string{"model.language_model.**"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ckpt.CheckSelection(tc.match, tc.exclude, "SRC", names)
			if !tc.empty {
				require.NoError(t, err)
				return
			}
			var e *ckpt.EmptySelectionError
			require.ErrorAs(t, err, &e)
			require.ErrorIs(t, err, ckpt.ErrEmptySelection)
			require.Equal(t, tc.suggest, e.Suggest)
			require.Equal(t, tc.field, e.Field)
			require.Equal(t, tc.glob, e.Glob)
			if tc.glob != "" {
				require.Contains(t, err.Error(), "no tensor matches "+tc.field+" "+ckpt.Quote(tc.glob)+" in SRC (6 tensors), so it")
			}
			require.Equal(t, []string{"lm_head.**", "model.language_model.**", "model.visual.**", "mtp.**"}, e.Prefixes)
			require.NotContains(t, err.Error(), "--", "no flag names in the library")
			require.Contains(t, err.Error(), "`**` crosses segments")
			if len(tc.suggest) > 0 {
				require.Contains(t, err.Error(), "did you mean '"+strings.Join(tc.suggest, "' or '")+"'?")
			} else {
				require.NotContains(t, err.Error(), "did you mean")
			}
		})
	}
	require.NoError(t, ckpt.CheckSelection([]string{"x"}, nil, "empty"), "no names: nothing to judge")
	require.Error(t, ckpt.CheckSelection([]string{"[x"}, nil, "SRC", names), "invalid glob")
}

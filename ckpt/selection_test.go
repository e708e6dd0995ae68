package ckpt_test

import (
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
	}{
		{name: "no globs", empty: false},
		{name: "selects", match: []string{"mtp.**"}},
		{name: "star inside a segment", match: []string{"mtp.*"}, empty: true, suggest: []string{"mtp.**"}},
		{name: "missing middle segment", match: []string{"model.layers.**"}, empty: true, suggest: []string{"model.**.layers.**"}},
		{name: "plain prefix", match: []string{"mtp"}, empty: true, suggest: []string{"mtp.**"}},
		{name: "nothing close", match: []string{"nope"}, empty: true},
		{name: "exclude everything", exclude: []string{"**"}, empty: true},
		{name: "one of two globs selects", match: []string{"nope", "lm_head.*"}},
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
			require.Equal(t, []string{"lm_head.**", "model.language_model.**", "model.visual.**", "mtp.**"}, e.Prefixes)
			require.Contains(t, err.Error(), "no tensor matches --")
			require.Contains(t, err.Error(), "`**` crosses segments")
			for _, s := range tc.suggest {
				require.Contains(t, err.Error(), "did you mean '"+s+"'?")
			}
		})
	}
	require.NoError(t, ckpt.CheckSelection([]string{"x"}, nil, "empty"), "no names: nothing to judge")
	require.Error(t, ckpt.CheckSelection([]string{"[x"}, nil, "SRC", names), "invalid glob")
}

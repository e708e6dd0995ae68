package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmptySelectionExit2: every command that takes --match/--exclude
// exits 2 when they select nothing, with the `**` hint, instead of
// passing on an empty comparison.
func TestEmptySelectionExit2(t *testing.T) {
	t.Parallel()
	_, base, ft := small(t)
	contract := filepath.Join(t.TempDir(), "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)
	out := filepath.Join(t.TempDir(), "x.safetensors")
	for _, tc := range []struct {
		name string
		args []string
		hint string
	}{
		{"inspect", []string{"inspect", base, "--match", "mtp.*"}, "did you mean 'mtp.**'?"},
		{"diff", []string{"diff", base, ft, "--match", "model.layers.**"}, "did you mean 'model.**.layers.**'?"},
		{"diff mtp.*", []string{"diff", base, ft, "--match", "mtp.*", "--format", "json"}, "did you mean 'mtp.**'?"},
		{"diff exclude all", []string{"diff", base, ft, "--exclude", "**"}, "no tensor matches --exclude"},
		{"verify --against", []string{"verify", ft, "--against", contract, "--match", "nope"}, "model.language_model.**"},
		{"extract", []string{"extract", base, "--match", "mtp.*", "--out", out}, "did you mean 'mtp.**'?"},
		{"map", []string{"map", base, "--match", "mtp.*"}, "did you mean 'mtp.**'?"},
		// an --exclude that matches no tensor name is an error too, on every
		// command, even when the selection is not empty
		{"inspect exclude", []string{"inspect", base, "--exclude", "visual.**"}, `--exclude "visual.**" in ` + base + ` (124 tensors), so it excludes nothing: did you mean 'model.visual.**'?`},
		{"diff exclude", []string{"diff", base, ft, "--match", "**", "--exclude", "mtp.*", "--format", "json"}, `--exclude "mtp.*" in ` + base + " or " + ft + ` (124 tensors), so it excludes nothing: did you mean 'mtp.**'?`},
		{"verify --against exclude", []string{"verify", ft, "--against", contract, "--exclude", "visual.**"}, "so it excludes nothing: did you mean 'model.visual.**'?"},
		{"map exclude", []string{"map", base, "--match", "mtp.**", "--exclude", "mtp.layers.*"}, "so it excludes nothing: did you mean 'mtp.layers.**'?"},
		{"extract exclude", []string{"extract", base, "--match", "**", "--exclude", "visual.**", "--out", out}, "so it excludes nothing: did you mean 'model.visual.**'?"},
		{"extract second match", []string{"extract", base, "--match", "mtp.**", "--match", "lm_head", "--out", out}, `--match "lm_head" in ` + base + ` (124 tensors), so it selects nothing: did you mean 'lm_head.**'?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runApp(t, tc.args...)
			require.Equal(t, 2, code, stdout+stderr)
			require.Contains(t, stderr, "no tensor matches")
			require.Contains(t, stderr, tc.hint)
			require.Contains(t, stderr, "`**` crosses segments")
		})
	}
	_, err := os.Stat(out)
	require.ErrorIs(t, err, os.ErrNotExist)
}

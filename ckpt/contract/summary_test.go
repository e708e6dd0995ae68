package contract_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/stretchr/testify/require"
)

func compare(t *testing.T, want, cur *contract.Contract, m *ckpt.Matcher) *contract.Comparison {
	t.Helper()
	cmp, err := contract.Compare(want, cur, contract.CompareOptions{Match: m})
	require.NoError(t, err)
	return cmp
}

func contractOf(hash string, notConvert ...string) *contract.Contract {
	return &contract.Contract{Version: contract.Version, Source: "x",
		FP8: &contract.Scheme{Method: "fp8", ModulesToNotConvert: notConvert},
		Tensors: []contract.Entry{
			{Name: "model.language_model.layers.0.mlp.up_proj.weight", DType: "BF16", Shape: []int64{4, 4}, XXH3: hash},
			{Name: "model.language_model.layers.0.mlp.down_proj.weight", DType: "BF16", Shape: []int64{4, 4}, XXH3: "1"},
			{Name: "mtp.fc.weight", DType: "BF16", Shape: []int64{4, 4}, XXH3: "2"},
		}}
}

// TestKeySetOutside: a change of content only keeps the key set
// identical (and says what changed); an added or removed key differs.
func TestKeySetOutside(t *testing.T) {
	t.Parallel()
	cmp := compare(t, contractOf("a"), contractOf("b"), nil)
	require.Equal(t, "key set outside mtp.**: identical, 2 keys (1 of them changed dtype, shape or content)", cmp.KeySetOutside(ckpt.GroupMTP))
	cmp = compare(t, contractOf("a"), contractOf("a"), nil)
	require.Equal(t, "key set outside mtp.**: identical, 2 keys", cmp.KeySetOutside(ckpt.GroupMTP))
	cur := contractOf("a")
	cur.Tensors = cur.Tensors[1:]
	cmp = compare(t, contractOf("a"), cur, nil)
	require.Equal(t, "key set outside mtp.**: differs: 0 added, 1 removed (see the groups above)", cmp.KeySetOutside(ckpt.GroupMTP))
}

// TestNotConvertCountUnderMatch: the count covers the entries --match
// selects.
func TestNotConvertCountUnderMatch(t *testing.T) {
	t.Parallel()
	nc := []string{"lm_head", "mtp.fc", "model.visual.blocks.0.attn"}
	m, err := ckpt.NewMatcher([]string{"mtp.**"}, nil)
	require.NoError(t, err)
	cmp := compare(t, contractOf("a", nc...), contractOf("a", nc...), m)
	var msg string
	for _, c := range cmp.Checks {
		if c.ID == "contract.fp8_not_convert" {
			msg = c.Message
		}
	}
	require.Equal(t, "modules_to_not_convert identical (1 of 3 entries selected by Options.Match/Options.Exclude)", msg)
	cmp = compare(t, contractOf("a", nc...), contractOf("a", nc...), nil)
	for _, c := range cmp.Checks {
		if c.ID == "contract.fp8_not_convert" {
			require.Equal(t, "modules_to_not_convert identical (3 entries)", c.Message)
		}
	}
}

// TestReadNotAContract names what a wrong file is.
func TestReadNotAContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, data, says string }{
		{"config.json", `{"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5"}`, "config.json is not a ckpt contract (it looks like a config.json)"},
		{"model.safetensors.index.json", `{"metadata": {}, "weight_map": {}}`, "is not a ckpt contract (it looks like a model.safetensors.index.json"},
		{"lfs.json", "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n", "Git LFS pointer"},
		{"m.safetensors", "\x02\x00\x00\x00\x00\x00\x00\x00{}", "it is a safetensors file"},
		{"other.json", `{"a": 1}`, "a JSON object without contract_version"},
		{"list.json", `[1, 2]`, "is not a ckpt contract (JSON text)"},
	} {
		p := filepath.Join(dir, tc.name)
		require.NoError(t, os.WriteFile(p, []byte(tc.data), 0o644))
		f, err := os.Open(p)
		require.NoError(t, err)
		_, err = contract.Read(f, p, nil)
		f.Close()
		var nc *contract.NotContractError
		require.ErrorAs(t, err, &nc, tc.name)
		require.Contains(t, err.Error(), tc.says, tc.name)
		require.False(t, strings.Contains(err.Error(), "contract_version is 0"), tc.name)
	}
}

package contract_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const baseConfig = `{
  "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
  "transformers_version": "4.57.0", "_name_or_path": "/train/base",
  "text_config": {"hidden_size": 128, "rms_norm_eps": 1e-6, "hidden_act": "silu", "dtype": "bfloat16",
    "layer_types": ["linear_attention", "full_attention"],
    "rope_parameters": {"rope_theta": 10000000, "rope_type": "default"}},
  "vision_config": {"depth": 1, "torch_dtype": "bfloat16"},
  "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]},
  "temperature": 0.7
}`

// configContract is a contract holding only the config cfg (JSON).
func configContract(t *testing.T, cfg string, edit func(m map[string]any)) *contract.Contract {
	t.Helper()
	c, err := ckpt.ParseConfig([]byte(cfg), "config.json")
	require.NoError(t, err)
	if edit != nil {
		edit(c.Raw)
	}
	return &contract.Contract{Version: contract.Version, Source: "x", Config: contract.ConfigOf(c), Tensors: []contract.Entry{}}
}

func text(m map[string]any) map[string]any { return m["text_config"].(map[string]any) }

func configChecks(cmp *contract.Comparison) []ckpt.Finding {
	var out []ckpt.Finding
	for _, c := range cmp.Checks {
		if c.ID == "contract.config" {
			out = append(out, c)
		}
	}
	return out
}

// TestConfigOf: the contract keeps every config key but the bookkeeping
// ones (at any depth) and the not-convert list (held by the FP8 scheme).
func TestConfigOf(t *testing.T) {
	t.Parallel()
	k := configContract(t, baseConfig, nil)
	assert.Equal(t, []string{
		"architectures", "model_type",
		"quantization_config.quant_method", "quantization_config.weight_block_size",
		"text_config.hidden_act", "text_config.hidden_size", "text_config.layer_types", "text_config.rms_norm_eps",
		"text_config.rope_parameters.rope_theta", "text_config.rope_parameters.rope_type",
		"vision_config.depth",
	}, ckpt.ConfigKeys(k.Config))
	assert.Equal(t, map[string]any{}, contract.ConfigOf(nil))
}

// TestCompareConfig: any recorded key that differs fails, naming its path
// and both values; bookkeeping keys do not count; Options.AllowConfig accepts a
// path or anything under it; the pass line counts the keys compared.
func TestCompareConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		edit    func(m map[string]any)
		allow   []string
		status  []ckpt.Status
		message []string // contained by the contract.config findings, in order
		changes int
		keys    int // keys compared; 0: the 66 of baseConfig as transformers builds it
	}{
		{name: "identical", status: []ckpt.Status{ckpt.Pass}, message: []string{"config identical (66 keys compared)"}},
		{name: "bookkeeping only", edit: func(m map[string]any) {
			m["transformers_version"] = "4.58.0"
			m["temperature"] = json.Number("1.0")
			text(m)["dtype"] = "float32"
			m["quantization_config"].(map[string]any)["modules_to_not_convert"] = []any{"lm_head", "mtp.fc"}
		}, status: []ckpt.Status{ckpt.Pass}, message: []string{"config identical (66 keys compared)"}},
		{name: "defaults made explicit, rope keys moved", edit: func(m map[string]any) {
			text(m)["attention_dropout"] = json.Number("0.0")
			text(m)["pad_token_id"] = nil
			text(m)["initializer_range"] = json.Number("0.02")
			text(m)["partial_rotary_factor"] = json.Number("0.25") // the class's default, moved into rope_parameters
			m["vision_config"].(map[string]any)["rope_parameters"] = map[string]any{"rope_theta": json.Number("10000.0"), "rope_type": "axial"}
			m["image_token_id"] = json.Number("248056")
		}, status: []ckpt.Status{ckpt.Pass}, message: []string{"config identical (66 keys compared)"}},
		{name: "a default changed", edit: func(m map[string]any) { text(m)["attention_dropout"] = json.Number("0.1") },
			status:  []ckpt.Status{ckpt.Fail},
			message: []string{"config text_config.attention_dropout: 0.0 in the contract, 0.1 now"}, changes: 1},
		{name: "an integer given as a float", edit: func(m map[string]any) { text(m)["hidden_size"] = json.Number("128.0") },
			status:  []ckpt.Status{ckpt.Fail},
			message: []string{"config text_config.hidden_size: 128 in the contract, 128.0 now (an integer given as a float: transformers' strict config refuses it, and Python's range() refuses a float)"},
			changes: 1},
		{name: "rms_norm_eps", edit: func(m map[string]any) { text(m)["rms_norm_eps"] = json.Number("1e-5") },
			status:  []ckpt.Status{ckpt.Fail},
			message: []string{"config text_config.rms_norm_eps: 1e-6 in the contract, 1e-5 now"}, changes: 1},
		{name: "hidden_act and rope_theta", edit: func(m map[string]any) {
			text(m)["hidden_act"] = "gelu"
			text(m)["rope_parameters"].(map[string]any)["rope_theta"] = json.Number("1000000")
		}, status: []ckpt.Status{ckpt.Fail, ckpt.Fail}, message: []string{
			`config text_config.hidden_act: "silu" in the contract, "gelu" now`,
			"config text_config.rope_parameters.rope_theta: 10000000 in the contract, 1000000 now",
		}, changes: 2},
		{name: "keys removed and added, as transformers reads them", edit: func(m map[string]any) {
			delete(m["vision_config"].(map[string]any), "depth")                 // Qwen3_5VisionConfig's default: 27
			text(m)["rope_scaling"] = map[string]any{"factor": json.Number("4")} // replaces rope_parameters
			text(m)["mtp_num_hidden_layers"] = json.Number("1")                  // no default: an extra key
		}, status: []ckpt.Status{ckpt.Fail, ckpt.Fail, ckpt.Fail, ckpt.Fail}, message: []string{
			"config text_config.mtp_num_hidden_layers: absent in the contract, 1 now",
			"config text_config.rope_parameters.factor: absent in the contract, 4 now",
			"config text_config.rope_parameters.rope_theta: 10000000 in the contract, 10000.0 now",
			"config vision_config.depth: 1 in the contract, 27 now",
		}, changes: 4, keys: 68},
		{name: "array element", edit: func(m map[string]any) { text(m)["layer_types"] = []any{"full_attention", "full_attention"} },
			status:  []ckpt.Status{ckpt.Fail},
			message: []string{`config text_config.layer_types[0]: "linear_attention" in the contract, "full_attention" now`}, changes: 1},
		{name: "quantization parameter", edit: func(m map[string]any) {
			m["quantization_config"].(map[string]any)["weight_block_size"] = []any{json.Number("64"), json.Number("128")}
		}, status: []ckpt.Status{ckpt.Fail}, message: []string{"config quantization_config.weight_block_size[0]: 128 in the contract, 64 now"}, changes: 1},
		{name: "allowed exactly", edit: func(m map[string]any) { text(m)["rms_norm_eps"] = json.Number("1e-5") },
			allow:  []string{"text_config.rms_norm_eps"},
			status: []ckpt.Status{ckpt.Pass, ckpt.Pass}, message: []string{
				"config text_config.rms_norm_eps: 1e-6 in the contract, 1e-5 now (allowed by Options.AllowConfig text_config.rms_norm_eps)",
				"config identical but for 1 change allowed by Options.AllowConfig (66 keys compared)",
			}, changes: 1},
		{name: "allowed by a parent, another fails", edit: func(m map[string]any) {
			text(m)["rope_parameters"].(map[string]any)["rope_theta"] = json.Number("1000000")
			text(m)["layer_types"] = []any{"full_attention", "full_attention"}
			text(m)["hidden_act"] = "gelu"
		}, allow: []string{"text_config.rope_parameters", "text_config.layer_types"},
			status: []ckpt.Status{ckpt.Fail, ckpt.Pass, ckpt.Pass}, message: []string{
				"config text_config.hidden_act",
				"(allowed by Options.AllowConfig text_config.layer_types)",
				"(allowed by Options.AllowConfig text_config.rope_parameters)",
			}, changes: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := configContract(t, baseConfig, nil)
			cur := configContract(t, baseConfig, tc.edit)
			cmp, err := contract.Compare(want, cur, contract.CompareOptions{AllowConfig: tc.allow})
			require.NoError(t, err)
			cs := configChecks(cmp)
			require.Len(t, cs, len(tc.status), "%v", cs)
			for i, c := range cs {
				assert.Equal(t, tc.status[i], c.Status, c.Message)
				assert.Contains(t, c.Message, tc.message[i])
			}
			assert.Len(t, cmp.ConfigChanges, tc.changes)
			if tc.keys == 0 {
				tc.keys = 66
			}
			assert.Equal(t, tc.keys, cmp.ConfigKeys)
			assert.Equal(t, len(tc.status) == 0 || tc.status[0] != ckpt.Fail, cmp.Same())
			for _, d := range cmp.ConfigChanges {
				assert.Equal(t, d.AllowedBy != "", len(tc.allow) > 0 && !strings.HasSuffix(d.Path, "hidden_act"), d.Path)
			}
		})
	}
}

// TestCompareConfigJSON: the comparison's JSON lists each difference with
// its path and both values.
func TestCompareConfigJSON(t *testing.T) {
	t.Parallel()
	want := configContract(t, baseConfig, nil)
	cur := configContract(t, baseConfig, func(m map[string]any) { text(m)["rms_norm_eps"] = json.Number("1e-5") })
	cmp, err := contract.Compare(want, cur, contract.CompareOptions{})
	require.NoError(t, err)
	raw, err := json.Marshal(cmp)
	require.NoError(t, err)
	var doc struct {
		Keys    int               `json:"config_keys_compared"`
		Changes []json.RawMessage `json:"config_changes"`
		NotComp []string          `json:"config_not_compared"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Equal(t, 66, doc.Keys) // as transformers builds the model (ckpt.ConfigAsBuilt)
	require.Len(t, doc.Changes, 1)
	assert.JSONEq(t, `{"path": "text_config.rms_norm_eps", "base": 1e-6, "ft": 1e-5, "change": "changed"}`, string(doc.Changes[0]))
	assert.Equal(t, []string{}, doc.NotComp)
}

// TestAllowConfigUnknown: an Options.AllowConfig path that names no key is an
// error with the full paths that end with it.
func TestAllowConfigUnknown(t *testing.T) {
	t.Parallel()
	want := configContract(t, baseConfig, nil)
	for _, tc := range []struct {
		allow, says string
		book        bool
		suggest     []string
	}{
		{"rms_norm_eps", "did you mean 'text_config.rms_norm_eps'?", false, []string{"text_config.rms_norm_eps"}},
		// the keys as transformers builds them: Qwen3_5VisionConfig has rope_parameters too
		{"rope_theta", "did you mean 'text_config.rope_parameters.rope_theta' or 'vision_config.rope_parameters.rope_theta'?", false,
			[]string{"text_config.rope_parameters.rope_theta", "vision_config.rope_parameters.rope_theta"}},
		{"transformers_version", "a bookkeeping key, which contracts do not record", true, nil},
		{"text_config.nope", `Options.AllowConfig "text_config.nope" names no config key of the contract or of the checkpoint (give the full dotted path, as ` + "`ckpt diff`" + ` lists it)`, false, nil},
	} {
		_, err := contract.Compare(want, want, contract.CompareOptions{AllowConfig: []string{tc.allow}})
		var e *contract.UnknownConfigPathError
		require.ErrorAs(t, err, &e, tc.allow)
		assert.Contains(t, err.Error(), tc.says)
		assert.Equal(t, tc.book, e.Bookkeeping)
		assert.Equal(t, tc.suggest, e.Suggest)
		require.Equal(t, err, contract.CheckAllowConfig(want, want.Config, []string{tc.allow}))
	}
	for _, ok := range []string{"text_config", "text_config.layer_types[1]", "quantization_config.weight_block_size"} {
		require.NoError(t, contract.CheckAllowConfig(want, want.Config, []string{ok}), ok)
	}
}

// TestVersion1: a contract written by the previous version (a
// list of config fields) still loads; only its fields are compared, and a
// warning names the keys of the config now that it did not record.
func TestVersion1(t *testing.T) {
	t.Parallel()
	v1 := `{"schema_version": 1, "contract_version": 1, "source": "old",
	  "config": [{"path": "model_type", "value": "qwen3_5"}, {"path": "text_config.hidden_size", "value": 128},
	    {"path": "vision_config.depth", "value": 1}],
	  "fp8": null, "tensors": []}`
	want, err := contract.Read(strings.NewReader(v1), "old.json", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, want.Version)
	assert.Equal(t, []string{"model_type", "text_config.hidden_size", "vision_config.depth"}, want.ConfigRecorded)
	assert.Equal(t, []string{"model_type", "text_config.hidden_size", "vision_config.depth"}, ckpt.ConfigKeys(want.Config))

	// rms_norm_eps changed, but the old contract did not record it
	cur := configContract(t, baseConfig, func(m map[string]any) { text(m)["rms_norm_eps"] = json.Number("1e-5") })
	cmp, err := contract.Compare(want, cur, contract.CompareOptions{})
	require.NoError(t, err)
	cs := configChecks(cmp)
	require.Len(t, cs, 2)
	assert.Equal(t, ckpt.Finding{ID: "contract.config", Status: ckpt.Pass, Message: "config identical (3 keys compared)"}, cs[0])
	assert.Equal(t, ckpt.Warn, cs[1].Status)
	assert.Contains(t, cs[1].Message, "the contract (contract_version 1) records 3 config keys, not the full config: 8 keys of the config now not compared: architectures, quantization_config.quant_method")
	assert.Contains(t, cs[1].Message, "(write the contract again with this version of ckpt)")
	assert.Contains(t, cmp.ConfigNotCompared, "text_config.rms_norm_eps")
	assert.Len(t, cmp.ConfigNotCompared, 8)
	assert.True(t, cmp.Same())

	// a recorded field that changed still fails
	cur = configContract(t, baseConfig, func(m map[string]any) { text(m)["hidden_size"] = json.Number("256") })
	cmp, err = contract.Compare(want, cur, contract.CompareOptions{})
	require.NoError(t, err)
	assert.Equal(t, "config text_config.hidden_size: 128 in the contract, 256 now", configChecks(cmp)[0].Message)
	assert.False(t, cmp.Same())

	_, err = contract.Read(strings.NewReader(`{"contract_version": 3, "tensors": []}`), "new.json", nil)
	require.ErrorContains(t, err, "contract_version is 3, this tool reads 1 to 2")
}

// TestContractRoundTrip: a written contract reads back with the same
// config, numbers as written.
func TestContractRoundTrip(t *testing.T) {
	t.Parallel()
	k := configContract(t, baseConfig, nil)
	var b bytes.Buffer
	require.NoError(t, contract.Write(&b, k))
	assert.Contains(t, b.String(), `"rms_norm_eps": 1e-6`)
	got, err := contract.Read(&b, "k.json", nil)
	require.NoError(t, err)
	assert.Nil(t, got.ConfigRecorded)
	assert.Equal(t, k.Config, got.Config)
	cmp, err := contract.Compare(got, k, contract.CompareOptions{})
	require.NoError(t, err)
	assert.Empty(t, cmp.ConfigChanges)
}

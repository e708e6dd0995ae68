package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configPair is a base with rope parameters, its contract, and a
// fine-tune with the same tensors whose config.json changes rms_norm_eps,
// hidden_act and rope_theta (and transformers_version, bookkeeping).
func configPair(t *testing.T) (contract, ft string) {
	t.Helper()
	src, _ := fixturePair(t)
	base := copyDir(t, src)
	editJSON(t, filepath.Join(base, "config.json"), func(m map[string]any) {
		m["transformers_version"] = "4.57.0"
		m["text_config"].(map[string]any)["rope_parameters"] = map[string]any{"rope_theta": 10000000, "rope_type": "default"}
	})
	contract = filepath.Join(t.TempDir(), "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)
	ft = copyDir(t, base)
	editJSON(t, filepath.Join(ft, "config.json"), func(m map[string]any) {
		m["transformers_version"] = "4.58.0"
		tc := m["text_config"].(map[string]any)
		tc["rms_norm_eps"] = 1e-5
		tc["hidden_act"] = "gelu_pytorch_tanh"
		tc["rope_parameters"].(map[string]any)["rope_theta"] = 1000000
	})
	return contract, ft
}

// TestVerifyAgainstConfigChange: a fine-tune whose config changes keys
// beyond the old fixed list fails verify --against (exit 1), each finding
// naming the key path and both values, in text and in JSON.
func TestVerifyAgainstConfigChange(t *testing.T) {
	t.Parallel()
	contract, ft := configPair(t)
	wantFails := []string{
		`config text_config.hidden_act: "silu" in the contract, "gelu_pytorch_tanh" now`,
		"config text_config.rms_norm_eps: 0.000001 in the contract, 0.00001 now",
		"config text_config.rope_parameters.rope_theta: 10000000 in the contract, 1000000 now",
	}

	code, stdout, stderr := runApp(t, "verify", ft, "--against", contract, "--format", "text")
	require.Equal(t, 1, code, stderr)
	for _, m := range wantFails {
		assert.Regexp(t, `(?m)^fail +contract\.config +`+regexp.QuoteMeta(m)+`$`, stdout)
		assert.Contains(t, stdout, "  contract.config: "+m+"\n", "the against section repeats it")
	}
	assert.NotContains(t, stdout, "transformers_version")
	assert.Contains(t, stdout, ": FAILED: 3 failed")

	code, res, stderr := verifyJSON(t, "verify", ft, "--against", contract)
	require.Equal(t, 1, code, stderr)
	var fails []string
	for _, c := range res.Checks {
		if c.ID == "contract.config" {
			require.Equal(t, ckpt.Fail, c.Status, c.Message)
			fails = append(fails, c.Message)
		}
	}
	assert.Equal(t, wantFails, fails)
	require.NotNil(t, res.Against)
	got := map[string][2]any{}
	for _, d := range res.Against.ConfigChanges {
		assert.Equal(t, ckpt.ConfigChanged, d.Change)
		assert.Empty(t, d.AllowedBy)
		got[d.Path] = [2]any{d.Base, d.FT}
	}
	assert.Equal(t, map[string][2]any{
		"text_config.hidden_act":                 {"silu", "gelu_pytorch_tanh"},
		"text_config.rms_norm_eps":               {1e-6, 1e-5},
		"text_config.rope_parameters.rope_theta": {float64(10000000), float64(1000000)},
	}, got)
	assert.Equal(t, 72, res.Against.ConfigKeys, "the keys of the fixture's config as transformers builds the model from it (ckpt.ConfigAsBuilt)")
}

// TestVerifyAllowConfig: --allow-config accepts an intended change (a key
// or an object above it) and says so; the other changes still fail; a path
// that names no key exits 2 with the full path it probably meant.
func TestVerifyAllowConfig(t *testing.T) {
	t.Parallel()
	contract, ft := configPair(t)
	allow := []string{"--allow-config", "text_config.rms_norm_eps", "--allow-config", "text_config.hidden_act", "--allow-config", "text_config.rope_parameters"}

	code, stdout, stderr := runApp(t, append([]string{"verify", ft, "--against", contract, "--format", "text"}, allow...)...)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `(?m)^pass +contract\.config +config text_config\.rms_norm_eps: 0\.000001 in the contract, 0\.00001 now \(allowed by --allow-config text_config\.rms_norm_eps\)$`, stdout)
	assert.Contains(t, stdout, "config text_config.rope_parameters.rope_theta: 10000000 in the contract, 1000000 now (allowed by --allow-config text_config.rope_parameters)")
	assert.Regexp(t, `(?m)^pass +contract\.config +config identical but for 3 changes allowed by --allow-config \(72 keys compared\)$`, stdout)

	code, res, stderr := verifyJSON(t, append([]string{"verify", ft, "--against", contract}, allow[:4]...)...)
	require.Equal(t, 1, code, stderr)
	var failed []string
	for _, c := range res.Checks {
		if c.ID == "contract.config" && c.Status == ckpt.Fail {
			failed = append(failed, c.Message)
		}
	}
	assert.Equal(t, []string{"config text_config.rope_parameters.rope_theta: 10000000 in the contract, 1000000 now"}, failed)
	allowedBy := map[string]string{}
	for _, d := range res.Against.ConfigChanges {
		allowedBy[d.Path] = d.AllowedBy
	}
	assert.Equal(t, map[string]string{"text_config.hidden_act": "text_config.hidden_act", "text_config.rms_norm_eps": "text_config.rms_norm_eps",
		"text_config.rope_parameters.rope_theta": ""}, allowedBy)

	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"verify", ft, "--against", contract, "--allow-config", "rms_norm_eps"},
			`--allow-config "rms_norm_eps" names no config key of the contract or of the checkpoint: did you mean 'text_config.rms_norm_eps'?`},
		{[]string{"verify", ft, "--against", contract, "--allow-config", "transformers_version"}, "a bookkeeping key, which contracts do not record"},
		// ckpt diff lists this path among config differences; the message
		// must not send the user back to it.
		{[]string{"verify", ft, "--against", contract, "--allow-config", "quantization_config.modules_to_not_convert"},
			`--allow-config "quantization_config.modules_to_not_convert" names no config key of the contract or of the checkpoint: the contract records it with the FP8 scheme, compared by contract.fp8_not_convert`},
		{[]string{"verify", ft, "--allow-config", "text_config.rms_norm_eps"}, "--allow-config accepts config changes against a contract; give --against FILE"},
	} {
		code, stdout, stderr := runApp(t, tc.args...)
		assert.Equal(t, 2, code, stdout+stderr)
		assert.Contains(t, stderr, tc.says)
		assert.Empty(t, stdout)
	}
}

// TestVerifyAgainstContractVersion1: a contract written by the previous
// version (contract_version 1, a list of config fields) still loads; its
// fields are compared, and a warning says which keys of the config now it
// could not compare.
func TestVerifyAgainstContractVersion1(t *testing.T) {
	t.Parallel()
	contract, ft := configPair(t)
	data, err := os.ReadFile(contract)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	require.EqualValues(t, 2, doc["contract_version"])
	cfg := doc["config"].(map[string]any)
	tc := cfg["text_config"].(map[string]any)
	doc["contract_version"] = 1
	doc["config"] = []map[string]any{
		{"path": "model_type", "value": cfg["model_type"]},
		{"path": "architectures", "value": cfg["architectures"]},
		{"path": "text_config.hidden_size", "value": tc["hidden_size"]},
		{"path": "text_config.num_hidden_layers", "value": tc["num_hidden_layers"]},
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	old := filepath.Join(t.TempDir(), "old.contract.json")
	require.NoError(t, os.WriteFile(old, out, 0o644))

	code, stdout, stderr := runApp(t, "verify", ft, "--against", old, "--format", "text")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `(?m)^pass +contract\.config +config identical \(4 keys compared\)$`, stdout)
	assert.Regexp(t, `(?m)^warn +contract\.config +the contract \(contract_version 1\) records 4 config keys, not the full config: 40 keys of the config now not compared: `, stdout)

	code, res, stderr := verifyJSON(t, "verify", ft, "--against", old)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, res.Against.ConfigNotCompared, "text_config.rms_norm_eps")
	assert.Contains(t, res.Against.ConfigNotCompared, "text_config.rope_parameters.rope_theta")
	assert.Len(t, res.Against.ConfigNotCompared, 40)
	assert.Equal(t, 4, res.Against.ConfigKeys)

	// --strict makes the incomplete comparison fail
	code, _, _ = runApp(t, "verify", ft, "--against", old, "--strict")
	assert.Equal(t, 1, code)
}

// Config integers are compared exactly, as Python's json reads them:
// 9007199254740993 and 9007199254740992 are one float64 but two configs.
// verify --against and diff both report the change; 1.0 and 1 stay equal.
func TestConfigBigIntegers(t *testing.T) {
	t.Parallel()
	src, _ := fixturePair(t)
	base := copyDir(t, src)
	setRaw := func(dir, big, f string) {
		p := filepath.Join(dir, "config.json")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b = regexp.MustCompile(`^\{`).ReplaceAll(b, []byte(`{"seed_like": `+big+`, "scale_like": `+f+`, `))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	setRaw(base, "9007199254740993", "1.0")
	contract := filepath.Join(t.TempDir(), "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)
	ft := copyDir(t, src)
	setRaw(ft, "9007199254740992", "1")

	code, stdout, stderr := runApp(t, "verify", ft, "--against", contract, "--progress", "none")
	assert.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stdout, "config seed_like: 9007199254740993 in the contract, 9007199254740992 now")
	assert.NotContains(t, stdout, "scale_like")

	code, stdout, stderr = runApp(t, "diff", base, ft, "--mode", "header", "--format", "json")
	assert.Equal(t, 1, code, stdout+stderr)
	var res struct {
		Config []struct {
			Path string `json:"path"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	var paths []string
	for _, c := range res.Config {
		paths = append(paths, c.Path)
	}
	assert.Equal(t, []string{"seed_like"}, paths)
}

// The passing contract.hash line says how many tensors it compared, and
// under --match that only the selection was: it used to say "every common
// tensor" after comparing the 21 vision tensors of 110.
func TestContractHashPassCounts(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	contract := filepath.Join(t.TempDir(), "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "--read-data", "-o", contract, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := runApp(t, "verify", base, "--against", contract, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `(?m)^pass +contract\.hash +the content \(xxh3\) of 124 common tensors with the contract's dtype and shape is the contract's$`, stdout)
	code, stdout, stderr = runApp(t, "verify", ft, "--against", contract, "--read-data", "--match", "model.visual.**", "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `(?m)^pass +contract\.hash +the content \(xxh3\) of 21 common tensors selected by --match/--exclude with the contract's dtype and shape is the contract's$`, stdout)
	assert.NotContains(t, stdout, "every common tensor")
}

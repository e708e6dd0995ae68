package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extraTensorFT is the small base with tensors added in a shard of their
// own that the index lists (a fine-tune that ships a tensor the profile
// does not know, such as a value head): BF16 [4, 8] each.
func extraTensorFT(t *testing.T, names ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ft")
	require.NoError(t, synth.Write(dir, synth.Small()))
	addExtraTensors(t, dir, "extra.safetensors", names...)
	return dir
}

// addExtraTensors writes names (BF16 [4, 8]) into the new shard file of
// dir and lists them in its index.
func addExtraTensors(t *testing.T, dir, file string, names ...string) {
	t.Helper()
	var mts []ckpt.MemTensor
	for _, n := range names {
		mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: n, DType: numfmt.BF16, Shape: []int64{4, 8}}, Data: make([]byte, 64)})
	}
	addExtraMem(t, dir, file, mts...)
}

// addExtraMem writes mts into the new shard file of dir and lists them in
// its index.
func addExtraMem(t *testing.T, dir, file string, mts ...ckpt.MemTensor) {
	t.Helper()
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, file), mts, map[string]string{"format": "pt"}))
	p := filepath.Join(dir, "model.safetensors.index.json")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var idx struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	require.NoError(t, json.Unmarshal(b, &idx))
	for _, mt := range mts {
		idx.WeightMap[mt.Name] = file
		idx.Metadata["total_size"] = idx.Metadata["total_size"].(float64) + float64(len(mt.Data))
	}
	b, err = json.MarshalIndent(idx, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

// removeExtraTensors drops the shard file of dir written by
// addExtraTensors and its tensors from the index.
func removeExtraTensors(t *testing.T, dir, file string) {
	t.Helper()
	p := filepath.Join(dir, "model.safetensors.index.json")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var idx struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	require.NoError(t, json.Unmarshal(b, &idx))
	c, err := ckpt.Open(t.Context(), filepath.Join(dir, file), ckpt.Options{})
	require.NoError(t, err)
	for _, tn := range c.Tensors {
		delete(idx.WeightMap, tn.Name)
		idx.Metadata["total_size"] = idx.Metadata["total_size"].(float64) - float64(tn.NBytes())
	}
	c.Close()
	b, err = json.MarshalIndent(idx, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, file)))
}

// TestMapIgnore (#36 D3): a fine-tune with a tensor no rule maps is a plan
// problem; --exclude only narrows what map lists and says so; --ignore
// GLOB puts the tensor (and its block scale) in the ignored list with the
// reason "--ignore GLOB", and the plan is complete.
func TestMapIgnore(t *testing.T) {
	t.Parallel()
	ft := extraTensorFT(t, "value_head.weight")

	code, out, stderr := runApp(t, "map", ft, "--summary")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, out, "problem (unmapped): 1 source tensor(s) are neither mapped nor ignored: value_head.weight")

	// --exclude: the listing leaves it out, the plan does not, and the
	// verdict says whose problems these are and what leaves a tensor out.
	code, out, stderr = runApp(t, "map", ft, "--summary", "--exclude", "value_head.**")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, out, "selected (--match/--exclude): 82 of 82 targets, 67 of 67 source tensors, 25 of 25 ignored, 0 of 1 unmapped\n")
	assert.Contains(t, out, "0 unmapped: 1 problem(s) in the whole plan (1 unmapped there; --match/--exclude narrow what map lists, not the plan: --ignore GLOB leaves a tensor out of it)\n")

	code, out, stderr = runApp(t, "map", ft, "--summary", "--ignore", "value_head.**")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^1 +--ignore value_head\.\*\*$`, out)
	assert.Contains(t, out, "26 ignored, 0 unmapped: complete\n")
	code, out, stderr = runApp(t, "map", ft, "--ignore", "value_head.**", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res mapping.Document
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Contains(t, res.Ignored, mapping.Ignored{Name: "value_head.weight", Reason: "--ignore value_head.**", Glob: "value_head.**"})
	assert.Empty(t, res.Unmapped)
	assert.Equal(t, 26, res.Summary.Ignored)

	// A glob that matches no tensor would ignore nothing: exit 2, with the
	// names present; one that matches only mapped tensors warns, once.
	code, _, stderr = runApp(t, "map", ft, "--ignore", "value_hed.**")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `no tensor matches --ignore "value_hed.**"`)
	assert.Contains(t, stderr, "so it ignores nothing")
	code, _, stderr = runApp(t, "map", ft, "--ignore", "value_head.**", "--ignore", "mtp.layers.0.mlp.*.weight", "--summary")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "ckpt: warning: --ignore mtp.layers.0.mlp.*.weight matches 3 mapped tensor(s), which stay mapped: mtp.layers.0.mlp.down_proj.weight, mtp.layers.0.mlp.gate_proj.weight, mtp.layers.0.mlp.up_proj.weight (an ignore leaves out only tensors no rule maps)\n")
	for _, args := range [][]string{
		{"map", "--dump", "--ignore", "x.**"},
		{"map", "--list-profiles", "--ignore", "x.**"},
		{"map", ft, "--ignore", "[x"},
	} {
		code, _, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
	}

	// A profile of --rules can hold a glob ignore rule itself.
	code, dump, _ := runApp(t, "map", "--dump")
	require.Equal(t, 0, code)
	var prof map[string]any
	require.NoError(t, json.Unmarshal([]byte(dump), &prof))
	prof["ignore"] = append(prof["ignore"].([]any), map[string]any{"glob": "value_head.**", "reason": "the value head of RLHF"})
	b, err := json.Marshal(prof)
	require.NoError(t, err)
	rules := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(rules, b, 0o644))
	code, out, stderr = runApp(t, "map", ft, "--rules", rules, "--format", "json")
	require.Equal(t, 0, code, stderr)
	res = mapping.Document{}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Contains(t, res.Ignored, mapping.Ignored{Name: "value_head.weight", Reason: "the value head of RLHF", Glob: "value_head.**"})
	prof["ignore"] = append(prof["ignore"].([]any), map[string]any{"glob": "a.**", "prefix": "a.", "reason": "two selectors"})
	b, err = json.Marshal(prof)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rules, b, 0o644))
	code, _, stderr = runApp(t, "map", ft, "--rules", rules)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "needs exactly one of template, prefix and glob")

	// An FP8 weight: its block scale follows it into the ignored list.
	fp8 := filepath.Join(t.TempDir(), "fp8")
	require.NoError(t, synth.Write(fp8, synth.Small()))
	addExtraMem(t, fp8, "extra.safetensors",
		ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "value_head.weight", DType: numfmt.F8E4M3, Shape: []int64{32, 32}}, Data: make([]byte, 1024)},
		ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "value_head.weight_scale_inv", DType: numfmt.BF16, Shape: []int64{1, 1}}, Data: []byte{0x80, 0x3f}})
	code, out, stderr = runApp(t, "map", fp8, "--ignore", "value_head.weight", "--format", "json")
	require.Equal(t, 0, code, stderr)
	res = mapping.Document{}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Contains(t, res.Ignored, mapping.Ignored{Name: "value_head.weight", Reason: "--ignore value_head.weight", Glob: "value_head.weight"})
	assert.Contains(t, res.Ignored, mapping.Ignored{Name: "value_head.weight_scale_inv", Reason: "block scale of an ignored weight: --ignore value_head.weight", Glob: "value_head.weight"})
}

// TestCacheBuildIgnore (#36 D3): cache build --ignore builds the fine-tune
// with its extra tensor left out and records the globs with the tensors
// they left out in the manifest; cache verify plans with them, says what
// they leave out, and fails on a different --ignore set and on a source
// whose ignored tensors changed; cache identify plans with them too.
func TestCacheBuildIgnore(t *testing.T) {
	t.Parallel()
	ft := extraTensorFT(t, "value_head.weight")
	out := filepath.Join(t.TempDir(), "cache")
	code, stdout, stderr := runApp(t, "cache", "build", ft, "-o", out, "--progress", "none")
	assert.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stdout, "value_head.weight")
	code, stdout, stderr = runApp(t, "cache", "build", ft, "-o", out, "--ignore", "value_head.**", "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	m, err := cache.ReadManifest(folder)
	require.NoError(t, err)
	assert.Equal(t, []cache.IgnoreRecord{{Glob: "value_head.**", Tensors: []string{"value_head.weight"}}}, m.Ignore)

	code, stdout, stderr = runApp(t, "cache", "verify", out, "--source", ft, "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "left out of the plan by --ignore \"value_head.**\": 1 tensor(s): value_head.weight\nok: 82 files")
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", ft, "--progress", "none", "--format", "json")
	require.Equal(t, 0, code)
	var all check.Result // the text folder and its vision folder
	require.NoError(t, json.Unmarshal([]byte(stdout), &all))
	require.Len(t, all.Folders, 2)
	for _, doc := range all.Folders {
		if strings.HasSuffix(doc.Dir, "_mesh1x2") {
			assert.Equal(t, m.Ignore, doc.Ignore)
		} else {
			assert.Equal(t, []string{"value_head.**"}, cache.IgnoreGlobs(doc.Ignore), "the vision folder is planned with the same globs")
		}
	}

	// Another set of globs: a manifest finding, though it leaves out the same.
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", ft, "--progress", "none", "--ignore", "value_*.**")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, `manifest: manifest.json: the cache was built with --ignore "value_head.**"; this check plans the source with --ignore "value_*.**"`)

	// A cache built without --ignore, checked with one.
	plain := filepath.Join(t.TempDir(), "plain")
	base := smallBase(t)
	code, _, stderr = runApp(t, "cache", "build", base, "-o", plain, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	addExtraTensors(t, base, "extra.safetensors", "value_head.weight")
	code, stdout, _ = runApp(t, "cache", "verify", plain, "--source", base, "--progress", "none", "--ignore", "value_head.**")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, `the cache was built without --ignore; this check plans the source with --ignore "value_head.**"`)

	// cache identify plans the candidates with the manifest's globs and
	// names them in the line that rebuilds the cache.
	code, stdout, stderr = runApp(t, "cache", "identify", out, "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "--device P300 --ignore 'value_head.**'\n")

	// The source gains a tensor the glob matches: the build did not leave
	// it out, so the cache is stale.
	addExtraTensors(t, ft, "extra2.safetensors", "value_head.bias")
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", ft, "--progress", "none")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, `stale: 1 tensor of the source is left out by --ignore "value_head.**" now, but was not left out by the build (the source changed since the build): value_head.bias`)
	removeExtraTensors(t, ft, "extra2.safetensors")
	// ... or loses the one the build left out.
	removeExtraTensors(t, ft, "extra.safetensors")
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", ft, "--progress", "none")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, `stale: 1 tensor that the build left out by --ignore "value_head.**" is not left out now (the source changed since the build): value_head.weight`)
}

// outOfOrder writes a safetensors file whose tensors are not in the
// reference writer's order (b stored before a): verify warns header.lint.
func outOfOrder(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lint.safetensors")
	hdr := `{"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`
	require.NoError(t, os.WriteFile(p, ckpttest.Frame(hdr, 8), 0o644))
	return p
}

// TestVerifyAllowFinding (#36 D3): --allow-finding ID[:GLOB] accepts a
// finding: it keeps its status, does not fail --strict (a warning) nor the
// run (a failure, said loudly on stderr), and is named in the verdict and
// in JSON allowed.
func TestVerifyAllowFinding(t *testing.T) {
	t.Parallel()
	lint := outOfOrder(t)
	code, out, _ := runApp(t, "verify", lint, "--arch", "none", "--strict")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "FAILED (--strict: warnings fail): 0 failed, 1 warnings")

	for _, spec := range []string{"header.lint", "header.lint:lint.safetensors", "header.lint:*.safetensors"} {
		code, out, stderr := runApp(t, "verify", lint, "--arch", "none", "--strict", "--allow-finding", spec)
		assert.Equal(t, 0, code, "%s: %s%s", spec, out, stderr)
		assert.Contains(t, out, "[allowed by --allow-finding "+spec+"]", spec)
		assert.Contains(t, out, ": OK: 0 failed, 1 warnings (1 allowed), ", spec)
		assert.Contains(t, out, "; allowed by --allow-finding: "+spec+" (1 finding)\n", spec)
		assert.Empty(t, stderr, spec)
	}
	code, out, _ = runApp(t, "verify", lint, "--arch", "none", "--strict", "--allow-finding", "header.lint", "--format", "json")
	require.Equal(t, 0, code, out)
	var rep verify.Result
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.True(t, rep.OK)
	require.Len(t, rep.Allowed, 1)
	assert.Equal(t, "header.lint", rep.Allowed[0].Spec)
	require.Len(t, rep.Allowed[0].Findings, 1)
	assert.Equal(t, ckpt.Warn, rep.Allowed[0].Findings[0].Status, "an allowed finding keeps its status")
	assert.Contains(t, rep.Allowed[0].Findings[0].Message, "header.order")
	code, out, _ = runApp(t, "verify", lint, "--arch", "none", "--strict", "--allow-finding", "header.lint", "--format", "jsonl")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, `"allowed":1`)

	// A subject that names another file accepts nothing, and says so.
	code, out, stderr := runApp(t, "verify", lint, "--arch", "none", "--strict", "--allow-finding", "header.lint:other.safetensors")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, stderr, "ckpt: warning: --allow-finding header.lint:other.safetensors accepted nothing: no failing or warning finding with the id header.lint names only tensors (or files) matching \"other.safetensors\"\n")

	// Unknown ids exit 2, naming the ids there are; a lint id points to
	// header.lint.
	for _, tc := range []struct{ spec, want string }{
		{"header.lnt", "the header findings are header.dtype, header.lint"},
		{"header.order", "header.order is a header lint, reported as finding header.lint"},
		{"nonsense", "no finding has the id \"nonsense\" (the ids are index.*, file.*"},
		{"header.lint:", "empty SUBJECT"},
	} {
		code, _, stderr := runApp(t, "verify", lint, "--allow-finding", tc.spec)
		assert.Equal(t, 2, code, tc.spec)
		assert.Contains(t, stderr, tc.want, tc.spec)
	}

	// Failing findings: a fine-tune with two tensors the contract (and the
	// config) does not have fails arch.unexpected and contract.key_added,
	// each naming both. Accepting one tensor does not accept a finding;
	// both do, and the verdict and stderr say failures were accepted.
	base := smallBase(t)
	contract := filepath.Join(t.TempDir(), "base.contract.json")
	code, _, stderr = runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)
	addExtraTensors(t, base, "extra.safetensors", "value_head.weight", "value_head.bias")
	code, out, _ = runApp(t, "verify", base, "--against", contract, "--allow-finding", "contract.key_added:value_head.weight", "--allow-finding", "arch.unexpected")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, ": FAILED: 2 failed (1 allowed), ")
	code, out, stderr = runApp(t, "verify", base, "--against", contract, "--allow-finding", "contract.key_added:value_head.weight",
		"--allow-finding", "contract.key_added:value_head.bias", "--allow-finding", "arch.unexpected:value_head.*")
	assert.Equal(t, 0, code, out+stderr)
	assert.Contains(t, out, ": OK only because --allow-finding accepts 2 FAILED findings: 2 failed (2 allowed), ")
	assert.Contains(t, out, "; allowed by --allow-finding: contract.key_added:value_head.weight (1 finding), contract.key_added:value_head.bias (1 finding), arch.unexpected:value_head.* (1 finding)\n")
	assert.Contains(t, stderr, "ckpt: warning: --allow-finding contract.key_added:value_head.weight accepts a FAILED finding: contract.key_added: 2 keys not in the contract: ")
	assert.Contains(t, stderr, "ckpt: warning: --allow-finding arch.unexpected:value_head.* accepts a FAILED finding: arch.unexpected: 2 tensors are not implied by the config: value_head.bias, value_head.weight\n")
	code, out, _ = runApp(t, "verify", base, "--against", contract, "--allow-finding", "contract.key_added:value_head.*", "--allow-finding", "arch.unexpected", "--strict")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, ": OK only because --allow-finding accepts 2 FAILED findings: 2 failed (2 allowed), 0 warnings, ")
}

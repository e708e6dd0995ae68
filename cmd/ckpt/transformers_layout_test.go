package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Checkpoints in the layouts transformers' save_pretrained writes (issue
// 33): a float32 / float16 save, the text-only Qwen3_5ForCausalLM layout,
// and variants.

// writeSynth writes a synth checkpoint of o under a new temp dir.
func writeSynth(t *testing.T, o synth.Options) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ckpt")
	require.NoError(t, synth.Write(dir, o))
	return dir
}

// bf16Save is synth.Small as transformers saves a bf16 model: no FP8, no
// MTP head (transformers writes no mtp.*).
func bf16Save() synth.Options {
	o := synth.Small()
	o.FP8, o.MTP = false, false
	return o
}

// findingsOf returns the findings of id in a verify report.
func findingsOf(rep verify.Result, id string) []ckpt.Finding {
	var out []ckpt.Finding
	for _, c := range rep.Checks {
		if string(c.ID) == id {
			out = append(out, c)
		}
	}
	return out
}

// mapJSON runs map --format json and decodes the document.
func mapJSON(t *testing.T, args ...string) (int, mapping.Document, string) {
	t.Helper()
	code, out, errs := runApp(t, append([]string{"map"}, append(args, "--format", "json")...)...)
	var res mapping.Document
	if code != 2 {
		require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout: %s\nstderr: %s", out, errs)
	}
	return code, res, errs
}

// buildCache runs cache build of src (extra flags appended) and returns
// every file of the cache folder by its path relative to it (the
// manifest left out: it names the source).
func buildCache(t *testing.T, src string, extra ...string) (map[string][]byte, map[string]any, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cache")
	code, stdout, errs := runApp(t, append([]string{"cache", "build", src, "--out", out, "--progress", "none", "--fsync=false", "--format", "json"}, extra...)...)
	require.Equal(t, 0, code, "cache build %s: %s", src, errs)
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".tensorbin") {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(out, p)
		files[rel] = b
		return err
	}))
	require.NotEmpty(t, files)
	return files, sum, errs
}

// TestDeclaredDType: a float32 or float16 save (every float tensor in the
// dtype config.json declares, as transformers writes it) passes verify,
// map and cache build; a tensor of another float dtype is one warning
// naming both dtypes, from all three. Fails before the rule: verify failed
// one arch.dtype per tensor ("is F32, expected BF16").
func TestDeclaredDType(t *testing.T) {
	t.Parallel()
	for _, d := range []numfmt.DType{numfmt.F32, numfmt.F16} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			o := bf16Save()
			o.DType = d
			dir := writeSynth(t, o)
			code, rep, errs := verifyJSON(t, "verify", dir, "--strict")
			require.Equal(t, 0, code, errs)
			assert.True(t, rep.OK)
			require.Len(t, findingsOf(rep, "arch.dtype"), 1)
			assert.Equal(t, ckpt.Pass, findingsOf(rep, "arch.dtype")[0].Status)

			// One tensor of another float dtype: one warning naming both.
			culprit := lm + "layers.1.mlp.down_proj.weight"
			editTensor(t, dir, culprit, func(mt *ckpt.MemTensor) {
				vals := make([]float32, len(mt.Data)*8/d.Bits())
				require.NoError(t, numfmt.DecodeFloat32(d, mt.Data, vals))
				mt.DType, mt.Data = numfmt.BF16, make([]byte, 2*len(vals))
				require.NoError(t, numfmt.EncodeFloat32(numfmt.BF16, vals, mt.Data))
			})
			editIndex(t, dir, func(_, meta map[string]any) { meta["total_size"] = meta["total_size"].(float64) - float64(shrink(d)) })
			want := "1 float tensor is BF16 where config.json dtype = \"" + map[numfmt.DType]string{numfmt.F32: "float32", numfmt.F16: "float16"}[d] + "\" declares " + string(d)
			code, rep, errs = verifyJSON(t, "verify", dir)
			require.Equal(t, 0, code, errs)
			ws := findingsOf(rep, "arch.dtype")
			require.Len(t, ws, 1, "%+v", ws)
			assert.Equal(t, ckpt.Warn, ws[0].Status)
			assert.Contains(t, ws[0].Message, want)
			assert.Equal(t, []string{culprit}, ws[0].Tensors)
			code, _, _ = verifyJSON(t, "verify", dir, "--strict")
			assert.Equal(t, 1, code, "--strict fails on the warning")

			code, res, errs := mapJSON(t, dir)
			require.Equal(t, 0, code, errs)
			assert.Empty(t, res.Problems)
			assert.Equal(t, []string{ws[0].Message}, dtypeWarnings(res.Warnings), "the same warning as verify's")
			assert.Contains(t, errs, "ckpt: warning: "+want)

			_, sum, errs := buildCache(t, dir)
			assert.Contains(t, errs, "ckpt: warning: "+want)
			var bw []string
			for _, w := range sum["warnings"].([]any) {
				bw = append(bw, w.(string))
			}
			assert.Equal(t, []string{ws[0].Message}, dtypeWarnings(bw))
		})
	}
}

// dtypeWarnings are the declared-dtype rule's warnings among ws.
func dtypeWarnings(ws []string) []string {
	var out []string
	for _, w := range ws {
		if strings.Contains(w, " float tensor") {
			out = append(out, w)
		}
	}
	return out
}

// shrink is the byte count one down_proj of bf16Save loses when re-stored
// from d as BF16 (for the index's total_size).
func shrink(d numfmt.DType) int {
	o := bf16Save()
	return o.Hidden * o.Intermediate * (d.Bits() - 16) / 8
}

// TestDeclaredDTypeCacheBytes: a float32 save of bf16-representable
// weights builds the same cache, byte for byte, as the bf16 save (the
// stack rounds every source to bf16).
func TestDeclaredDTypeCacheBytes(t *testing.T) {
	t.Parallel()
	want, _, _ := buildCache(t, writeSynth(t, bf16Save()))
	o := bf16Save()
	o.DType = numfmt.F32
	got, _, errs := buildCache(t, writeSynth(t, o))
	assert.NotContains(t, errs, "float tensor")
	assert.Equal(t, keysOf(want), keysOf(got))
	for k := range want {
		assert.True(t, string(want[k]) == string(got[k]), "%s differs", k)
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestTextOnlyLayout: a Qwen3_5ForCausalLM checkpoint (model.layers.*,
// flat config, model_type qwen3_5_text) maps and builds exactly as the
// same weights under model.language_model.*, byte for byte; verify and
// inspect read it as the text model. Fails before: map refused it
// ("required ... matched nothing; expected model.language_model....").
func TestTextOnlyLayout(t *testing.T) {
	t.Parallel()
	nested := synth.Small()
	nested.Vision = false // Qwen3_5ForCausalLM has none
	textOnly := nested
	textOnly.TextOnly = true
	nd, td := writeSynth(t, nested), writeSynth(t, textOnly)

	code, rep, errs := verifyJSON(t, "verify", td)
	require.Equal(t, 0, code, errs)
	assert.True(t, rep.OK)
	code, want, _ := verifyJSON(t, "verify", nd)
	require.Equal(t, 0, code)
	assert.Equal(t, rep.Counts(), want.Counts(), "the same findings as the nested layout")
	cfg := findingsOf(rep, "arch.config")
	require.Len(t, cfg, 1)
	assert.Contains(t, cfg[0].Message, "qwen3_5 profile, flat config, prefix model.: 4 layers")

	code, out, errs := runApp(t, "inspect", td, "--format", "json")
	require.Equal(t, 0, code, errs)
	var ins inspect.Result
	require.NoError(t, json.Unmarshal([]byte(out), &ins))
	groups := map[string]string{}
	for _, g := range ins.Summary.ByGroup {
		groups[g.Group] = g.Pattern
	}
	assert.Equal(t, "model.layers.{0..3}", groups[ckpt.GroupText])

	for _, profile := range mapping.BuiltinNames() {
		code, want, errs := mapJSON(t, nd, "--profile", profile)
		require.Equal(t, 0, code, errs)
		code, got, errs := mapJSON(t, td, "--profile", profile)
		require.Equal(t, 0, code, "%s: %s", profile, errs)
		assert.Empty(t, got.Problems)
		assert.Empty(t, got.Unmapped)
		require.Equal(t, len(want.Entries), len(got.Entries))
		for i := range want.Entries {
			assert.Equal(t, want.Entries[i].File, got.Entries[i].File)
			var ws []string
			for _, s := range want.Entries[i].Sources {
				ws = append(ws, strings.Replace(s, "model.language_model.", "model.", 1))
			}
			assert.Equal(t, ws, got.Entries[i].Sources, "the plan names the tensors as stored")
		}

		a, _, _ := buildCache(t, nd, "--profile", profile)
		b, _, _ := buildCache(t, td, "--profile", profile)
		require.Equal(t, keysOf(a), keysOf(b))
		for k := range a {
			assert.True(t, string(a[k]) == string(b[k]), "%s: %s differs between the layouts", profile, k)
		}
	}

	// Both spellings of one tensor: the stack keeps whichever comes last.
	dup := copyDir(t, nd)
	name := "model.layers.1.mlp.down_proj.weight"
	rewriteShard(t, dup, lm+"layers.1.mlp.down_proj.weight", func(ts []ckpt.MemTensor) []ckpt.MemTensor {
		for _, mt := range ts {
			if mt.Name == lm+"layers.1.mlp.down_proj.weight" {
				c := mt
				c.Name = name
				return append(ts, c)
			}
		}
		return ts
	})
	editIndex(t, dup, func(wm, meta map[string]any) {
		wm[name] = wm[lm+"layers.1.mlp.down_proj.weight"]
	})
	code, res, errs := mapJSON(t, dup)
	require.Equal(t, 1, code, errs)
	require.NotEmpty(t, res.Problems)
	assert.Equal(t, mapping.ProblemDuplicate, res.Problems[0].ID)
	assert.Contains(t, res.Problems[0].Message, lm+"layers.1.mlp.down_proj.weight and "+name+" are both read as")
}

// TestMapRefusesUnservedArchitecture: a checkpoint of an architecture no
// profile serves is refused before any rule, naming its model_type and the
// profiles there are. Fails before: map reported unmapped and missing
// tensors instead.
func TestMapRefusesUnservedArchitecture(t *testing.T) {
	t.Parallel()
	o := bf16Save()
	o.TextOnly = true
	dir := writeSynth(t, o)
	editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
		m["model_type"], m["architectures"] = "llama", []any{"LlamaForCausalLM"}
	})
	code, res, errs := mapJSON(t, dir)
	require.Equal(t, 1, code, errs)
	require.Len(t, res.Problems, 1)
	p := res.Problems[0]
	assert.Equal(t, mapping.ProblemArchitecture, p.ID)
	assert.Contains(t, p.Message, `model_type "llama" (architectures LlamaForCausalLM)`)
	for _, n := range mapping.BuiltinNames() {
		assert.Contains(t, p.Message, n+" (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text)")
	}
	assert.Empty(t, res.Entries)
	code, stdout, _ := runApp(t, "cache", "build", dir, "--out", filepath.Join(t.TempDir(), "c"), "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `model_type "llama"`)
	code, stdout, _ = runApp(t, "map", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "problem (architecture): profile "+mapping.BuiltinName+" serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\"")
}

// TestVariants: save_pretrained(variant=...) directories. Fails before:
// "ambiguous checkpoint directory: N .safetensors files ... and no
// model.safetensors.index.json".
func TestVariants(t *testing.T) {
	t.Parallel()
	o := bf16Save()
	o.DType, o.Variant = numfmt.F16, "fp16"
	dir := writeSynth(t, o)
	require.FileExists(t, filepath.Join(dir, "model.safetensors.index.fp16.json"))
	require.FileExists(t, filepath.Join(dir, "model.fp16-00001-of-00003.safetensors"))

	// One variant and no default checkpoint: opened, with a warning.
	code, rep, errs := verifyJSON(t, "verify", dir)
	require.Equal(t, 0, code, errs)
	vs := findingsOf(rep, "index.variant")
	require.Len(t, vs, 1)
	assert.Equal(t, ckpt.Warn, vs[0].Status)
	assert.Contains(t, vs[0].Message, `only the variant "fp16" (model.safetensors.index.fp16.json): ckpt reads it`)
	code, out, errs := runApp(t, "inspect", dir, "--format", "json")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "only the variant")
	assert.Contains(t, out, `"sharded": true`)

	// --variant: every command that takes SRC, no warning.
	code, rep, errs = verifyJSON(t, "verify", dir, "--variant", "fp16", "--strict")
	require.Equal(t, 0, code, errs)
	assert.Empty(t, findingsOf(rep, "index.variant"))
	ex := filepath.Join(t.TempDir(), "x.safetensors")
	cacheOut := filepath.Join(t.TempDir(), "cache")
	for _, args := range [][]string{
		{"inspect", dir},
		{"contract", dir, "-o", filepath.Join(t.TempDir(), "c.json")},
		{"diff", dir, dir},
		{"map", dir, "--summary"},
		{"extract", dir, "--match", "lm_head.weight", "-o", ex},
		{"cache", "build", dir, "--out", cacheOut, "--progress", "none", "--fsync=false"},
		{"cache", "verify", cacheOut, "--source", dir, "--progress", "none"},
		{"cache", "identify", cacheOut, "--source", dir, "--headers-only", "--progress", "none"},
	} {
		code, _, errs := runApp(t, append(args, "--variant", "fp16")...)
		assert.Equal(t, 0, code, "%v: %s", args, errs)
		assert.NotContains(t, errs, "only the variant", "%v", args)
	}

	// A variant that is not there: exit 2 naming the ones that are.
	code, _, errs = runApp(t, "inspect", dir, "--variant", "bf16")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `no variant "bf16": neither model.bf16.safetensors nor model.safetensors.index.bf16.json (its variants: fp16 (model.safetensors.index.fp16.json))`)
	code, _, errs = runApp(t, "inspect", dir, "--variant", "../x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "is not a variant name")
	code, _, errs = runApp(t, "inspect", filepath.Join(dir, "model.fp16-00001-of-00003.safetensors"), "--variant", "fp16")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "the source names the file")

	// Two variants: exit 2 listing both.
	o2 := bf16Save()
	o2.Variant = "bf16"
	require.NoError(t, synth.Write(dir, o2))
	code, _, errs = runApp(t, "verify", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "no model.safetensors.index.json and no model.safetensors, but 2 variants: bf16 (model.safetensors.index.bf16.json), fp16 (model.safetensors.index.fp16.json); pass --variant NAME")
	code, rep, errs = verifyJSON(t, "verify", dir, "--variant", "bf16")
	require.Equal(t, 0, code, errs)
	assert.True(t, rep.OK)

	// The default checkpoint beside a single-file variant: the default is
	// read, as from_pretrained without variant= does.
	single := filepath.Join(t.TempDir(), "single")
	o3 := bf16Save()
	o3.LayersPerShard = 0
	require.NoError(t, synth.Write(single, o3))
	o3.Variant, o3.DType = "fp16", numfmt.F16
	require.NoError(t, synth.Write(single, o3))
	require.FileExists(t, filepath.Join(single, "model.fp16.safetensors"))
	editJSON(t, filepath.Join(single, "config.json"), func(m map[string]any) { delete(m, "dtype"); m["text_config"].(map[string]any)["dtype"] = "bfloat16" })
	code, out, errs = runApp(t, "inspect", single, "--format", "json")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, `"BF16"`)
	assert.NotContains(t, out, `"F16"`)
	code, out, errs = runApp(t, "inspect", single, "--format", "json", "--variant", "fp16")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, `"F16"`)
	code, rep, errs = verifyJSON(t, "verify", single, "--variant", "fp16")
	require.Equal(t, 0, code, errs)
	ws := findingsOf(rep, "arch.dtype")
	require.Len(t, ws, 1)
	assert.Equal(t, ckpt.Warn, ws[0].Status, "the fp16 copy under a bfloat16 config: the declared-dtype warning")
}

// TestVariantSources: hf: snapshots list their files like a directory;
// hf:// cannot list, and reads a variant given with --variant.
func TestVariantSources(t *testing.T) {
	t.Parallel()
	o := bf16Save()
	o.Variant = "fp16"
	dir := writeSynth(t, o)
	hub := sourcetest.NewHub(dir, "org/var")
	t.Cleanup(hub.Close)
	cacheRoot := filepath.Join(t.TempDir(), "hfcache")
	_, err := sourcetest.WriteCache(cacheRoot, "org/var", formsCommit, dir, false)
	require.NoError(t, err)
	env := map[string]string{"HF_ENDPOINT": hub.URL, "HF_HUB_CACHE": cacheRoot}

	code, out, errs := runSources(t, env, source.Options{}, "inspect", "hf:org/var", "--format", "json")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, `only the variant \"fp16\"`)
	for _, src := range []string{"hf:org/var", "hf://org/var"} {
		code, out, errs := runSources(t, env, source.Options{}, "verify", src, "--variant", "fp16", "--format", "json")
		require.Equal(t, 0, code, "%s: %s", src, errs)
		assert.NotContains(t, out, "index.variant")
		assert.Contains(t, out, `"ok": true`)
	}
	code, _, errs = runSources(t, env, source.Options{}, "inspect", "hf://org/var")
	assert.Equal(t, 2, code, "hf:// cannot list the repository: it looks for the default names only")
	assert.Contains(t, errs, "model.safetensors")
}

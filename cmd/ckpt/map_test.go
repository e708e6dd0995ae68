package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func smallBase(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(dir, synth.Small()))
	return dir
}

func TestMapGolden(t *testing.T) {
	t.Parallel()
	base := smallBase(t)
	for _, tc := range []struct{ format, file string }{{"text", "map_small_1x2.txt.golden"}, {"json", "map_small_1x2.json.golden"}} {
		code, out, stderr := runApp(t, "map", base, "--mesh", "1x2", "--format", tc.format)
		require.Equal(t, 0, code, stderr)
		golden(t, tc.file, strings.ReplaceAll(out, base, "SRC"))
	}
}

func TestMapJSONContract(t *testing.T) {
	t.Parallel()
	base := smallBase(t)
	code, out, _ := runApp(t, "map", base, "--format", "json")
	require.Equal(t, 0, code)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	for _, k := range []string{"profile", "mesh", "entries", "ignored", "unmapped"} {
		assert.Contains(t, doc, k)
	}
	assert.Equal(t, "1x2", doc["mesh"])
	entries := doc["entries"].([]any)
	require.Len(t, entries, 82)
	for _, k := range []string{"target", "file", "sources", "transform", "placement", "dtype", "layout", "shape", "device_shape", "memory_config"} {
		assert.Contains(t, entries[0].(map[string]any), k)
	}
	// Every mtp.* tensor is some entry's source, except the attention
	// q/k norms, which the loader does not cache.
	var res mapping.Document
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	srcs := map[string]bool{}
	for _, e := range res.Entries {
		for _, s := range e.Sources {
			srcs[s] = true
		}
	}
	code, insOut, _ := runApp(t, "inspect", base, "--match", "mtp.**", "--format", "json")
	require.Equal(t, 0, code)
	var ins inspect.Result
	require.NoError(t, json.Unmarshal([]byte(insOut), &ins))
	require.Len(t, ins.Tensors, 22)
	ignored := map[string]string{}
	for _, ig := range res.Ignored {
		ignored[ig.Name] = ig.Reason
	}
	for _, tn := range ins.Tensors {
		if strings.HasSuffix(tn.Name, "_norm.weight") && strings.Contains(tn.Name, "self_attn") {
			assert.Contains(t, ignored[tn.Name], "not cached", tn.Name)
			continue
		}
		assert.True(t, srcs[tn.Name], "%s is in no entry", tn.Name)
	}
}

func TestMapExitCodes(t *testing.T) {
	t.Parallel()
	base := smallBase(t)
	dir := t.TempDir()
	// A profile without the embedding rule leaves embed_tokens unmapped... except
	// for the tied rule, which does not apply (tie_word_embeddings is false).
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	var rules []mapping.Rule
	for _, r := range p.Rules {
		if r.ID != "embed" && r.ID != "lm_head.tied" {
			rules = append(rules, r)
		}
	}
	p.Rules = rules
	b, err := p.JSON()
	require.NoError(t, err)
	noEmbed := filepath.Join(dir, "noembed.json")
	require.NoError(t, os.WriteFile(noEmbed, b, 0o644))
	// mtp/fc DRAM width-sharded in TILE with a height of 16: ttnn refuses
	// that shard shape, so the plan does.
	p, err = mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	for i := range p.Rules {
		if r := &p.Rules[i]; r.ID == "mtp.fc" {
			r.Transform = append(r.Transform, mapping.Step{Op: "reshape", Shape: []string{"16", "rows*cols/16"}})
			r.Placement, r.Memory = mapping.Placement{Kind: "replicate"}, mapping.DRAMWidthSharded
		}
	}
	b, err = p.JSON()
	require.NoError(t, err)
	oddHeight := filepath.Join(dir, "oddheight.json")
	require.NoError(t, os.WriteFile(oddHeight, b, 0o644))
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"name":"x","rules":[{"id":"a","target":"t","sources":["s"],"placement":{"kind":"spread"},"dtype":"BFLOAT16","layout":"TILE","memory":"dram_interleaved"}]}`), 0o644))
	tests := []struct {
		name    string
		args    []string
		code    int
		mention string
	}{
		{"ok", []string{"map", base}, 0, "complete"},
		{"indivisible mesh", []string{"map", base, "--mesh", "1x4"}, 1, "linear_num_key_heads"},
		{"non-dividing 1x3", []string{"map", base, "--mesh", "1x3", "--summary"}, 1, "mesh 1x3"},
		{"unmapped tensor", []string{"map", base, "--rules", noEmbed}, 1, "model.language_model.embed_tokens.weight"},
		{"bad rules", []string{"map", base, "--rules", bad}, 2, "placement kind"},
		{"width-sharded tile height 16", []string{"map", base, "--rules", oddHeight}, 1,
			"problem (config): target mtp/fc: DRAM width sharding of a TILE tensor needs a per-device height that is a multiple of 32 (ttnn refuses shard shape [16, ...]), got [16 2048]"},
		{"cache build refuses it too", []string{"cache", "build", base, "--rules", oddHeight, "-o", filepath.Join(dir, "cache"), "--progress", "none"}, 1,
			"target mtp/fc: DRAM width sharding of a TILE tensor needs a per-device height that is a multiple of 32"},
		{"missing rules file", []string{"map", base, "--rules", filepath.Join(dir, "nope.json")}, 2, "opening rules"},
		{"bad mesh", []string{"map", base, "--mesh", "2"}, 2, "ROWSxCOLS"},
		{"2-D mesh", []string{"map", base, "--mesh", "2x2"}, 2, "1xN"},
		{"unknown profile", []string{"map", base, "--profile", "llama"}, 2, "unknown profile"},
		{"no source", []string{"map"}, 2, "takes 1 argument"},
		{"missing source", []string{"map", filepath.Join(dir, "absent")}, 2, "absent"},
		{"device and tag", []string{"map", base, "--device", "P150x8", "--tag", "bf16", "--format", "json"}, 0, "P150x8/tensor_cache_bf16_mesh1x2/layers.0/tp/qkvzab.il_dtype_BFLOAT8_B_layout_TILE.tensorbin"},
		{"a Wormhole device folder for the Blackhole profile", []string{"map", base, "--device", "N300"}, 1, "problem (device): device folder N300 is a Wormhole board, and profile qwen36-mtp@pr55548 plans for Blackhole"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runApp(t, tc.args...)
			assert.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", out, stderr)
			assert.Contains(t, out+stderr, tc.mention)
		})
	}
}

func TestMapDumpRoundTrip(t *testing.T) {
	t.Parallel()
	code, dump, _ := runApp(t, "map", "--dump")
	require.Equal(t, 0, code)
	p, err := mapping.LoadProfile(strings.NewReader(dump), "dump")
	require.NoError(t, err)
	assert.Equal(t, mapping.BuiltinName, p.Name)
	require.NotNil(t, p.Pinned)
	assert.Equal(t, "tenstorrent/tt-metal", p.Pinned.Repo)
	// The dumped profile maps exactly like the built-in one.
	base := smallBase(t)
	rules := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(rules, []byte(dump), 0o644))
	_, viaBuiltin, _ := runApp(t, "map", base, "--format", "json")
	code, viaRules, _ := runApp(t, "map", base, "--rules", rules, "--format", "json")
	require.Equal(t, 0, code)
	assert.Equal(t, viaBuiltin, viaRules)
}

func TestDemoRunsMap(t *testing.T) {
	t.Parallel()
	code, out, stderr := runApp(t, "demo", "--dir", t.TempDir())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "$ ckpt map ")
	assert.Contains(t, out, "82 targets")
}

// TestMapMatch: --match/--exclude list the targets of the selected source
// tensors; the summary counts the selection against the whole plan.
func TestMapMatch(t *testing.T) {
	t.Parallel()
	base := smallBase(t)
	code, out, stderr := runApp(t, "map", base, "--match", "mtp.**", "--exclude", "mtp.fc.*", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res mapping.Document
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.NotNil(t, res.Whole)
	assert.Less(t, res.Summary.Targets, res.Whole.Targets)
	assert.Equal(t, len(res.Entries), res.Summary.Targets)
	require.NotEmpty(t, res.Entries)
	for _, e := range res.Entries {
		assert.True(t, strings.HasPrefix(e.Target, "mtp/"), e.Target)
		assert.NotContains(t, e.Sources, "mtp.fc.weight")
	}
	for _, ig := range res.Ignored {
		assert.True(t, strings.HasPrefix(ig.Name, "mtp."), ig.Name)
	}

	code, out, _ = runApp(t, "map", base, "--match", "mtp.**", "--format", "text", "--summary")
	require.Equal(t, 0, code)
	assert.Regexp(t, `selected \(--match/--exclude\): \d+ of \d+ targets, \d+ of \d+ source tensors, \d+ of \d+ ignored`, out)
	code, out, _ = runApp(t, "map", base, "--format", "text", "--summary")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "selected")

	for _, args := range [][]string{
		{"map", base, "--match", "mtp.*"},      // selects nothing: exit 2 with the ** hint
		{"map", "--dump", "--match", "mtp.**"}, // does not apply
		{"map", base, "--against-cache", base, "--match", "mtp.**"},
	} {
		code, _, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, stderr)
	}
}

// The device folder follows upstream's table for the mesh (27B layout:
// 1x4 divides it), MESH_DEVICE where the serving host sets it, and
// --device above both.
func TestMapDeviceFolder(t *testing.T) {
	t.Parallel()
	dir := fullScale(t, "fp8")
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--mesh", "1x4"}, nil, "P150x4/tensor_cache_bfp8_mesh1x4"},
		{[]string{"--mesh", "1x2"}, nil, "P300/tensor_cache_bfp8_mesh1x2"},
		{[]string{"--mesh", "1x4"}, map[string]string{"MESH_DEVICE": "P300x2"}, "P300x2/tensor_cache_bfp8_mesh1x4"},
		{[]string{"--mesh", "1x4", "--device", "P150x4"}, map[string]string{"MESH_DEVICE": "P300x2"}, "P150x4/tensor_cache_bfp8_mesh1x4"},
	} {
		var out, errb bytes.Buffer
		app := &App{Out: &out, Err: &errb, Getenv: func(k string) string { return tc.env[k] }}
		code := app.Run(context.Background(), append([]string{"map", dir, "--format", "json"}, tc.args...))
		require.Equal(t, 0, code, "%v: %s", tc.args, errb.String())
		var res struct {
			CacheDir string `json:"cache_dir"`
			Entries  []struct {
				File string `json:"file"`
			} `json:"entries"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &res))
		assert.Equal(t, tc.want, res.CacheDir, "%v %v", tc.args, tc.env)
		require.NotEmpty(t, res.Entries)
		for _, e := range res.Entries {
			require.True(t, strings.HasPrefix(e.File, tc.want+"/"), e.File)
		}
	}
	code, _, stderr := runApp(t, "map", dir, "--mesh", "1x4", "--device", "../up")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want one path element")
}

// --list-profiles names every upstream line with its pins and variables,
// and which one is the default; the main line plans out.colpar for every
// GDN layer of the 27B and no mtp/, the MTP line mtp/.
func TestMapListProfiles(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runApp(t, "map", "--list-profiles")
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"qwen36-mtp@pr55548 (default) (formerly qwen3_5-tt)", "qwen36@main-2026-10\n",
		"pinned: tenstorrent/tt-metal@acd4eaccf17adb2c3e17c4738cb1c4fa3aa783f5", "pinned: tenstorrent/tt-metal@db6dc348aa32b978b8602682dbae1e4aab8b6511",
		"variable gdn_out_colpar=true (fixed:", "default: qwen36-mtp@pr55548: ",
		// main's fused GDN decode switch, overridable (QWEN36_GDN_FUSED_DECODE=0)
		"  variable gdn_fused_decode_enabled=true: every GDN layer also caches the fused decode's float32 constants",
		// what could not be read at each line, and what stays open
		"  not read at the line (18 of 18 files): models/common/rmsnorm.py, ",
		"models/demos/blackhole/qwen36/tt/layer.py, models/demos/blackhole/qwen36/tt/model_config.py, models/demos/blackhole/qwen36/tt/moe/moe.py, ",
		"models/demos/blackhole/qwen36/tt/moe/weights.py, models/demos/blackhole/qwen36/tt/weight_mapping.py, ",
		// the MoE loader, read at its own revisions for both lines
		"  open: the MoE loader (moe/weights.py, router.py @09c98eda",
		"  open: prepare_for_fused_swiglu (models/tt_dit/utils/tensor.py)",
		"  open: neg_exp_A_fp32 values: −exp is computed in float64"} {
		assert.Contains(t, stdout, want)
	}
	assert.NotContains(t, stdout, "variable gdn_fused_decode_enabled=true (fixed:", "the switch can be set")
	code, stdout, stderr = runApp(t, "map", "--list-profiles", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Default  string `json:"default"`
		Profiles []struct {
			Name      string `json:"name"`
			Default   bool   `json:"default"`
			Variables []struct {
				Name        string `json:"name"`
				Default     bool   `json:"default"`
				Unsupported string `json:"unsupported"`
			} `json:"variables"`
			Pinned struct {
				Files     map[string]string `json:"files"`
				NotAtLine []string          `json:"not_at_line"`
				Open      []string          `json:"open"`
			} `json:"pinned"`
		} `json:"profiles"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Equal(t, "qwen36-mtp@pr55548", doc.Default)
	require.Len(t, doc.Profiles, 2)
	assert.True(t, doc.Profiles[0].Default)
	main := doc.Profiles[1]
	require.Equal(t, "qwen36@main-2026-10", main.Name)
	var names []string
	for _, v := range main.Variables {
		names = append(names, v.Name)
		if v.Name == "gdn_fused_decode_enabled" {
			assert.True(t, v.Default)
			assert.Empty(t, v.Unsupported)
		}
	}
	assert.Contains(t, names, "gdn_fused_decode_enabled")
	// The MTP line has no file at its head; main has gdn/tp.py, mlp.py,
	// tp_common.py, model.py and attention/tp.py at db6dc348.
	assert.Len(t, doc.Profiles[0].Pinned.NotAtLine, len(doc.Profiles[0].Pinned.Files))
	for _, f := range []string{"gdn/tp.py", "mlp.py", "tp_common.py", "model.py", "attention/tp.py"} {
		assert.NotContains(t, main.Pinned.NotAtLine, "models/demos/blackhole/qwen36/tt/"+f)
		assert.True(t, strings.HasPrefix(main.Pinned.Files["models/demos/blackhole/qwen36/tt/"+f], "db6dc348aa32b978b8602682dbae1e4aab8b6511"), f)
	}
	assert.Len(t, main.Pinned.NotAtLine, len(main.Pinned.Files)-5)
	assert.NotEmpty(t, main.Pinned.Open)
	// The MTP line names the stored revision that writes the fused-SwiGLU file.
	assert.True(t, strings.HasPrefix(doc.Profiles[0].Pinned.Files["models/demos/blackhole/qwen36/tt/mlp.py"],
		"db6dc348aa32b978b8602682dbae1e4aab8b6511 (the stored revision read that writes mlp.gate_up.weight.swiglu.tp"))
	code, _, stderr = runApp(t, "map", "--list-profiles", "--dump")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--list-profiles takes no")
	code, _, stderr = runApp(t, "map", "--list-profiles", t.TempDir())
	assert.Equal(t, 2, code, "a SRC is not silently ignored")
	assert.Contains(t, stderr, "--list-profiles takes no SRC")

	dir := fullScale(t, "fp8")
	count := func(profile string) (colpar, mtp int) {
		code, stdout, stderr := runApp(t, "map", dir, "--profile", profile, "--format", "json")
		require.Equal(t, 0, code, stderr)
		var res struct {
			Entries []struct {
				Target string `json:"target"`
			} `json:"entries"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		for _, e := range res.Entries {
			if strings.HasSuffix(e.Target, "/tp/out.colpar") {
				colpar++
			}
			if strings.HasPrefix(e.Target, "mtp/") {
				mtp++
			}
		}
		return
	}
	colpar, mtp := count("qwen36@main-2026-10")
	assert.Equal(t, 48, colpar)
	assert.Zero(t, mtp)
	colpar, mtp = count("qwen36-mtp@pr55548")
	assert.Zero(t, colpar)
	assert.Equal(t, 17, mtp)
	_, mtp = count("qwen3_5-tt") // the former name still plans
	assert.Equal(t, 17, mtp)
}

// TestMapOptionsErrors: every refusal of map's options (now made by
// mapping.Run) exits 2 with the message the command always printed, before
// the source is read.
func TestMapOptionsErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "absent")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"match with dump", []string{"map", "--dump", "--match", "x"},
			"ckpt: --match and --exclude select the targets map lists; they do not apply to --dump or --against-cache\n"},
		{"list with src", []string{"map", "--list-profiles", missing}, "ckpt: --list-profiles takes no SRC, --dump, --against-cache, --match or --exclude\n"},
		{"bad dram", []string{"map", missing, "--device-dram", "0"}, "ckpt: --device-dram: want a positive size, got \"0\"\n"},
		{"bad setting", []string{"map", missing, "--set", "x"}, "ckpt: --set: setting \"x\": want NAME=VALUE\n"},
		{"unknown profile", []string{"map", "--dump", "--profile", "nope"},
			"ckpt: unknown profile \"nope\" (built-in: " + strings.Join(mapping.BuiltinNames(), ", ") + ")\n"},
		{"bad device", []string{"map", "--dump", "--device", "a/b"},
			"ckpt: device folder \"a/b\": want one path element such as P300 or P150x4\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runApp(t, tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tc.want, stderr)
		})
	}
}

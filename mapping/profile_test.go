package mapping_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuiltinRoundTrips(t *testing.T) {
	t.Parallel()
	p := builtin(t)
	require.NoError(t, p.Validate())
	b, err := p.JSON()
	require.NoError(t, err)
	q, err := mapping.LoadProfile(bytes.NewReader(b), "dump")
	require.NoError(t, err)
	assert.Equal(t, p, q)
	_, err = mapping.Builtin("nope")
	assert.Error(t, err)
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	ok := `{"id":"a","target":"layers.{L}/x","sources":["m.layers.{L}.w"],"placement":{"kind":"replicate"},"dtype":"BFLOAT16","layout":"TILE","memory":"dram_interleaved"`
	tests := []struct{ name, json, want string }{
		{"unknown field", `{"name":"p","rules":[` + ok + `,"colour":1}]}`, "unknown field"},
		{"no rules", `{"name":"p","rules":[]}`, "no rules"},
		{"bad dtype", `{"name":"p","rules":[` + strings.Replace(ok, "BFLOAT16", "FP8", 1) + `}]}`, "dtype"},
		{"bfp8 row major", `{"name":"p","rules":[` + strings.Replace(strings.Replace(ok, "BFLOAT16", "BFLOAT8_B", 1), `"TILE"`, `"ROW_MAJOR"`, 1) + `}]}`, "needs TILE"},
		{"target capture unknown", `{"name":"p","rules":[` + strings.Replace(ok, "layers.{L}/x", "layers.{M}/x", 1) + `}]}`, "no source captures"},
		{"escaping target", `{"name":"p","rules":[` + strings.Replace(ok, "layers.{L}/x", "../x", 1) + `}]}`, "path element"},
		{"partial capture", `{"name":"p","rules":[` + strings.Replace(ok, "m.layers.{L}.w", "m.layers.x{L}.w", 1) + `}]}`, "whole dotted segment"},
		{"shard without split", `{"name":"p","rules":[` + strings.Replace(ok, `{"kind":"replicate"}`, `{"kind":"shard","dim":-1}`, 1) + `}]}`, "split"},
		{"unknown op", `{"name":"p","rules":[` + ok + `,"transform":[{"op":"scale"}]}]}`, "unknown op"},
		{"steps out of order", `{"name":"p","rules":[` + ok + `,"transform":[{"op":"transpose"},{"op":"fuse","parts":[{"source":0,"label":"x"}]}]}]}`, "out of order"},
		{"bad expression", `{"name":"p","rules":[` + ok + `,"transform":[{"op":"reshape","shape":["rows/"]}]}]}`, "expression"},
		{"part source out of range", `{"name":"p","rules":[` + ok + `,"transform":[{"op":"fuse","parts":[{"source":3,"label":"x"}]}]}]}`, "names source 3"},
		{"ignore without reason", `{"name":"p","rules":[` + ok + `}],"ignore":[{"prefix":"model.visual."}]}`, "no reason"},
		{"ignore condition on an undeclared variable", `{"name":"p","rules":[` + ok + `}],"ignore":[{"prefix":"model.visual.","reason":"r","when":{"var":"nope","op":"true"}}]}`, "ignore rule 0: condition on \"nope\""},
		{"duplicate id", `{"name":"p","rules":[` + ok + `},` + ok + `}]}`, "used twice"},
		{"condition on an undeclared variable", `{"name":"p","rules":[` + ok + `,"when":{"var":"proj_1d_decode","op":"true"}}]}`, "no such variable"},
		{"condition with key and var", `{"name":"p","variables":[{"name":"v","default":true,"doc":"d"}],"rules":[` + ok + `,"when":[{"key":"k","var":"v","op":"true"}]}]}`, "exactly one of key, var and expr"},
		{"bad variable name", `{"name":"p","variables":[{"name":"1v","default":true,"doc":"d"}],"rules":[` + ok + `}]}`, "not an identifier"},
		{"mesh axes on replicate", `{"name":"p","rules":[` + strings.Replace(ok, `{"kind":"replicate"}`, `{"kind":"replicate","mesh_axes":["replicate","shard"]}`, 1) + `}]}`, "needs a shard placement"},
		{"mesh axes without a shard", `{"name":"p","rules":[` + strings.Replace(ok, `{"kind":"replicate"}`, `{"kind":"shard","dim":2,"split":"rows","mesh_axes":["replicate","replicate"]}`, 1) + `}]}`, "exactly one of them shard"},
		{"unknown mesh axis placement", `{"name":"p","rules":[` + strings.Replace(ok, `{"kind":"replicate"}`, `{"kind":"shard","dim":2,"split":"rows","mesh_axes":["replicate","split"]}`, 1) + `}]}`, "want replicate or shard"},
		{"upper-case target variable", `{"name":"p","rules":[` + strings.Replace(ok, "layers.{L}/x", "layers.{L}/x{N + 1}", 1) + `}]}`, "not a config variable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := mapping.LoadProfile(strings.NewReader(tc.json), "p.json")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestConditionsJSON: a rule's conditions are one object or an array.
func TestConditionsJSON(t *testing.T) {
	t.Parallel()
	rule := `{"id":"a","target":"x","sources":["m.w"],"placement":{"kind":"replicate"},"dtype":"BFLOAT16","layout":"TILE","memory":"dram_interleaved","when":%s}`
	vars := `"variables":[{"name":"v","default":true,"doc":"d"}]`
	one, err := mapping.LoadProfile(strings.NewReader(`{"name":"p",`+vars+`,"rules":[`+fmt.Sprintf(rule, `{"key":"k","op":"true"}`)+`]}`), "one")
	require.NoError(t, err)
	assert.Equal(t, mapping.Conditions{{Key: "k", Op: "true"}}, one.Rules[0].When)
	two, err := mapping.LoadProfile(strings.NewReader(`{"name":"p",`+vars+`,"rules":[`+fmt.Sprintf(rule, `[{"key":"k","op":"true"},{"var":"v","op":"false"}]`)+`]}`), "two")
	require.NoError(t, err)
	assert.Equal(t, mapping.Conditions{{Key: "k", Op: "true"}, {Var: "v", Op: "false"}}, two.Rules[0].When)
	b, err := two.JSON()
	require.NoError(t, err)
	back, err := mapping.LoadProfile(bytes.NewReader(b), "back")
	require.NoError(t, err)
	assert.Equal(t, two, back)
	_, err = mapping.LoadProfile(strings.NewReader(`{"name":"p","rules":[`+fmt.Sprintf(rule, `{"key":"k","op":"true","colour":1}`)+`]}`), "bad")
	assert.ErrorContains(t, err, "unknown field")
}

func TestEval(t *testing.T) {
	t.Parallel()
	vars := mapping.Vars{"hidden_size": 5120, "N": 2, "rows": 160}
	tests := []struct {
		expr string
		want int64
		err  string
	}{
		{"hidden_size/32", 160, ""},
		{"2*hidden_size + 3", 10243, ""},
		{"(hidden_size - 120) / (N*2)", 1250, ""},
		{"rows/32", 5, ""},
		{"hidden_size/3", 0, "not exact"},
		{"heads", 0, "unknown variable"},
		{"1 +", 0, "unexpected end"},
		{"(1", 0, "missing )"},
		{"4/0", 0, "division by zero"},
		{"1 2", 0, "unexpected"},
	}
	for _, tc := range tests {
		got, err := mapping.Eval(tc.expr, vars)
		if tc.err != "" {
			require.Error(t, err, tc.expr)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err, tc.expr)
		assert.Equal(t, tc.want, got, tc.expr)
	}
}

func TestParseMesh(t *testing.T) {
	t.Parallel()
	m, err := mapping.ParseMesh("1X4")
	require.NoError(t, err)
	assert.Equal(t, mapping.Mesh{Rows: 1, Cols: 4}, m)
	assert.Equal(t, 4, m.Devices())
	for _, bad := range []string{"", "2", "0x2", "1x", "ax2", "1x100"} {
		_, err := mapping.ParseMesh(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, "P300/tensor_cache_bfp8_mesh1x2", mapping.CacheDir("P300", "bfp8", mapping.Mesh{Rows: 1, Cols: 2}))
	assert.Equal(t, "layers.3/tp/wo_dtype_BFLOAT8_B_layout_TILE.tensorbin", mapping.FileName("layers.3/tp/wo", "BFLOAT8_B", "TILE"))
	assert.Equal(t, "layers.3/tp/wo", mapping.CacheName(mapping.FileName("layers.3/tp/wo", "BFLOAT8_B", "TILE")))
}

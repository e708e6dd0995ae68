package ckpt_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeaderJSONAsSerde: what the header reader accepts and refuses, case
// by case as safetensors 0.8.0 does (measured; the interop suite's
// test_differential.py checks the same against the wheel).
func TestHeaderJSONAsSerde(t *testing.T) {
	t.Parallel()
	const e = `"dtype":"F32","shape":[2],"data_offsets":[0,8]`
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		name, hdr string
		err       string // "" = accepted
		tensor    string // the one tensor's name when accepted
		lint      string
	}{
		{"plain", `{"w":{` + e + `}}`, "", "w", ""},
		{"escaped field name", `{"w":{"d\u0074ype":"F32","shape":[2],"data_offsets":[0,8]}}`, "", "w", ""},
		{"escaped dtype", `{"w":{"dtype":"F\u0033\u0032","shape":[2],"data_offsets":[0,8]}}`, "", "w", ""},
		{"surrogate pair", `{"w\ud83d\uDE00":{` + e + `}}`, "", "w\U0001F600", ""},
		{"escapes", `{"a\"\\\/\b\f\n\r\t\u0000":{` + e + `}}`, "", "a\"\\/\b\f\n\r\t\x00", ""},
		{"DEL and U+FFFF", "{\"w\x7f\\uffff\":{" + e + "}}", "", "w\x7f\uffff", ""},
		{"unknown field twice", `{"w":{` + e + `,"x":1,"x":{"y":[true,null]}}}`, "", "w", ""},
		{"big integer in an unknown field", `{"w":{` + e + `,"x":123456789012345678901234567890}}`, "", "w", ""},
		{"underflow in an unknown field", `{"w":{` + e + `,"x":1e-400}}`, "", "w", ""},
		{"largest float", `{"w":{` + e + `,"x":1.7976931348623157e308}}`, "", "w", ""},
		{"array form", `{"w":["F32",[2],[0,8]]}`, "", "w", "header.form"},
		{"dtype as a map", `{"w":{"dtype":{"F32":null},"shape":[2],"data_offsets":[0,8]}}`, "", "w", "header.form"},
		{"depth 127", `{"w":{` + e + `,"x":` + deep(125) + `}}`, "", "w", ""},
		{"metadata key twice", `{"__metadata__":{"k":"a","k":"b"},"w":{` + e + `}}`, "", "w", ""},

		{"dtype twice", `{"w":{"dtype":"F32",` + e + `}}`, "duplicate field dtype", "", ""},
		{"depth 128", `{"w":{` + e + `,"x":` + deep(126) + `}}`, "nested deeper than 127", "", ""},
		{"lone high surrogate", `{"w\ud800":{` + e + `}}`, `invalid escape \uD800`, "", ""},
		{"high then high", `{"w\ud800\ud800":{` + e + `}}`, `invalid escape \uD800\uD800`, "", ""},
		{"high then escape", `{"w\ud800\n":{` + e + `}}`, `invalid escape \uD800`, "", ""},
		{"lone low surrogate", `{"w\uDFFF":{` + e + `}}`, `invalid escape \uDFFF`, "", ""},
		{"short \\u", `{"w\u12":{` + e + `}}`, `not 4 hex digits`, "", ""},
		{"unknown escape", `{"w\a":{` + e + `}}`, `invalid escape "\\a"`, "", ""},
		{"raw tab", "{\"w\t\":{" + e + "}}", "control character 0x09", "", ""},
		{"float overflow", `{"w":{` + e + `,"x":-1e400}}`, "number out of range", "", ""},
		{"float just above the largest", `{"w":{` + e + `,"x":1.7976931348623159e308}}`, "number out of range", "", ""},
		{"integer beyond float64", `{"w":{` + e + `,"x":1` + strings.Repeat("0", 400) + `}}`, "number out of range", "", ""},
		{"leading zero", `{"w":{` + e + `,"x":01}}`, "leading zero", "", ""},
		{"NaN", `{"w":{` + e + `,"x":NaN}}`, "NaN and Infinity are not JSON", "", ""},
		{"-Infinity", `{"w":{` + e + `,"x":-Infinity}}`, "NaN and Infinity are not JSON", "", ""},
		{"trailing comma in an entry", `{"w":{` + e + `,}}`, "trailing comma", "", ""},
		{"trailing comma", `{"w":{` + e + `},}`, "trailing comma", "", ""},
		{"array form too short", `{"w":["F32",[2]]}`, "must have 3 elements", "", ""},
		{"array form too long", `{"w":["F32",[2],[0,8],1]}`, "found more", "", ""},
		{"dtype map of two", `{"w":{"dtype":{"F32":null,"F16":null},"shape":[2],"data_offsets":[0,8]}}`, "dtype must be a string", "", ""},
		{"dtype map not null", `{"w":{"dtype":{"F32":{}},"shape":[2],"data_offsets":[0,8]}}`, "dtype must be a string", "", ""},
		{"upper-case field", `{"w":{"DTYPE":"F32","shape":[2],"data_offsets":[0,8]}}`, "missing field dtype", "", ""},
		{"__METADATA__ is a tensor", `{"__METADATA__":{"k":"v"},"w":{` + e + `}}`, `tensor "__METADATA__"`, "", ""},
		{"tensor name twice", `{"w":{` + e + `},"w":{` + e + `}}`, "duplicate tensor name", "", ""},
		{"metadata twice, escaped", `{"__metadata__":{},"\u005f_metadata__":{}}`, "duplicate key __metadata__", "", ""},
		{"negative zero dim", `{"w":{"dtype":"F32","shape":[-0],"data_offsets":[0,8]}}`, "non-negative integers", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, err := ckpt.ParseHeader([]byte(c.hdr), "x.safetensors")
			if c.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ckpt.ErrMalformed)
				assert.Contains(t, err.Error(), c.err)
				assert.Contains(t, err.Error(), "x.safetensors")
				return
			}
			require.NoError(t, err)
			require.Len(t, h.Tensors, 1)
			assert.Equal(t, c.tensor, h.Tensors[0].Name)
			assert.Equal(t, numfmt.F32, h.Tensors[0].DType)
			assert.Equal(t, []int64{2}, h.Tensors[0].Shape)
			assert.Equal(t, uint64(8), h.Tensors[0].End)
			var lints []string
			for _, l := range h.Lints {
				lints = append(lints, string(l.ID))
			}
			if c.lint != "" {
				assert.Contains(t, lints, c.lint)
			} else {
				assert.NotContains(t, lints, "header.form")
			}
		})
	}
}

// TestIndexPolicy: the index is read as json.load + ["weight_map"] reads
// it, and refused where that reading is ambiguous (docs/formats.md).
func TestIndexPolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		err       string
		want      []ckpt.IndexEntry
		dups      []string
	}{
		{"plain", `{"metadata":{"total_size":8},"weight_map":{"a":"s1","b":"s2"}}`, "", []ckpt.IndexEntry{{"a", "s1"}, {"b", "s2"}}, nil},
		{"other keys", `{"WEIGHT_MAP":{"x":"y"},"weight_map":{"a":"s1"},"Weight_Map":{"z":"w"}}`, "", []ckpt.IndexEntry{{"a", "s1"}}, nil},
		{"escaped key", `{"w\u0065ight_map":{"\u0061":"s\u0031"}}`, "", []ckpt.IndexEntry{{"a", "s1"}}, nil},
		{"entry twice: the last shard", `{"weight_map":{"a":"s1","b":"s2","a":"s3"}}`, "", []ckpt.IndexEntry{{"a", "s3"}, {"b", "s2"}}, []string{"a"}},
		{"metadata null", `{"metadata":null,"weight_map":{}}`, "", nil, nil},

		{"only WEIGHT_MAP", `{"WEIGHT_MAP":{"a":"s1"}}`, `index has no weight_map (it has "WEIGHT_MAP"`, nil, nil},
		{"weight_map twice", `{"weight_map":{},"weight_map":{"a":"s1"}}`, `at byte 17: duplicate key "weight_map" in the index`, nil, nil},
		{"metadata key twice", `{"metadata":{"total_size":1,"total_size":2},"weight_map":{}}`, `duplicate key "total_size"`, nil, nil},
		{"lone surrogate", `{"weight_map":{"a\udc00":"s1"}}`, `invalid escape \uDC00`, nil, nil},
		{"NaN", `{"metadata":{"total_size":NaN},"weight_map":{}}`, "NaN and Infinity are not JSON", nil, nil},
		{"1e999", `{"metadata":{"total_size":1e999},"weight_map":{}}`, "number out of range", nil, nil},
		{"deep", `{"metadata":{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `},"weight_map":{}}`, "nested deeper than 512", nil, nil},
		{"metadata an array", `{"metadata":[],"weight_map":{}}`, "metadata must not be a JSON array", nil, nil},
		{"value a number", `{"weight_map":{"a":1}}`, `tensor "a": at byte 19: weight_map value must be a shard file name, found a number`, nil, nil},
		{"invalid UTF-8", "{\"weight_map\":{\"a\xff\":\"s\"}}", "at byte 17: invalid UTF-8", nil, nil},
		{"BOM", "\ufeff{\"weight_map\":{}}", "expected a JSON object", nil, nil},
		{"trailing data", `{"weight_map":{}} x`, "trailing characters", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			idx, err := ckpt.ParseIndex([]byte(c.doc), "idx.json")
			if c.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ckpt.ErrMalformed)
				assert.Contains(t, err.Error(), "idx.json")
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, idx.WeightMap)
			assert.Equal(t, c.dups, idx.Duplicates)
		})
	}
}

// TestDuplicateAcrossShards: a tensor stored in two shards is a failure of
// opening when the copies differ, a warning when they are byte-identical.
func TestDuplicateAcrossShards(t *testing.T) {
	t.Parallel()
	mk := func(t *testing.T, second []byte) string {
		dir := t.TempDir()
		a := ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.U8, Shape: []int64{4}}, Data: []byte{1, 2, 3, 4}}
		b := ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "b", DType: numfmt.U8, Shape: []int64{2}}, Data: []byte{5, 6}}
		dup := ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.U8, Shape: []int64{int64(len(second))}}, Data: second}
		require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "s1.safetensors"), []ckpt.MemTensor{a}, nil))
		require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "s2.safetensors"), []ckpt.MemTensor{b, dup}, nil))
		require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), []byte(`{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`), 0o644))
		return dir
	}
	for _, c := range []struct {
		name   string
		second []byte
		status ckpt.Status
		msg    string
	}{
		{"identical", []byte{1, 2, 3, 4}, ckpt.Warn, `in byte-identical copies (first: "a" in s1.safetensors and s2.safetensors)`},
		{"bytes differ", []byte{1, 2, 9, 4}, ckpt.Fail, `with different contents, and loaders disagree on which copy they take (first: "a" in s1.safetensors and s2.safetensors: same dtype and shape, bytes differ from byte 2 of 4)`},
		{"shape differs", []byte{1, 2, 3}, ckpt.Fail, `U8 [4] in s1.safetensors, U8 [3] in s2.safetensors`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := mk(t, c.second)
			lc, err := ckpt.Open(context.Background(), dir, ckpt.Options{Lenient: true})
			require.NoError(t, err)
			defer lc.Close()
			var got []ckpt.Finding
			for _, is := range lc.Issues {
				if is.ID == "index.tensor_duplicate" {
					got = append(got, is)
				}
			}
			require.Len(t, got, 1)
			assert.Equal(t, c.status, got[0].Status)
			assert.Contains(t, got[0].Message, c.msg)
			assert.Equal(t, []string{"a"}, got[0].Tensors)
			assert.Equal(t, []string{"s1.safetensors", "s2.safetensors"}, got[0].Files)
			tn, ok := lc.Lookup("a")
			require.True(t, ok)
			assert.Equal(t, "s1.safetensors", tn.File.Name, "the copy the index names is read")

			c2, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
			if c.status == ckpt.Fail {
				require.Error(t, err)
				assert.ErrorIs(t, err, ckpt.ErrMalformed)
				assert.Contains(t, err.Error(), c.msg)
				return
			}
			require.NoError(t, err)
			c2.Close()
		})
	}
}

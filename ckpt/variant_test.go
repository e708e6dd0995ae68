package ckpt

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVariantsOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   []string
		entries map[string]string
		belongs []string // files that are a variant's
	}{
		{"sharded", []string{"config.json", "model.safetensors.index.fp16.json", "model.fp16-00001-of-00002.safetensors", "model.fp16-00002-of-00002.safetensors"},
			map[string]string{"fp16": "model.safetensors.index.fp16.json"},
			[]string{"model.safetensors.index.fp16.json", "model.fp16-00001-of-00002.safetensors", "model.fp16-00002-of-00002.safetensors"}},
		{"single beside the default", []string{"model.safetensors", "model.fp16.safetensors"},
			map[string]string{"fp16": "model.fp16.safetensors"}, []string{"model.fp16.safetensors"}},
		{"index before single", []string{"model.bf16.safetensors", "model.safetensors.index.bf16.json"},
			map[string]string{"bf16": "model.safetensors.index.bf16.json"}, []string{"model.bf16.safetensors", "model.safetensors.index.bf16.json"}},
		{"default shards are no variant", []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}, map[string]string{}, nil},
		{"shards without their index are no variant", []string{"model.fp16-00001-of-00002.safetensors"}, map[string]string{}, nil},
		{"a dotted name", []string{"model.a.b.safetensors"}, map[string]string{"a.b": "model.a.b.safetensors"}, []string{"model.a.b.safetensors"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vd := variantsOf(tc.files)
			assert.Equal(t, tc.entries, vd.entry)
			for _, f := range tc.files {
				want := false
				for _, b := range tc.belongs {
					want = want || b == f
				}
				assert.Equal(t, want, vd.belongs(f), f)
			}
			for v, e := range vd.entry {
				assert.Equal(t, v, variantOfEntry(e))
			}
		})
	}
}

func TestVariantFilesAndCheck(t *testing.T) {
	t.Parallel()
	single, index := VariantFiles("fp16")
	assert.Equal(t, "model.fp16.safetensors", single)
	assert.Equal(t, "model.safetensors.index.fp16.json", index)
	single, index = VariantFiles("")
	assert.Equal(t, SingleFile, single)
	assert.Equal(t, IndexFile, index)
	assert.NoError(t, checkVariant("fp16"))
	for _, bad := range []string{"", "a/b", `a\b`, " fp16", "x\x00"} {
		var ve *VariantError
		err := checkVariant(bad)
		assert.ErrorAs(t, err, &ve, "%q", bad)
		assert.ErrorIs(t, err, ErrUsage, "%q", bad)
		assert.NotContains(t, err.Error(), "--", "%q", bad)
	}
}

func TestDeclaredDType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		config string
		want   Declared
		ok     bool
	}{
		{`{"dtype": "float32", "torch_dtype": "bfloat16"}`, Declared{numfmt.F32, "dtype", "float32"}, true},
		{`{"torch_dtype": "float16"}`, Declared{numfmt.F16, "torch_dtype", "float16"}, true},
		{`{"text_config": {"dtype": "bfloat16"}}`, Declared{numfmt.BF16, "text_config.dtype", "bfloat16"}, true},
		{`{"dtype": "bfloat16", "text_config": {"dtype": "float32"}}`, Declared{numfmt.BF16, "dtype", "bfloat16"}, true},
		{`{"dtype": null, "text_config": {"torch_dtype": "torch.float32"}}`, Declared{numfmt.F32, "text_config.torch_dtype", "torch.float32"}, true},
		{`{"dtype": "int8"}`, Declared{"", "dtype", "int8"}, true},
		{`{"hidden_size": 4}`, Declared{}, false},
	} {
		cfg, err := ParseConfig([]byte(tc.config), "config.json")
		require.NoError(t, err)
		got, ok := cfg.DeclaredDType()
		assert.Equal(t, tc.ok, ok, tc.config)
		assert.Equal(t, tc.want, got, tc.config)
	}
}

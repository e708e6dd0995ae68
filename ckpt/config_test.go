package ckpt

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// referenceConfig decodes as encoding/json does with UseNumber (the
// reader before ParseConfig had its own).
func referenceConfig(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	return m
}

// TestParseConfigAsBefore: every config the old reader took without an
// ambiguity reads to the same values.
func TestParseConfigAsBefore(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{}`,
		` {"a": 1, "b": [1, 2.5, -3e-7, 1E+2, 0], "c": {"d": null, "e": true, "f": false}, "g": ""}` + "\n",
		`{"s": "tab\there \"quoted\" \\ \/ \u00e9 \ud83d\ude00 \u0000", "n": 12345678901234567890123}`,
		`{"nested": [[[]], [{}], {"x": [{"y": []}]}], "big": 1e308, "tiny": 1e-400}`,
		`{"text_config": {"hidden_size": 5120, "layer_types": ["linear_attention", "full_attention"], "rope_parameters": {"mrope_section": [11, 11, 10]}}}`,
	}
	for _, d := range docs {
		c, err := ParseConfig([]byte(d), "config.json")
		require.NoError(t, err, d)
		assert.Equal(t, referenceConfig(t, []byte(d)), c.Raw, d)
	}
	// A real config: the 27B's shape (synth writes the demo's).
	data := []byte(`{"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": {"hidden_size": 5120, "num_hidden_layers": 64, "rms_norm_eps": 1e-06, "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head", "model.visual"]}}, "tie_word_embeddings": false, "vision_config": {"depth": 27, "hidden_act": "gelu_pytorch_tanh"}}`)
	c, err := ParseConfig(data, "config.json")
	require.NoError(t, err)
	assert.Equal(t, referenceConfig(t, data), c.Raw)

	for _, tc := range []struct{ doc, want string }{
		{``, "empty document"},
		{`[1]`, "expected a JSON object, found an array"},
		{`{"a": 1} x`, "trailing characters"},
		{`{"a": 1, "a": 2}`, `duplicate key "a"`},
		{`{"a": {"b": 1, "b": 1}}`, `duplicate key "b"`},
		{`{"a": "\ud800"}`, "high surrogate"},
		{`{"a": NaN}`, "NaN"},
		{`{"a": 1e999}`, "out of range"},
		{`{"a": [1,]}`, "trailing comma"},
		{"{\"a\": \"\xff\"}", "invalid UTF-8"},
		{`{"a": ` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, "nested deeper than 512"},
	} {
		_, err := ParseConfig([]byte(tc.doc), "config.json")
		require.Error(t, err, tc.doc)
		assert.Contains(t, err.Error(), tc.want, tc.doc)
		var fe *FormatError
		assert.ErrorAs(t, err, &fe)
	}
}

// allocated is what f allocates, the least of two runs (the test runs
// alone: no other test of the package is parallel to it).
func allocated(f func()) uint64 {
	best := ^uint64(0)
	for range 2 {
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		best = min(best, b.TotalAlloc-a.TotalAlloc)
	}
	return best
}

// configShapes are configs of about n bytes in the shapes that make a
// parsed JSON tree largest against its text.
func configShapes(n int) map[string][]byte {
	wrap := func(open, item, close string) []byte {
		b := make([]byte, 0, n+len(item)+64)
		b = append(b, `{"model_type": "x", "junk": `+open...)
		for i := 0; len(b) < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			for j := 0; j < len(item); j++ {
				if item[j] == '#' {
					b = strconv.AppendInt(b, int64(i), 10)
				} else {
					b = append(b, item[j])
				}
			}
		}
		return append(b, close+"}"...)
	}
	return map[string][]byte{
		"zeros":      wrap("[", "0", "]"),
		"floats":     wrap("[", "1.5", "]"),
		"exponents":  wrap("[", "1e5", "]"),
		"empties":    wrap("[", `{}`, "]"),
		"arrays":     wrap("[", `[]`, "]"),
		"strings":    wrap("[", `"x"`, "]"),
		"nulls":      wrap("[", `null`, "]"),
		"keys":       wrap("{", `"k#":0`, "}"),
		"escapes":    wrap("[", `"\u00e9\n"`, "]"),
		"nested":     wrap("[", `[[0],{"a":[1]}]`, "]"),
		"id2label":   wrap("{", "\n    \"#\": \"LABEL_#\"", "}"),
		"labels":     wrap("{", "\n    \"#\": \"n0#, a rather long human-readable class name\"", "}"),
		"long":       wrap("[", `"`+strings.Repeat("abcdefgh", 64)+`"`, "]"),
		"pretty":     wrap("{", "\n    \"setting_number_#\": {\n      \"value\": #,\n      \"enabled\": true\n    }", "}"),
		"long-array": wrap("[", "\n      \"linear_attention\"", "]"),
	}
}

// TestConfigMemoryBounded: parsing a config allocates at most
// ConfigMemoryFactor times its size plus ConfigMemorySlack, whatever its
// shape: a config whose tree would need more is refused (before anything
// is built), one that fits is read (and its first pass's estimate is
// never below what it allocates). Before, a 1 MiB array of zeros took 55
// times its size (and a 62 MB one, 2.5 GB).
func TestConfigMemoryBounded(t *testing.T) {
	const n = 2 << 20
	budget := uint64(ConfigMemoryFactor*n + ConfigMemorySlack)
	var read, refused []string
	for name, data := range configShapes(n) {
		var err error
		got := allocated(func() { _, err = ParseConfig(data, "config.json") })
		ratio := float64(got) / float64(len(data))
		if err != nil {
			assert.Contains(t, err.Error(), "config too dense to read", name)
			refused = append(refused, name)
		} else {
			_, est, perr := planConfig(data, 1<<62)
			require.NoError(t, perr)
			assert.GreaterOrEqual(t, uint64(est), got, "%s: the estimate bounds the allocations", name)
			read = append(read, name)
		}
		t.Logf("%-10s %8d bytes: %s, allocated %.2f× its size", name, len(data), map[bool]string{true: "refused", false: "read"}[err != nil], ratio)
		assert.LessOrEqual(t, got, budget+uint64(len(data))/8, "%s: allocated %.1f× its size", name, ratio)
	}
	// Long keys, labels and strings are read; arrays and objects of tiny
	// values, and small objects by the thousand (an empty Go map takes 336
	// bytes), are refused.
	assert.ElementsMatch(t, []string{"id2label", "labels", "long", "long-array", "nulls"}, read, "refused: %v", refused)

	// Above MaxConfigSize, refused without parsing.
	big := configShapes(MaxConfigSize + 1)["long"]
	_, err := ParseConfig(big, "config.json")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than the 16777216 (16.0 MiB) ckpt reads for a config")
}

// TestConfigOversizeRefusedBeforeRead: a config.json (or an
// hf_quant_config.json) over MaxConfigSize is refused by Open without
// reading it, naming the file.
func TestConfigOversizeRefusedBeforeRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      "), 0o644))
	f, err := os.Create(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxConfigSize+1)) // sparse: never read
	require.NoError(t, f.Close())
	_, err = Open(t.Context(), dir, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config.json")
	assert.Contains(t, err.Error(), "more than the 16777216")

	// ModelOpt's hf_quant_config.json, read beside a checkpoint whose
	// tensors look quantised and whose config.json declares nothing.
	dir = t.TempDir()
	require.NoError(t, WriteFile(filepath.Join(dir, "model.safetensors"), []MemTensor{
		{WriteSpec: WriteSpec{Name: "m.weight", DType: numfmt.U8, Shape: []int64{2}}, Data: []byte{1, 2}},
		{WriteSpec: WriteSpec{Name: "m.weight_scale", DType: numfmt.F32, Shape: []int64{1}}, Data: []byte{0, 0, 128, 63}},
	}, nil))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "x"}`), 0o644))
	f, err = os.Create(filepath.Join(dir, "hf_quant_config.json"))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(MaxConfigSize+1))
	require.NoError(t, f.Close())
	_, err = Open(t.Context(), dir, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hf_quant_config.json")
	assert.Contains(t, err.Error(), "more than the 16777216")

	// Neither is read: no byte of either file is asked for.
	for _, name := range []string{"hf_quant_config.json", "config.json"} {
		if name == "config.json" {
			require.NoError(t, os.Truncate(filepath.Join(dir, "hf_quant_config.json"), 2))
			require.NoError(t, os.Truncate(filepath.Join(dir, "config.json"), MaxConfigSize+1))
		}
		ds, err := NewDirStore(dir)
		require.NoError(t, err)
		cs := &countingStore{Store: ds, reads: map[string]int{}}
		_, err = OpenStore(t.Context(), cs, "", Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), name)
		assert.Zero(t, cs.reads[name], "%s: refused before a byte of it is read", name)
	}
}

// countingStore counts the ReadAt calls of each file of its store.
type countingStore struct {
	Store
	mu    sync.Mutex
	reads map[string]int
}

func (s *countingStore) Open(ctx context.Context, name string) (Blob, error) {
	b, err := s.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &countingBlob{Blob: b, s: s, name: name}, nil
}

type countingBlob struct {
	Blob
	s    *countingStore
	name string
}

func (b *countingBlob) ReadAt(p []byte, off int64) (int, error) {
	b.s.mu.Lock()
	b.s.reads[b.name]++
	b.s.mu.Unlock()
	return b.Blob.ReadAt(p, off)
}

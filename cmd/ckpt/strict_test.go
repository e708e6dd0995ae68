package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// addCopy stores mt in the shard of other (another shard than the one the
// index names for mt) without touching the index.
func addCopy(t *testing.T, dir, other string, mt ckpt.MemTensor) string {
	t.Helper()
	rewriteShard(t, dir, other, func(ts []ckpt.MemTensor) []ckpt.MemTensor { return append(ts, mt) })
	return shardOf(t, dir, other)
}

// readTensor returns the tensor name of dir as it is stored.
func readTensor(t *testing.T, dir, name string) ckpt.MemTensor {
	t.Helper()
	c, err := ckpt.Open(t.Context(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	tn, ok := c.Lookup(name)
	require.True(t, ok, name)
	data := make([]byte, tn.NBytes())
	_, err = tn.ReadAt(data, 0)
	require.NoError(t, err)
	return ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: tn.DType, Shape: tn.Shape}, Data: data}
}

// TestSecondCopyInAnotherShard (issue #27, case 2): a tensor stored a
// second time, in a shard the index does not name for it, is seen by
// every command. A different copy makes diff, inspect, map, cache build,
// extract and contract refuse (exit 2, naming the tensor and both shards; verify
// fails it, exit 1); a byte-identical copy is a warning.
func TestSecondCopyInAnotherShard(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	name := lm + "norm.weight"
	home := shardOf(t, base, name)
	orig := readTensor(t, base, name)

	t.Run("different", func(t *testing.T) {
		t.Parallel()
		ft := copyDir(t, base)
		changed := orig
		changed.Data = append([]byte(nil), orig.Data...)
		changed.Data[10] ^= 0x40
		other := addCopy(t, ft, upProj, changed)
		require.NotEqual(t, home, other)

		code, stdout, stderr := runApp(t, "diff", base, ft, "--progress", "none")
		assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
		assert.NotContains(t, stdout, "no differences")
		for _, want := range []string{"different contents", `"` + name + `"`, home, other, "bytes differ from byte 10"} {
			assert.Contains(t, stderr, want)
		}
		for _, args := range [][]string{
			{"inspect", ft},
			{"map", ft, "--summary"},
			{"cache", "build", ft, "--out", filepath.Join(t.TempDir(), "cache"), "--progress", "none"},
			{"extract", ft, "--match", name, "--out", filepath.Join(t.TempDir(), "x.safetensors"), "--progress", "none"},
			{"contract", ft, "-o", filepath.Join(t.TempDir(), "c.json")},
		} {
			code, _, stderr := runApp(t, args...)
			assert.Equal(t, 2, code, "%v: %s", args, stderr)
			assert.Contains(t, stderr, name, "%v", args)
			assert.Contains(t, stderr, other, "%v", args)
		}
		code, res, _ := verifyJSON(t, "verify", ft)
		assert.Equal(t, 1, code)
		var found bool
		for _, f := range res.Checks {
			if f.ID == "index.tensor_duplicate" && f.Status == "fail" {
				found = true
				assert.Contains(t, f.Message, other)
				assert.Contains(t, f.Tensors, name)
			}
		}
		assert.True(t, found, "verify reports index.tensor_duplicate")
	})

	t.Run("identical", func(t *testing.T) {
		t.Parallel()
		ft := copyDir(t, base)
		other := addCopy(t, ft, upProj, orig)
		code, stdout, stderr := runApp(t, "diff", base, ft, "--progress", "none")
		assert.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
		assert.Contains(t, stderr, "ckpt: warning: 1 tensor(s) are stored in more than one shard, in byte-identical copies (first: \""+name+"\" in "+home+" and "+other+")")
		for _, args := range [][]string{
			{"extract", ft, "--match", name, "--out", filepath.Join(t.TempDir(), "x.safetensors"), "--progress", "none"},
			{"map", ft, "--summary"},
		} {
			code, _, stderr = runApp(t, args...)
			assert.Equal(t, 0, code, "%v: %s", args, stderr)
			assert.Contains(t, stderr, "byte-identical copies", "%v", args)
		}
	})
}

// frame writes a single-file checkpoint with a hand-written header.
func frame(t *testing.T, hdr string, data int) string {
	t.Helper()
	b := make([]byte, 8+len(hdr)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	copy(b[8:], hdr)
	p := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// TestHeadersTheReferenceRefuses (issue #27, case 3): a duplicated field
// in a tensor entry and a lone surrogate escape are refused as
// safetensors 0.8.0 refuses them (exit 2 naming the reason), where verify
// used to pass them.
func TestHeadersTheReferenceRefuses(t *testing.T) {
	t.Parallel()
	const e = `"dtype":"F32","shape":[2],"data_offsets":[0,8]`
	cases := []struct{ name, hdr, want string }{
		{"dtype twice", `{"w":{"dtype":"I32",` + e + `}}`, `tensor "w": at byte 28: invalid JSON in header: duplicate field dtype`},
		{"shape twice", `{"w":{"shape":[8],` + e + `}}`, "duplicate field shape"},
		{"data_offsets twice", `{"w":{"data_offsets":[0,4],` + e + `}}`, "duplicate field data_offsets"},
		{"lone high surrogate", `{"w\ud800":{` + e + `}}`, `at byte 11: invalid JSON in header: invalid escape \uD800: a high surrogate not followed by a low surrogate`},
		{"lone low surrogate", `{"w\udc00":{` + e + `}}`, `invalid escape \uDC00`},
		{"surrogate in metadata", `{"__metadata__":{"k":"\ud800"},"w":{` + e + `}}`, `invalid escape \uD800`},
		{"surrogate in an unknown field", `{"w":{` + e + `,"x":"\udfff"}}`, `invalid escape \uDFFF`},
		{"invalid escape", `{"w\x":{` + e + `}}`, `invalid escape "\\x"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := frame(t, c.hdr, 8)
			code, _, stderr := runApp(t, "verify", src, "--read-data", "--progress", "none")
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, c.want)
			code, stdout, stderr := runApp(t, "inspect", src, "--format", "json")
			assert.Equal(t, 2, code, stdout)
			assert.Contains(t, stderr, c.want)
		})
	}
	// A surrogate pair is one character, as in the reference.
	src := frame(t, `{"w\ud83d\ude00":{`+e+`}}`, 8)
	code, stdout, stderr := runApp(t, "inspect", src, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res inspect.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Tensors, 1)
	assert.Equal(t, "w\U0001F600", res.Tensors[0].Name)
}

// TestIndexKeysAreCaseSensitive (issue #27, case 4): the index is read as
// transformers reads it (json.load, then ["weight_map"]).
func TestIndexKeysAreCaseSensitive(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	raw, err := os.ReadFile(filepath.Join(base, ckpt.IndexFile))
	require.NoError(t, err)
	var idx struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	require.NoError(t, json.Unmarshal(raw, &idx))
	require.Len(t, idx.WeightMap, 124)

	t.Run("only WEIGHT_MAP", func(t *testing.T) {
		t.Parallel()
		dir := copyDir(t, base)
		out, err := json.Marshal(map[string]any{"metadata": idx.Metadata, "WEIGHT_MAP": idx.WeightMap})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), out, 0o644))
		want := `model.safetensors.index.json: index has no weight_map (it has "WEIGHT_MAP": keys are case-sensitive, as in Python's json)`
		code, _, stderr := runApp(t, "verify", dir, "--progress", "none")
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, want)
		code, stdout, stderr := runApp(t, "inspect", dir, "--format", "json")
		assert.Equal(t, 2, code, stdout)
		assert.Contains(t, stderr, want)
	})

	t.Run("weight_map and Weight_Map", func(t *testing.T) {
		t.Parallel()
		dir := copyDir(t, base)
		names := slices.Sorted(maps.Keys(idx.WeightMap))
		small := map[string]string{}
		for _, k := range names[:10] {
			small[k] = idx.WeightMap[k]
		}
		// Only the shards small names are read: their other tensors are unlisted.
		unlisted := 0
		for k, v := range idx.WeightMap {
			if _, in := small[k]; !in && slices.Contains(slices.Collect(maps.Values(small)), v) {
				unlisted++
			}
		}
		require.Positive(t, unlisted)
		// weight_map (10 entries), then Weight_Map (124): transformers
		// takes weight_map, and so must ckpt (encoding/json took the
		// later, case-folded key).
		wm, err := json.Marshal(small)
		require.NoError(t, err)
		big, err := json.Marshal(idx.WeightMap)
		require.NoError(t, err)
		doc := `{"weight_map":` + string(wm) + `,"Weight_Map":` + string(big) + `}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), []byte(doc), 0o644))
		code, stdout, stderr := runApp(t, "inspect", dir, "--format", "json")
		require.Equal(t, 0, code, stderr)
		var res inspect.Result
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		assert.Len(t, res.Tensors, 10)
		for _, tn := range res.Tensors {
			assert.Contains(t, small, tn.Name)
		}
		assert.Contains(t, strings.Join(res.Warnings, "\n"), fmt.Sprintf("%d tensor(s) are stored in shards but not listed in model.safetensors.index.json", unlisted))
	})

	t.Run("duplicate top-level key", func(t *testing.T) {
		t.Parallel()
		dir := copyDir(t, base)
		wm, err := json.Marshal(idx.WeightMap)
		require.NoError(t, err)
		doc := `{"weight_map":{},"weight_map":` + string(wm) + `}`
		require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), []byte(doc), 0o644))
		code, _, stderr := runApp(t, "inspect", dir)
		assert.Equal(t, 2, code, stderr)
		assert.Contains(t, stderr, `at byte 17: duplicate key "weight_map" in the index`)
	})
}

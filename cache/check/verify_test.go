package check_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// built writes the small fixture, builds its cache and returns the
// source dir, cache root and plan.
func built(t *testing.T) (string, string, *mapping.Plan) {
	t.Helper()
	src, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	_, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	return src, out, plan
}

// verify reopens the source and verifies the cache.
func verify(t *testing.T, src, out string, opt check.FilesOptions) *check.FilesReport {
	t.Helper()
	c, plan := openPlan(t, src)
	m, err := cache.ReadManifest(cache.FolderOf(out, plan.CacheDir).Path())
	require.NoError(t, err)
	rep, err := check.Files(context.Background(), out, m, c, plan, opt)
	require.NoError(t, err)
	return rep
}

func kinds(rep *check.FilesReport) map[string]ckpt.FindingID {
	k := map[string]ckpt.FindingID{}
	for _, f := range rep.Findings {
		k[f.File()] = f.ID
	}
	return k
}

func entryFile(t *testing.T, plan *mapping.Plan, target string) string {
	t.Helper()
	for _, e := range plan.Entries {
		if e.Target == target {
			return e.File
		}
	}
	t.Fatalf("no target %s", target)
	return ""
}

func TestVerifyFindsDamage(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	rep := verify(t, src, out, check.FilesOptions{})
	require.True(t, rep.OK(), "%+v", rep.Findings)
	require.Equal(t, len(plan.Entries), rep.Files)

	path := func(target string) string {
		return filepath.Join(out, filepath.FromSlash(entryFile(t, plan, target)))
	}
	trunc := path("layers.0/tp/out")
	st, err := os.Stat(trunc)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(trunc, st.Size()-100))

	data := path("layers.1/tp/out")
	b, err := os.ReadFile(data)
	require.NoError(t, err)
	b[len(b)-7] ^= 0x40
	require.NoError(t, os.WriteFile(data, b, 0o644))

	hdr := path("layers.2/tp/out")
	b, err = os.ReadFile(hdr)
	require.NoError(t, err)
	b[8] ^= 0xff // the FlatBuffer root offset
	require.NoError(t, os.WriteFile(hdr, b, 0o644))

	pad := path("layers.2/tp/norm_w")
	b, err = os.ReadFile(pad)
	require.NoError(t, err)
	h, err := tensorbin.ReadTensorbinHeader(bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	b[h.DataOffset-1] ^= 0x01 // header padding: parses the same
	require.NoError(t, os.WriteFile(pad, b, 0o644))

	longer := path("layers.3/mlp.down_proj.weight.tp")
	f, err := os.OpenFile(longer, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("junk"))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	missing := path("layers.0/tp/A_log")
	require.NoError(t, os.Remove(missing))
	extra := filepath.Join(out, plan.CacheDir, "layers.0/tp/stray_dtype_BFLOAT16_layout_TILE.tensorbin")
	require.NoError(t, os.WriteFile(extra, []byte("x"), 0o644))
	leftover := filepath.Join(out, plan.CacheDir, ".x.tensorbin.tmp-123")
	require.NoError(t, os.WriteFile(leftover, nil, 0o644))

	rep = verify(t, src, out, check.FilesOptions{})
	k := kinds(rep)
	rel := func(p string) string { r, _ := filepath.Rel(out, p); return filepath.ToSlash(r) }
	require.Equal(t, map[string]ckpt.FindingID{
		rel(trunc):    check.FindingTruncated,
		rel(data):     check.FindingCorrupted,
		rel(hdr):      check.FindingCorrupted,
		rel(pad):      check.FindingCorrupted,
		rel(longer):   check.FindingCorrupted,
		rel(missing):  check.FindingMissing,
		rel(extra):    check.FindingExtra,
		rel(leftover): check.FindingExtra,
	}, k)
	for _, f := range rep.Findings {
		if f.File() == rel(data) {
			require.Contains(t, f.Message, "data hash")
		}
	}

	// A rebuild repairs every planned file; the stray file stays extra.
	c, plan2 := openPlan(t, src)
	res, err := build.Write(context.Background(), c, plan2, out, build.WriteOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{rel(trunc), rel(data), rel(hdr), rel(pad), rel(longer), rel(missing)}, res.Built)
	rep = verify(t, src, out, check.FilesOptions{})
	require.Equal(t, map[string]ckpt.FindingID{rel(extra): check.FindingExtra}, kinds(rep))
}

// changeTensor rewrites one byte of a tensor's data in its safetensors file.
func changeTensor(t *testing.T, src, name string) {
	t.Helper()
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	tn, ok := c.Lookup(name)
	require.True(t, ok, name)
	loc, off := tn.File.Location, tn.Offset()
	require.NoError(t, c.Close())
	f, err := os.OpenFile(loc, os.O_RDWR, 0)
	require.NoError(t, err)
	var b [1]byte
	_, err = f.ReadAt(b[:], off)
	require.NoError(t, err)
	b[0] ^= 0x01
	_, err = f.WriteAt(b[:], off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	// Make sure the mtime moves even on coarse-grained file systems.
	later := time.Now().Add(2 * time.Second)
	require.NoError(t, os.Chtimes(loc, later, later))
}

func TestVerifyStaleAndRebuild(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	// Touching a file (mtime only) re-hashes but is not stale.
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(src, "model-00001-of-00004.safetensors"), later, later))
	rep := verify(t, src, out, check.FilesOptions{})
	require.True(t, rep.OK(), "%+v", rep.Findings)
	require.Positive(t, rep.Rehashed)

	const tensor = "model.language_model.layers.1.mlp.down_proj.weight"
	changeTensor(t, src, tensor)
	rep = verify(t, src, out, check.FilesOptions{})
	var stale []string
	for _, f := range rep.Findings {
		require.Equal(t, check.FindingStale, f.ID)
		require.Equal(t, []string{tensor}, f.Tensors)
		stale = append(stale, f.File())
	}
	require.Equal(t, []string{entryFile(t, plan, "layers.1/mlp.down_proj.weight.tp")}, stale)

	// The rebuild rebuilds exactly that file.
	c, plan2 := openPlan(t, src)
	res, err := build.Write(context.Background(), c, plan2, out, build.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, stale, res.Built)
	require.Len(t, res.Skipped, len(plan.Entries)-1)
	require.True(t, verify(t, src, out, check.FilesOptions{Rehash: true}).OK())
	checkAgainstMaterialize(t, c, plan2, out)

	// Unchanged rebuild: nothing built, nothing re-hashed.
	res, err = build.Write(context.Background(), c, plan2, out, build.WriteOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Built)
	require.Zero(t, res.Rehashed)
	require.Zero(t, res.SourceTensors)
}

func TestMemAvailable(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "meminfo")
	require.NoError(t, os.WriteFile(p, []byte("MemTotal:       24684132 kB\nMemFree:  1 kB\nMemAvailable:    4194304 kB\n"), 0o644))
	n, err := check.MemAvailable(p)
	require.NoError(t, err)
	require.Equal(t, int64(4<<30), n)
	require.NoError(t, os.WriteFile(p, []byte("MemTotal: 1 kB\n"), 0o644))
	_, err = check.MemAvailable(p)
	require.ErrorContains(t, err, "no MemAvailable")

}

// TestVerifySettingsMismatch: a cache built with one value of a profile
// variable does not verify against a plan built with another.
func TestVerifySettingsMismatch(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	m, err := cache.ReadManifest(cache.FolderOf(out, plan.CacheDir).Path())
	require.NoError(t, err)
	require.Equal(t, true, m.Settings["proj_1d_decode"])
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	plan, err = mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{"proj_1d_decode": false}, nil)
	require.NoError(t, err)
	rep, err := check.Files(context.Background(), out, m, c, plan, check.FilesOptions{})
	require.NoError(t, err)
	var msgs []string
	for _, f := range rep.Findings {
		if f.ID == check.FindingManifest {
			msgs = append(msgs, f.Message)
		}
	}
	require.Len(t, msgs, 1)
	require.Contains(t, msgs[0], "proj_1d_decode=true")
	require.Contains(t, msgs[0], "proj_1d_decode=false")
}

// A cache whose manifest names the default profile by its former name
// (qwen3_5-tt, before the profiles were named for their upstream lines)
// still verifies against the profile it became.
func TestCheckFormerProfileName(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	p := filepath.Join(dir, cache.ManifestName)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	old := bytes.Replace(b, []byte(`"profile": "`+mapping.BuiltinName+`"`), []byte(`"profile": "qwen3_5-tt"`), 1)
	require.NotEqual(t, b, old, "the manifest names the profile")
	require.NoError(t, os.WriteFile(p, old, 0o644))
	res, err := check.Dir(context.Background(), out, check.DirOptions{Source: src})
	require.NoError(t, err)
	require.True(t, res.OK, "%+v", res.Findings)
	require.Equal(t, "qwen3_5-tt", res.Profile)
}

package build_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// stageFixture is Large's layout at hidden 256: block-FP8 weights whose
// transposed tiles come straight from the codes, bfloat16 embeddings and
// norms, files of one to a few hundred KiB.
func stageFixture() synth.Options {
	o := synth.Large()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 256, 512, 4, 2, 2, 64
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 2, 2, 64, 64, 256
	return o
}

// TestStagedBuildBytes: a durable build writes its files through staged
// images with direct writes (stage.go). With any chunk size and budget —
// chunks smaller than a file, a budget of two chunks (chunks that get no
// memory go through the page cache, writers wait for writes in flight),
// chunks larger than every file (one partly direct write and a tail
// through the page cache each) — and with direct writes off (as on a file
// system that refuses them), every file is byte for byte the file of a
// build through the page cache (NoSync), and the manifest records the
// same hashes, which HashCompare checks against the files read back.
func TestStagedBuildBytes(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, stageFixture())
	ref := filepath.Join(t.TempDir(), "ref")
	want, err := build.Write(context.Background(), c, plan, ref, build.WriteOptions{Workers: 2, BandBytes: 8192, NoSync: true})
	require.NoError(t, err)
	for _, tc := range []struct {
		name          string
		budget, chunk int64
		direct        bool
	}{
		{"4 KiB chunks", 64 << 20, 4096, true},
		{"12 KiB chunks, budget of two", 24 << 10, 12 << 10, true},
		{"1 MiB chunks", 64 << 20, 1 << 20, true},
		{"no budget at all", 4096, 8192, true},
		{"budget of one chunk", 8192, 8192, true},
		{"direct writes off", 64 << 20, 4096, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var direct, paged int64
			o := build.Staging(build.Hook(build.WriteOptions{Workers: 2, BandBytes: 8192}), tc.budget, tc.chunk)
			o = build.StageStats(o, func(d, p int64) { direct, paged = d, p })
			if !tc.direct {
				o = build.NoDirect(o)
			}
			out := filepath.Join(t.TempDir(), "cache")
			got, err := build.WriteHooked(context.Background(), c, plan, out, build.HashCompare(o, nil))
			require.NoError(t, err)
			t.Logf("%d bytes written directly, %d through the page cache", direct, paged)
			switch {
			case !tc.direct:
				require.Zero(t, direct+paged, "no staged files")
			case tc.budget < tc.chunk:
				require.Zero(t, direct, "no memory to stage in")
			default:
				require.Positive(t, direct)
			}
			wr := records(want.Manifest)
			for i := range wr {
				wr[i].UnsyncedBoot = "" // the reference was not fsynced
			}
			require.Equal(t, wr, records(got.Manifest))
			requireSameFiles(t, ref, out)
		})
	}
}

// requireSameFiles requires the .tensorbin files under a and b to be the
// same files with the same bytes.
func requireSameFiles(t *testing.T, a, b string) {
	t.Helper()
	read := func(root string) map[string][]byte {
		m := map[string][]byte{}
		require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) != ".tensorbin" {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			m[rel], err = os.ReadFile(p)
			return err
		}))
		return m
	}
	fa, fb := read(a), read(b)
	require.Equal(t, len(fa), len(fb), "files")
	require.NotEmpty(t, fa)
	for name, x := range fa {
		y, ok := fb[name]
		require.True(t, ok, "%s missing", name)
		require.True(t, bytes.Equal(x, y), fmt.Sprintf("%s differs (%d and %d bytes)", name, len(x), len(y)))
	}
}

// TestStagedBuildProfiles: for every built-in profile on the small
// fixtures, 1x1 and 1x2, a durable build through staged images (4 KiB
// chunks: many chunks per file, tails through the page cache) writes the
// files of a build through the page cache, byte for byte.
func TestStagedBuildProfiles(t *testing.T) {
	t.Parallel()
	fixtures := map[string]synth.Options{"small": synth.Small(), "large": stageFixture()}
	for _, fx := range []string{"small", "large"} {
		dir := filepath.Join(t.TempDir(), fx)
		require.NoError(t, synth.Write(dir, fixtures[fx]))
		c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		for _, name := range mapping.BuiltinNames() {
			p, err := mapping.Builtin(name)
			require.NoError(t, err)
			for _, mesh := range []mapping.Mesh{{Rows: 1, Cols: 1}, {Rows: 1, Cols: 2}} {
				plan, err := mapping.BuildWith(c, p, mesh, nil, nil)
				if err != nil {
					continue
				}
				what := fmt.Sprintf("%s %s %s", fx, name, mesh)
				ref, out := filepath.Join(t.TempDir(), "ref"), filepath.Join(t.TempDir(), "out")
				_, err = build.Write(context.Background(), c, plan, ref, build.WriteOptions{Workers: 2, BandBytes: 4096, NoSync: true})
				require.NoError(t, err, what)
				var direct int64
				o := build.StageStats(build.Staging(build.Hook(build.WriteOptions{Workers: 2, BandBytes: 4096}), 1<<20, 4096), func(d, _ int64) { direct = d })
				_, err = build.WriteHooked(context.Background(), c, plan, out, o)
				require.NoError(t, err, what)
				require.Positive(t, direct, what)
				requireSameFiles(t, ref, out)
			}
		}
	}
}

package mapping_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The 27B's vision tower is planned into its own folder at 1x2 and 1x4:
// 333 files (12 per block, 6 merger, 3 embedding) with the mesh width in
// their names, every vision tensor mapped, none ignored or unmapped; the
// text plan ignores the tower with a reason naming that folder. The 1x2
// target list is a golden (testdata/qwen3_5-27b-vision-mesh1x2.targets).
func TestVisionPlan27B(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "fp8", nil)
	c := open(t, dir)
	for _, tc := range []struct {
		n      int
		folder string
	}{{2, "P300/tensor_cache_bfp8"}, {4, "P150x4/tensor_cache_bfp8"}} {
		for _, name := range mapping.BuiltinNames() {
			p, err := mapping.Builtin(name)
			require.NoError(t, err)
			pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: tc.n}, nil, nil)
			require.NoError(t, err)
			vp := pl.Vision
			require.NotNil(t, vp, name)
			assert.Equal(t, tc.folder, vp.CacheDir)
			require.Len(t, vp.Entries, 333, "27 blocks of 12, the merger's 6, the embedding's 3")
			assert.Empty(t, vp.Ignored)
			assert.Empty(t, vp.Unmapped)
			assert.Empty(t, vp.Unaccounted(c))
			var blocks, merger, embed int
			sfx := ".tp" + string(rune('0'+tc.n))
			for _, e := range vp.Entries {
				switch {
				case strings.HasPrefix(e.Target, "visual.blocks."):
					blocks++
				case strings.HasPrefix(e.Target, "visual.merger."):
					merger++
				default:
					embed++
				}
				if !strings.Contains(e.Target, "norm") {
					assert.True(t, strings.HasSuffix(e.Target, sfx), e.Target)
				}
				assert.True(t, strings.HasPrefix(e.File, tc.folder+"/"), e.File)
				assert.Equal(t, mapping.DRAMInterleaved, e.Memory.Kind)
				if e.Placement.Kind == "shard" {
					assert.Equal(t, []string{mapping.AxisReplicate, mapping.AxisShard}, e.Placement.MeshAxes, e.Target)
				}
			}
			assert.Equal(t, []int{324, 6, 3}, []int{blocks, merger, embed})
			// every vision tensor: in a vision entry, and ignored by the text plan
			var vision int
			for _, tn := range c.Tensors {
				if strings.HasPrefix(tn.Name, mapping.VisionPrefix) {
					vision++
				}
			}
			n := 0
			for _, ig := range pl.Ignored {
				if strings.HasPrefix(ig.Name, mapping.VisionPrefix) {
					n++
					assert.Contains(t, ig.Reason, "vision part")
				}
			}
			assert.Equal(t, vision, n)
			if tc.n == 2 && name == mapping.BuiltinName {
				got := describePlan(vp)
				path := filepath.Join("testdata", "qwen3_5-27b-vision-mesh1x2.targets")
				if *update {
					require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, string(want), got, "go test ./mapping -run VisionPlan27B -update after checking the change")
			}
		}
	}
}

// --set instruct=true moves the vision folder to tensor_cache_instruct_bfp8
// and changes nothing else; the text folder is unchanged.
func TestVisionInstructFolder(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "bf16", nil)
	c := open(t, dir)
	p := builtin(t)
	pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{mapping.VarInstruct: true}, nil)
	require.NoError(t, err)
	assert.Equal(t, "P300/tensor_cache_bfp8_mesh1x2", pl.CacheDir)
	assert.Equal(t, "P300/tensor_cache_instruct_bfp8", pl.Vision.CacheDir)
	assert.Equal(t, mapping.Settings{mapping.VarInstruct: true, mapping.VarHostVisionEmbed: false}, pl.Vision.Settings)
	_, ok := pl.Settings[mapping.VarInstruct]
	assert.False(t, ok, "the text plan has no such variable")
	require.NoError(t, p.ResolveAll(mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{mapping.VarInstruct: true, mapping.VarProj1DDecode: false}))
	assert.ErrorContains(t, p.ResolveAll(mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{"no_such": true}), `no variable "no_such"`)
}

// The embedding files follow model.py@00c023af by default: VisionEmbed
// writes visual.patch_embed_proj_w/b and visual.pos_embed_w_rm. With
// host_vision_embed (upstream QWEN36_HOST_VISION_EMBED=1, and
// model.py@d49bb172, which embeds on the host) those three files are not
// planned and their three tensors are ignored with that reason, at 1x2
// and 1x4, sharded (the 27B) or replicated (vision_replicated_acts, the
// small fixture at 1x2); every other vision file is the same.
func TestVisionHostEmbed(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "fp8", nil)
	big := open(t, dir)
	smallDir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, synth.Write(smallDir, synth.Small()))
	small := open(t, smallDir)
	embedding := []string{"visual.patch_embed_proj_b", "visual.patch_embed_proj_w", "visual.pos_embed_w_rm"}
	sources := []string{"model.visual.patch_embed.proj.bias", "model.visual.patch_embed.proj.weight", "model.visual.pos_embed.weight"}
	for _, tc := range []struct {
		name string
		c    *ckpt.Checkpoint
		n    int
		kind string // placement of the embedding files by default
	}{{"27B-1x2", big, 2, "shard"}, {"27B-1x4", big, 4, "shard"}, {"small-1x2", small, 2, "replicate"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mesh := mapping.Mesh{Rows: 1, Cols: tc.n}
			targets := func(set mapping.Settings) (*mapping.Plan, map[string]*mapping.Entry) {
				pl, err := mapping.BuildWith(tc.c, builtin(t), mesh, set, nil)
				require.NoError(t, err)
				require.NotNil(t, pl.Vision)
				require.Empty(t, pl.Vision.Problems)
				require.Empty(t, pl.Vision.Unmapped)
				require.Empty(t, pl.Vision.Unaccounted(tc.c))
				m := map[string]*mapping.Entry{}
				for _, e := range pl.Vision.Entries {
					m[e.Target] = e
				}
				return pl.Vision, m
			}
			dev, devT := targets(nil)
			assert.Equal(t, false, dev.Settings[mapping.VarHostVisionEmbed])
			assert.Empty(t, dev.Ignored)
			for _, w := range dev.Warnings {
				assert.NotContains(t, w, mapping.VarHostVisionEmbed, "the host-path ignore rules are off by default")
			}
			sfx := fmt.Sprintf(".tp%d", tc.n)
			for _, n := range embedding {
				e := devT[n+sfx]
				require.NotNil(t, e, n)
				assert.Equal(t, tc.kind, e.Placement.Kind, n)
			}
			host, hostT := targets(mapping.Settings{mapping.VarHostVisionEmbed: true})
			assert.Equal(t, true, host.Settings[mapping.VarHostVisionEmbed])
			assert.Len(t, hostT, len(devT)-3)
			for tg, e := range devT {
				if h, ok := hostT[tg]; ok {
					assert.Equal(t, e.File, h.File)
					continue
				}
				assert.Contains(t, embedding, strings.TrimSuffix(tg, sfx), "only the embedding files go")
			}
			var ignored []string
			for _, ig := range host.Ignored {
				ignored = append(ignored, ig.Name)
				assert.Contains(t, ig.Reason, "QWEN36_HOST_VISION_EMBED=1", ig.Name)
				assert.Contains(t, ig.Reason, "model.py@00c023af", ig.Name)
			}
			assert.Equal(t, sources, ignored)
		})
	}
}

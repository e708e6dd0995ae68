package check_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// StopAtPlan stops where the plan is made: a directory that is no cache
// is still a finding; a cache folder gives a *check.PlanStopError.
func TestRunStopAtPlan(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	folder := filepath.Join(out, filepath.FromSlash(plan.CacheDir))
	_, err := check.Run(context.Background(), check.Options{Dir: folder, Source: src, StopAtPlan: true})
	var ps *check.PlanStopError
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, folder, ps.Folder)
	assert.NoError(t, ps.Mesh)
	res, err := check.Run(context.Background(), check.Options{Dir: filepath.Join(t.TempDir(), "none"), Source: "s", StopAtPlan: true})
	require.NoError(t, err)
	assert.False(t, res.OK)
	require.Len(t, res.Single().Findings, 1)
	assert.Equal(t, check.FindingManifest, res.Single().Findings[0].ID)
}

// Run of a cache folder gives its one result; of a root with two
// folders, one result each, with the summary record counting them all.
func TestRun(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	ctx := context.Background()
	one, err := check.Run(ctx, check.Options{Dir: filepath.Join(out, filepath.FromSlash(plan.CacheDir)), Source: src})
	require.NoError(t, err)
	require.NotNil(t, one.Single())
	assert.True(t, one.OK, "%+v", one.Single().Findings)
	r := one.Single()
	// build.Run wrote the text folder only: the vision folder its manifest
	// names is not there, a warning of the folder checked alone.
	assert.Equal(t, check.DirSummaryRecord{Dir: r.Dir, Source: src, OK: true, Files: r.Files, Bytes: r.Bytes, Findings: 1}, r.SummaryRecord())
	require.Len(t, r.Findings, 1)
	assert.Equal(t, check.FindingCompanion, r.Findings[0].ID)
	assert.Equal(t, ckpt.Warn, r.Findings[0].Status)
	assert.Positive(t, r.Files)

	_, err = build.Run(ctx, build.Options{Source: src, Plan: mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: mapping.DefaultMesh, Tag: "other"}, Out: out})
	require.NoError(t, err)
	all, err := check.Run(ctx, check.Options{Dir: out, Source: src})
	require.NoError(t, err)
	require.Nil(t, all.Single())
	// The two text folders, and the vision folder the second build
	// (cache build's workflow) wrote: the tag is the text folder's.
	require.Len(t, all.Folders, 3)
	assert.True(t, all.OK)
	assert.Equal(t, 0, all.Failed())
	assert.Empty(t, all.Rows())
	var vf *check.DirResult
	for _, f := range all.Folders {
		if strings.HasSuffix(f.Dir, "/tensor_cache_bfp8") {
			vf = f
		}
	}
	require.NotNil(t, vf, "the vision folder P300/tensor_cache_bfp8")
	files, bytes := 2*r.Files+vf.Files, 2*r.Bytes+vf.Bytes
	sum := all.SummaryRecord()
	assert.Equal(t, check.SummaryRecord{Dir: out, Source: src, OK: true, Folders: 3, Failed: 0, Files: files, Bytes: bytes}, sum)
	b, err := json.Marshal(sum)
	require.NoError(t, err)
	want, err := json.Marshal(map[string]any{"dir": out, "source": src, "ok": true, "folders": 3, "failed": 0, "files": files, "bytes": bytes, "findings": 0})
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(b))
}

// A multi-folder finding row is the finding's object with "dir" first.
func TestFolderFindingJSON(t *testing.T) {
	t.Parallel()
	f := ckpt.Finding{ID: check.FindingMissing, Status: ckpt.Fail, Message: "gone"}
	body, err := json.Marshal(f)
	require.NoError(t, err)
	b, err := json.Marshal(check.FolderFinding{Dir: "root/P300/x", Finding: f})
	require.NoError(t, err)
	assert.Equal(t, `{"dir":"root/P300/x",`+string(body[1:]), string(b))
}

// The comparison's summary record has the report's counts and the number
// of differences in place of their list.
func TestCompareSummaryRecord(t *testing.T) {
	t.Parallel()
	rep := &compare.Report{A: "a", B: "b", FilesA: 2, FilesB: 1, Common: 1, Identical: 1, Diffs: []compare.Difference{{Kind: compare.DiffMissing, File: "f"}}}
	b, err := json.Marshal(rep.Document().SummaryRecord())
	require.NoError(t, err)
	assert.Equal(t, `{"a":"a","b":"b","files_a":2,"files_b":1,"common":1,"identical":1,"bytes_compared":0,"headers_only":false,`+
		`"differences":1,"same":false,"unreadable":false}`, string(b))
}

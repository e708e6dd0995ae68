package cache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ListDir of a cache root lists its folder's files; the summary record
// counts them and their bytes, in the JSON Lines order.
func TestListDirSummary(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	var total int64
	for _, f := range res.Manifest.Files {
		total += f.Size
	}
	l, err := cache.ListDir(cache.ListRequest{Dir: out})
	require.NoError(t, err)
	require.Len(t, l.Files, len(res.Manifest.Files))
	assert.Equal(t, total, l.Bytes())
	assert.Equal(t, cache.ListSummary{Dir: out, Files: len(l.Files), Bytes: total, Unreadable: 0}, l.SummaryRecord())
	b, err := json.Marshal(l.SummaryRecord())
	require.NoError(t, err)
	dir, err := json.Marshal(out)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"dir":%s,"files":%d,"bytes":%d,"unreadable":0}`, dir, len(l.Files), total), string(b))

	_, err = cache.ListDir(cache.ListRequest{Dir: filepath.Join(out, "missing")})
	assert.EqualError(t, err, "listing "+filepath.Join(out, "missing")+": not a directory")
}

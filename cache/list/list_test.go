package list_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/list"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Run of a cache root lists its folder's files; the summary record
// counts them and their bytes, in the JSON Lines order.
func TestRunSummary(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "cache")
	m, err := cachetest.WriteTinyFolder(out, 3)
	require.NoError(t, err)
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	l, err := list.Run(context.Background(), list.Options{Dir: out})
	require.NoError(t, err)
	require.Len(t, l.Files, len(m.Files))
	assert.Equal(t, total, l.Bytes())
	assert.Equal(t, list.SummaryRecord{Dir: out, Files: len(l.Files), Bytes: total, Unreadable: 0}, l.SummaryRecord())
	b, err := json.Marshal(l.SummaryRecord())
	require.NoError(t, err)
	dir, err := json.Marshal(out)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"dir":%s,"files":%d,"bytes":%d,"unreadable":0}`, dir, len(l.Files), total), string(b))

	_, err = list.Run(context.Background(), list.Options{Dir: filepath.Join(out, "missing")})
	assert.EqualError(t, err, "listing "+filepath.Join(out, "missing")+": not a directory")
}

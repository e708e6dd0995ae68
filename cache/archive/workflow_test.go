package archive_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPackUnpackOptionsErrors(t *testing.T) {
	t.Parallel()
	_, err := archive.Pack(context.Background(), archive.PackOptions{Dir: "d"})
	require.True(t, errors.Is(err, ckpt.ErrUsage), "%v", err)
	var oe *ckpt.OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "Out", oe.Field)

	missing := filepath.Join(t.TempDir(), "missing.tar.zst")
	_, err = archive.Unpack(context.Background(), archive.UnpackOptions{File: missing})
	require.True(t, errors.Is(err, ckpt.ErrUsage), "%v", err)
	require.ErrorAs(t, err, &oe, "refused before the archive is opened")
	assert.Equal(t, "Dir", oe.Field)
}

// A failed pack leaves no file at Out; a failed unpack names the archive.
func TestPackUnpackWorkflowErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cache.tar.zst")
	_, err := archive.Pack(context.Background(), archive.PackOptions{Dir: t.TempDir(), Out: file})
	require.Error(t, err)
	_, err = os.Stat(file)
	assert.True(t, os.IsNotExist(err), "no archive is left: %v", err)

	require.NoError(t, os.WriteFile(file, []byte("not zstd"), 0o644))
	_, err = archive.Unpack(context.Background(), archive.UnpackOptions{File: file, Dir: t.TempDir()})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "unpacking "+file+": "), err.Error())
}

package source

import (
	"context"
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBareRepoOpener: only a missing path written like ORG/NAME[@REV] is
// answered; an existing relative path of that form, a deeper path, ./ and
// absolute paths and the other source forms go on to the next opener.
func TestBareRepoOpener(t *testing.T) {
	t.Parallel()
	op := bareRepoOpener(func(k string) string { return map[string]string{"HF_HUB_CACHE": t.TempDir()}[k] })
	for _, src := range []string{"sourcetest/hub.go", "Qwen/Qwen3.5-27B-FP8/model.safetensors", "./Qwen/x", "/Qwen/x", "hf:Qwen/x", "hf://Qwen/x", "https://h/x", "x", "-a/b"} {
		_, _, ok, err := op(context.Background(), src)
		assert.False(t, ok, src)
		assert.NoError(t, err, src)
	}
	_, _, ok, err := op(context.Background(), "Qwen/Qwen3.5-27B-FP8")
	require.True(t, ok)
	var be *BareRepoError
	require.True(t, errors.As(err, &be))
	assert.False(t, be.Cached)
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}

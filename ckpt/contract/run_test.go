package contract_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The workflow: the contract of a checkpoint with its hashes, written and
// read back; an output over an input refused.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	res, err := contract.Run(ctx, contract.Options{Source: dir, ReadData: true, Progress: ckpt.NewProgress()})
	require.NoError(t, err)
	require.NotNil(t, res.Contract)
	require.NotEmpty(t, res.Contract.Tensors)
	for _, e := range res.Contract.Tensors {
		assert.Len(t, e.XXH3, 16, e.Name)
	}

	var b bytes.Buffer
	require.NoError(t, contract.Write(&b, res.Contract))
	k, err := contract.Read(&b, "k.json", nil)
	require.NoError(t, err)
	cmp, err := contract.Compare(k, res.Contract, contract.CompareOptions{})
	require.NoError(t, err)
	assert.True(t, cmp.Same())
	assert.True(t, cmp.HashesCompared)

	_, err = contract.Run(ctx, contract.Options{Source: dir, Out: filepath.Join(dir, ckpt.IndexFile)})
	require.ErrorIs(t, err, ckpt.ErrUsage, "an output over an input is refused")
}

package verify_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  verify.Options
		msg  string // "" valid
	}{
		{"plain", verify.Options{Source: "x"}, ""},
		{"arch", verify.Options{Source: "x", Arch: "llama"}, `unknown --arch "llama" (want auto, qwen3_5 or none)`},
		{"match alone", verify.Options{Source: "x", Match: []string{"a"}}, "--match and --exclude select tensors for --against; give --against FILE"},
		{"allow alone", verify.Options{Source: "x", AllowConfig: []string{"a"}}, "--allow-config accepts config changes against a contract; give --against FILE"},
		{"with against", verify.Options{Source: "x", Against: "k.json", Match: []string{"a"}, AllowConfig: []string{"b"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.req.Validate()
			if tc.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ckpt.ErrUsage)
			assert.EqualError(t, err, tc.msg)
			_, err = verify.Run(context.Background(), tc.req)
			assert.ErrorIs(t, err, ckpt.ErrUsage, "Run validates first")
		})
	}
}

// The workflow: a contract of a checkpoint, then that checkpoint held
// against it, with the typed summary record.
func TestRunAgainstContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	kr, err := contract.Run(ctx, contract.Options{Source: dir, ReadData: true, Progress: ckpt.NewProgress()})
	require.NoError(t, err)
	require.NotNil(t, kr.Contract)
	assert.NotEmpty(t, kr.Contract.Tensors)

	_, err = contract.Run(ctx, contract.Options{Source: dir, Out: filepath.Join(dir, ckpt.IndexFile)})
	require.ErrorIs(t, err, ckpt.ErrUsage, "an output over an input is refused")

	path := filepath.Join(t.TempDir(), "k.json")
	require.NoError(t, writeContractFile(path, kr.Contract))
	rep, err := verify.Run(ctx, verify.Options{Source: dir, Against: path, Strict: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Against)
	assert.Equal(t, path, rep.Against.Contract)
	assert.True(t, rep.Strict)
	rec := rep.SummaryRecord()
	n := rep.Counts()
	assert.Equal(t, verify.SummaryRecord{Source: rep.Source, OK: rep.OK, Strict: true, Fail: n[ckpt.Fail], Warn: n[ckpt.Warn], Pass: n[ckpt.Pass], Skip: n[ckpt.Skip]}, rec)
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"source":".*","ok":(true|false),"strict":true,"fail":\d+,"warn":\d+,"pass":\d+,"skip":\d+\}$`, string(b))
}

func writeContractFile(path string, k *contract.Contract) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := contract.Write(f, k); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

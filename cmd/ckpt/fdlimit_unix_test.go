//go:build unix

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeManyShards writes a checkpoint of n shards of one small F32 tensor
// each, and its index (written by hand: no fsync per file).
func writeManyShards(t *testing.T, dir string, n int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	wm := make(map[string]string, n)
	for i := range n {
		name := fmt.Sprintf("t.%d.weight", i)
		shard := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
		wm[name] = shard
		hdr := fmt.Sprintf(`{"%s":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, name)
		hdr += strings.Repeat(" ", (8-len(hdr)%8)%8)
		var b bytes.Buffer
		require.NoError(t, binary.Write(&b, binary.LittleEndian, uint64(len(hdr))))
		b.WriteString(hdr)
		require.NoError(t, binary.Write(&b, binary.LittleEndian, [2]float32{float32(i), 1}))
		require.NoError(t, os.WriteFile(filepath.Join(dir, shard), b.Bytes(), 0o644))
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 8 * n}, "weight_map": wm})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), idx, 0o644))
}

// TestShardsWithinFDLimit: a checkpoint of 20,000 shards is inspected,
// verified with its data, diffed and extracted by a ckpt whose
// file-descriptor limit is 128 (soft and hard, so that the Go runtime
// cannot raise it): shards are opened as they are read and closed when
// others need the descriptors. Before, every shard stayed open from the
// open of the checkpoint to its end ("too many open files").
func TestShardsWithinFDLimit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to lower the descriptor limit with ulimit")
	}
	const shards = 20000
	dir := filepath.Join(t.TempDir(), "many")
	writeManyShards(t, dir, shards)
	bin := ckptBinary(t)
	run := func(args ...string) (int, string, string) {
		t.Helper()
		script := `ulimit -n 128 && exec "$0" "$@"`
		cmd := exec.Command("sh", append([]string{"-c", script, bin}, args...)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, o.String(), e.String()
	}
	code, out, errs := run("inspect", dir, "--summary")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, fmt.Sprintf("%d tensors", shards))
	code, out, errs = run("verify", dir, "--read-data", "--arch", "none", "--progress", "none")
	assert.Equal(t, 0, code, "%s\n%s", out, errs)
	code, out, errs = run("diff", dir, dir, "--mode", "bytes", "--progress", "none")
	assert.Equal(t, 0, code, "%s\n%s", out, errs)
	assert.Contains(t, out, fmt.Sprintf("%d identical", shards))
	code, _, errs = run("extract", dir, "--match", "t.*.weight", "-o", filepath.Join(t.TempDir(), "all.safetensors"), "--progress", "none")
	assert.Equal(t, 0, code, errs)
}

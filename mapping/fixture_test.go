package mapping_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

type invTensor = synth.InventoryTensor

// writeInventory writes the full-scale 27B layout of the inventory
// ("fp8" or "bf16") as a sparse sharded checkpoint (synth.WriteInventory);
// edit may change the tensor list and the text config before writing. It
// returns the directory and the number of tensors written.
func writeInventory(t testing.TB, variant string, edit func(ts []invTensor, text map[string]any) []invTensor) (string, int) {
	t.Helper()
	dir := t.TempDir()
	n, err := synth.WriteInventoryEdited(dir, variant, edit)
	require.NoError(t, err)
	return dir, n
}

func hasPrefix(name string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

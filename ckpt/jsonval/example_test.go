package jsonval_test

import (
	"encoding/json"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
)

// A quantization_config as encoding/json decodes it: the block size is a
// list of float64, one entry of the ignore list is no string.
func Example() {
	var qc map[string]any
	_ = json.Unmarshal([]byte(`{"weight_block_size": [128, 128], "ignore": ["lm_head", 7], "bits": "8"}`), &qc)
	bits, ok := jsonval.Int(qc["bits"])
	fmt.Println(jsonval.Ints(qc["weight_block_size"]), jsonval.Strings(qc["ignore"]), bits, ok)
	// Output: [128 128] [lm_head] 8 true
}

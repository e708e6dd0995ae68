package main

import "path/filepath"

// demoVerify adds the verify and contract steps to the demo: verify the
// base, write its contract, then hold the fine-tune against it (which
// differs: the MTP head ships in BF16 without its scales).
func (a *App) demoVerify(dir, base, ft string) []demoStep {
	contract := filepath.Join(dir, "base.contract.json")
	return []demoStep{
		{"Verify the base (index, headers, FP8 block scales, qwen3_5 architecture, data)", []string{"verify", base, "--read-data", "--progress", "none"}, []int{0}},
		{"Write the base's structural contract", []string{"contract", base, "-o", contract}, []int{0}},
		{"Hold the fine-tune against the base's contract (differences expected: exit 1)", []string{"verify", ft, "--against", contract}, []int{1}},
	}
}

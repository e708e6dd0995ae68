package main

import "path/filepath"

// demoCache builds the tensor cache of the demo base and verifies it. The
// small fixture has per-device widths that are not multiples of 32 (e.g.
// qkvzab 196, A_log 2): those targets are padded to whole tiles with zeros,
// as ttnn.from_torch pads.
func (a *App) demoCache(dir, base, ft string) []demoStep {
	out := filepath.Join(dir, "cache")
	return []demoStep{
		{"Build the Tenstorrent tensor cache of the base (TP=2)", []string{"cache", "build", base, "--out", out, "--mesh", "1x2", "--progress", "none"}, []int{0}},
		{"Verify the cache against the base (fail-closed preflight)", []string{"cache", "verify", out, "--source", base, "--progress", "none"}, []int{0}},
	}
}

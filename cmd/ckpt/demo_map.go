package main

// demoMap shows the weight-mapping plan of the demo base on a 1x2 mesh.
func (a *App) demoMap(dir, base, ft string) []demoStep {
	return []demoStep{
		{"The TP=2 weight-mapping plan of the base (qwen3_5-tt, mesh 1x2)", []string{"map", base, "--mesh", "1x2", "--summary"}, []int{0}},
	}
}

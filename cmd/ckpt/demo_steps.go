package main

// demoSteps lists the demo steps that later commands add (verify, diff,
// map, cache, extract). Each command's file contributes through this list.
func (a *App) demoSteps(dir, base, ft string) []demoStep {
	var steps []demoStep
	steps = append(steps, a.demoVerify(dir, base, ft)...)
	steps = append(steps, a.demoDiff(dir, base, ft)...)
	steps = append(steps, a.demoExtract(dir, base, ft)...)
	steps = append(steps, a.demoMap(dir, base, ft)...)
	steps = append(steps, a.demoCache(dir, base, ft)...)
	return steps
}

package main

import "github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"

// tableForPeople marks g's first column as the names (never cut; rows
// grouped under their layer prefix in a table) and gives the columns
// named in drop their priority: when a terminal is too narrow, the
// columns of the highest numbers are dropped first.
func tableForPeople(g *output.Grid, drop map[string]int) {
	g.Names = map[int]bool{0: true}
	g.Group = true
	g.Drop = map[int]int{}
	for j, h := range g.Header {
		if p, ok := drop[h]; ok {
			g.Drop[j] = p
		}
	}
}

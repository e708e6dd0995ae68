package diff

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// selectNames returns the union of both checkpoints' tensor names that m
// matches, in natural order, reduced to a deterministic sample of n
// tensors (plus the scale companions of sampled weights) when n > 0.
func selectNames(base, ft *ckpt.Checkpoint, m *ckpt.Matcher, n int, seed uint64) (names []string, sampled bool) {
	seen := map[string]bool{}
	for _, c := range []*ckpt.Checkpoint{base, ft} {
		for _, t := range c.Tensors {
			if !seen[t.Name] && m.Match(t.Name) {
				seen[t.Name] = true
				names = append(names, t.Name)
			}
		}
	}
	if n > 0 && n < len(names) {
		names, sampled = sample(names, seen, n, seed)
	}
	sort.Slice(names, func(i, j int) bool { return ckpt.NaturalLess(names[i], names[j]) })
	return names, sampled
}

// sample picks the n names with the smallest seeded hash, leaving scale
// companions out of the draw and adding them back with their weight.
func sample(names []string, present map[string]bool, n int, seed uint64) ([]string, bool) {
	type cand struct {
		name string
		h    uint64
	}
	var cands []cand
	var seedBytes [8]byte
	binary.LittleEndian.PutUint64(seedBytes[:], seed)
	for _, name := range names {
		if w, ok := strings.CutSuffix(name, ckpt.ScaleSuffix); ok && present[w] {
			continue
		}
		h := fnv.New64a()
		h.Write(seedBytes[:])
		h.Write([]byte(name))
		cands = append(cands, cand{name, h.Sum64()})
	}
	if n >= len(cands) {
		return names, false
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].h != cands[j].h {
			return cands[i].h < cands[j].h
		}
		return cands[i].name < cands[j].name
	})
	var out []string
	for _, c := range cands[:n] {
		out = append(out, c.name)
		if s := ckpt.ScaleName(c.name); present[s] {
			out = append(out, s)
		}
	}
	return out, true
}

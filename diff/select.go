package diff

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// selectNames returns the union of both checkpoints' tensor names that m
// matches, in natural order (an MXFP4 X_blocks by its values' name X,
// valueName).
func selectNames(base, ft *ckpt.Checkpoint, m *ckpt.Matcher) []string {
	seen := map[string]bool{}
	var names []string
	for _, c := range []*ckpt.Checkpoint{base, ft} {
		for _, t := range c.Tensors {
			if name := valueName(c, t); !seen[name] && m.Match(t.Name) {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	sort.Slice(names, func(i, j int) bool { return ckpt.NaturalLess(names[i], names[j]) })
	return names
}

// sample draws the tensors whose data a diff with CompareOptions.Sample = n
// compares: the n names with the smallest seeded hash, leaving scale
// companions out of the draw and adding them back with their weight. It
// returns nil (every tensor) when n is 0 or covers every candidate.
func sample(names []string, n int, seed uint64) map[string]bool {
	if n <= 0 {
		return nil
	}
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
	}
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
		return nil
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].h != cands[j].h {
			return cands[i].h < cands[j].h
		}
		return cands[i].name < cands[j].name
	})
	out := map[string]bool{}
	for _, c := range cands[:n] {
		out[c.name] = true
		if s := ckpt.ScaleName(c.name); present[s] {
			out[s] = true
		}
	}
	return out
}

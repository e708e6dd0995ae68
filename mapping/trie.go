package mapping

import (
	"fmt"
	"sort"
	"strings"
)

// template is a compiled name template: dotted segments, each a literal or
// a capture ({X} standing for one whole segment).
type template struct {
	text string
	segs []tseg
}

type tseg struct {
	lit     string
	capture string // non-empty for {X}
}

func parseTemplate(s string) (*template, error) {
	if s == "" {
		return nil, fmt.Errorf("empty template")
	}
	t := &template{text: s}
	for _, seg := range strings.Split(s, ".") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && len(seg) > 2 {
			name := seg[1 : len(seg)-1]
			if strings.ContainsAny(name, "{}") {
				return nil, fmt.Errorf("template %q: bad capture %q", s, seg)
			}
			t.segs = append(t.segs, tseg{capture: name})
			continue
		}
		if strings.ContainsAny(seg, "{}") {
			return nil, fmt.Errorf("template %q: a capture must be a whole dotted segment, got %q", s, seg)
		}
		if seg == "" {
			return nil, fmt.Errorf("template %q has an empty segment", s)
		}
		t.segs = append(t.segs, tseg{lit: seg})
	}
	return t, nil
}

func (t *template) captureNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range t.segs {
		if s.capture != "" && !seen[s.capture] {
			seen[s.capture] = true
			out = append(out, s.capture)
		}
	}
	sort.Strings(out)
	return out
}

// binding holds the captured segment values of one match.
type binding map[string]string

// key is a canonical string of the binding, for grouping.
func (b binding) key() string {
	ks := make([]string, 0, len(b))
	for k := range b {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var sb strings.Builder
	for _, k := range ks {
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(b[k])
		sb.WriteByte(';')
	}
	return sb.String()
}

// expand substitutes {X} in s with the binding's values.
func (b binding) expand(s string) string {
	for k, v := range b {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// leaf is what a complete template path stands for: source index src of
// rule rule, or ignore rule ignore (rule = -1).
type leaf struct {
	rule, src, ignore int
	tmpl              *template
}

// trie indexes templates by dotted segment: matching a name walks it once
// (literal children, then capture children), so the cost per tensor is
// proportional to its segment count, not to the number of rules.
type trie struct {
	lit      map[string]*trie
	captures map[string]*trie // by capture name
	leaves   []leaf
}

func newTrie() *trie { return &trie{} }

func (n *trie) add(t *template, l leaf) {
	l.tmpl = t
	cur := n
	for _, s := range t.segs {
		if s.capture != "" {
			if cur.captures == nil {
				cur.captures = map[string]*trie{}
			}
			next := cur.captures[s.capture]
			if next == nil {
				next = newTrie()
				cur.captures[s.capture] = next
			}
			cur = next
			continue
		}
		if cur.lit == nil {
			cur.lit = map[string]*trie{}
		}
		next := cur.lit[s.lit]
		if next == nil {
			next = newTrie()
			cur.lit[s.lit] = next
		}
		cur = next
	}
	cur.leaves = append(cur.leaves, l)
}

type match struct {
	leaf
	bind binding
}

// lookup returns every template that matches name, with its captures. A
// capture used twice in one template must capture the same value.
func (n *trie) lookup(name string) []match {
	segs := strings.Split(name, ".")
	var out []match
	var walk func(node *trie, i int, caps []string)
	walk = func(node *trie, i int, caps []string) {
		if i == len(segs) {
			for _, l := range node.leaves {
				b := binding{}
				ok := true
				ci := 0
				for _, s := range l.tmpl.segs {
					if s.capture == "" {
						continue
					}
					v := caps[ci]
					ci++
					if prev, seen := b[s.capture]; seen && prev != v {
						ok = false
						break
					}
					b[s.capture] = v
				}
				if ok {
					out = append(out, match{leaf: l, bind: b})
				}
			}
			return
		}
		if next := node.lit[segs[i]]; next != nil {
			walk(next, i+1, caps)
		}
		for _, next := range node.captures {
			walk(next, i+1, append(caps[:len(caps):len(caps)], segs[i]))
		}
	}
	walk(n, 0, nil)
	return out
}

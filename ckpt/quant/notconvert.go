package quant

import (
	"regexp"
	"strings"
)

// NotConvertList is a quantization_config's modules_to_not_convert read as
// transformers reads it: should_convert_module (huggingface/transformers
// src/transformers/quantizers/quantizers_utils.py@v5.23.0), which its
// FineGrainedFP8 and MXFP4 quantizers apply to every module of the model
// (named_modules, each module on its own name). An entry keeps a
// module unconverted when
//
//   - the entry, as a Python regular expression, matches the module's name
//     from its start and the match ends at a module boundary: just after a
//     ".", before a ".", or at the end. "model.layers.1" keeps
//     "model.layers.1.mlp" but not "model.layers.10.mlp"; "model.layers.*"
//     keeps every layer; "mlp.gate" keeps no "model.layers.0.mlp.gate"
//     (the match starts at the beginning); or
//   - the module's name ends with the entry, as a plain string and without
//     a boundary: "fc1" keeps "model.decoder.layers.23.fc1", "mlp.gate"
//     keeps "model.layers.0.mlp.gate" (not its "mlp.gate_proj").
//
// So an entry "visual" keeps the module "model.visual" itself (a suffix)
// but none of its children: "model.visual.blocks.0.attn.qkv" neither
// starts with "visual" nor ends with it, and is converted. An entry that
// Go's regexp cannot read (Python-only syntax such as lookarounds) is
// matched as a literal string, with the same boundary. The one matcher of
// modules_to_not_convert: verify, inspect, extract, diff and map read the
// list through it.
type NotConvertList struct {
	entries []string
	res     []*regexp.Regexp // nil where the entry does not compile, or is dotOnly
	dotOnly []bool           // no metacharacter but "." (most entries): matched without regexp
}

// NewNotConvertList prepares entries (nil: the list is absent).
func NewNotConvertList(entries []string) *NotConvertList {
	l := &NotConvertList{entries: entries, res: make([]*regexp.Regexp, len(entries)), dotOnly: make([]bool, len(entries))}
	for i, e := range entries {
		l.dotOnly[i] = !strings.ContainsAny(e, `\^$*+?()[]{}|`) && isASCII(e)
		if l.dotOnly[i] {
			continue // compiled when a name needs it (match)
		}
		if re, err := regexp.Compile(`^(?:` + e + `)$`); err == nil {
			l.res[i] = re
		}
	}
	return l
}

// Match returns the first entry that keeps module (a module name: a
// weight's name without ".weight") unconverted and true, or "", false when
// transformers converts it.
func (l *NotConvertList) Match(module string) (entry string, kept bool) {
	if l == nil {
		return "", false
	}
	for i, e := range l.entries {
		if l.match(i, module) {
			return e, true
		}
	}
	return "", false
}

// match is one entry of should_convert_module:
// re.match(rf"(?:{key})(?:(?<=\.)|(?=\.|$))", name) or name.endswith(key).
// Go's regexp has no lookarounds, so the entry must match a whole prefix
// name[:p] for some p at a boundary (p = len(name), name[p] == '.' or
// name[p-1] == '.'); a backtracking re.match succeeds exactly when one does.
func (l *NotConvertList) match(i int, name string) bool {
	entry := l.entries[i]
	if strings.HasSuffix(name, entry) {
		return true // the empty entry too, as in Python
	}
	if l.dotOnly[i] && isASCII(name) {
		// "." matches any character but a newline: the match is name[:len(entry)]
		p := len(entry)
		if p > len(name) || p != len(name) && name[p] != '.' && (p == 0 || name[p-1] != '.') {
			return false
		}
		for j := 0; j < p; j++ {
			if entry[j] != name[j] && (entry[j] != '.' || name[j] == '\n') {
				return false
			}
		}
		return true
	}
	re := l.res[i]
	if l.dotOnly[i] {
		re, _ = regexp.Compile(`^(?:` + entry + `)$`) // a name that is not ASCII: rare
	}
	for p := 0; p <= len(name); p++ {
		if p != len(name) && name[p] != '.' && (p == 0 || name[p-1] != '.') {
			continue
		}
		if re != nil {
			if re.MatchString(name[:p]) {
				return true
			}
		} else if name[:p] == entry {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

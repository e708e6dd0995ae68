package diff

import "github.com/ckpt-dev/ckpt/ckpt"

// diffConfig compares two config.json documents with
// ckpt.CompareConfigNoted and returns the differing paths in sorted order:
// objects are walked key by key ("text_config.vocab_size"), arrays of the
// same length element by element ("text_config.layer_types[3]"), arrays of
// different lengths as a whole; a change after which transformers builds
// the same model (a default filled in, a key moved) or of a bookkeeping key
// is marked as a note, and an integer key given as a float is a change. A
// nil config counts as an empty object.
func diffConfig(base, ft *ckpt.Config) []ckpt.ConfigChange {
	var b, f map[string]any
	if base != nil {
		b = base.Raw
	}
	if ft != nil {
		f = ft.Raw
	}
	return ckpt.CompareConfigNoted(b, f)
}

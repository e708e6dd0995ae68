package ckpt

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Variants of a checkpoint directory, as transformers names them.
// save_pretrained(variant=V) puts V before the last extension of each
// weights name (_add_variant in src/transformers/modeling_utils.py): the
// single file model.V.safetensors, the index model.safetensors.index.V.json
// and its shards model.V-00001-of-0000N.safetensors; from_pretrained(variant=V)
// looks for model.V.safetensors, then model.safetensors.index.V.json
// (modeling_utils.py@040ba146759afc625c77f49d04982bb54873995f, from_pretrained;
// the 5.23.0 release keeps that order in _get_resolved_checkpoint_files).

// IndexVariant is the id of the warning of a directory that holds no
// default checkpoint (no model.safetensors.index.json, no other
// .safetensors file) and one variant, which Open then reads.
const IndexVariant FindingID = "index.variant"

// VariantFiles are the names transformers gives the single file and the
// index of variant v ("" gives the default names).
func VariantFiles(v string) (single, index string) {
	if v == "" {
		return SingleFile, IndexFile
	}
	return "model." + v + ".safetensors", "model.safetensors.index." + v + ".json"
}

// VariantError is a variant (Options.Variant) that cannot be used: a name
// that cannot name files of a checkpoint directory, or a variant given with
// a source that names a file. Reason says why, in the terms of the files;
// it matches ErrUsage.
type VariantError struct {
	Variant, Reason string
}

// Error is the message of the VariantError.
func (e *VariantError) Error() string { return "Options.Variant: " + e.Reason }

// Is makes errors.Is(err, ErrUsage) true.
func (e *VariantError) Is(target error) bool { return target == ErrUsage }

// AmbiguousDirError is a checkpoint directory File with no index and no
// model.safetensors that holds Variants variants (Described: their names
// and files) and nothing else, or the .safetensors files Plain (sorted)
// besides them: a variant (Options.Variant) says which is meant. It
// matches ErrMalformed, as a *FormatError does.
type AmbiguousDirError struct {
	File      string
	Plain     []string
	Variants  int
	Described string
}

// Error is the message of the AmbiguousDirError.
func (e *AmbiguousDirError) Error() string { return e.With("Options.Variant") }

// With is the message of the AmbiguousDirError, variant naming the option
// that opens a variant.
func (e *AmbiguousDirError) With(variant string) string {
	if len(e.Plain) == 0 {
		return fmt.Sprintf("%s: ambiguous checkpoint directory: no %s and no %s, but %d variants: %s; pass %s",
			e.File, IndexFile, SingleFile, e.Variants, e.Described, variant)
	}
	return fmt.Sprintf("%s: ambiguous checkpoint directory: %d .safetensors files (%s) and no %s (besides the variants %s: %s opens one)",
		e.File, len(e.Plain), strings.Join(e.Plain, ", "), IndexFile, e.Described, variant)
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *AmbiguousDirError) Is(target error) bool { return target == ErrMalformed }

// checkVariant refuses a variant name that cannot name files of a
// checkpoint directory (empty, a path separator, control characters, a
// name that is not clean): a *VariantError.
func checkVariant(v string) error {
	if v == "" || strings.ContainsAny(v, "/\\") || v != strings.TrimSpace(v) {
		return &VariantError{Variant: v, Reason: fmt.Sprintf("%s is not a variant name (model.NAME.safetensors, model.safetensors.index.NAME.json)", Quote(v))}
	}
	single, index := VariantFiles(v)
	for _, n := range []string{single, index} {
		if err := CheckName(n); err != nil {
			return &VariantError{Variant: v, Reason: err.Error()}
		}
	}
	return nil
}

// shardSuffix is the -00001-of-00004 of a shard name (huggingface_hub's
// split_torch_state_dict_into_shards, the pattern save_pretrained passes).
var shardSuffix = regexp.MustCompile(`-[0-9]+-of-[0-9]+$`)

// variantDir is what a directory listing holds in variants: for each
// variant its entry (the index, else the single file) and the files that
// belong to it.
type variantDir struct {
	entry map[string]string   // variant -> entry file
	files map[string][]string // variant -> every file of it
}

// variantsOf finds the variants in a listing. A variant is known by its
// index or its single file; shards of a variant that has neither are left
// to the plain files.
func variantsOf(names []string) variantDir {
	vd := variantDir{entry: map[string]string{}, files: map[string][]string{}}
	singles := map[string]string{}
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "model.safetensors.index."); ok {
			if v, ok = strings.CutSuffix(v, ".json"); ok && v != "" {
				vd.entry[v] = n
				vd.files[v] = append(vd.files[v], n)
			}
			continue
		}
		mid, ok := strings.CutPrefix(n, "model.")
		if !ok {
			continue
		}
		if mid, ok = strings.CutSuffix(mid, ".safetensors"); !ok || mid == "" || shardSuffix.MatchString(mid) {
			continue
		}
		singles[mid] = n
	}
	for v, n := range singles {
		if _, ok := vd.entry[v]; !ok {
			vd.entry[v] = n
		}
		vd.files[v] = append(vd.files[v], n)
	}
	for _, n := range names {
		mid, ok := strings.CutPrefix(n, "model.")
		if !ok {
			continue
		}
		if mid, ok = strings.CutSuffix(mid, ".safetensors"); !ok {
			continue
		}
		if loc := shardSuffix.FindStringIndex(mid); loc != nil && loc[0] > 0 {
			if v := mid[:loc[0]]; vd.entry[v] != "" {
				vd.files[v] = append(vd.files[v], n)
			}
		}
	}
	return vd
}

// names lists the variants in natural order.
func (vd variantDir) names() []string {
	out := make([]string, 0, len(vd.entry))
	for v := range vd.entry {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return NaturalLess(out[i], out[j]) })
	return out
}

// describe is "fp16 (model.safetensors.index.fp16.json), bf16 (...)".
func (vd variantDir) describe() string {
	var parts []string
	for _, v := range vd.names() {
		parts = append(parts, fmt.Sprintf("%s (%s)", v, vd.entry[v]))
	}
	return strings.Join(parts, ", ")
}

// belongs reports whether file n is a file of a known variant.
func (vd variantDir) belongs(n string) bool {
	for _, fs := range vd.files {
		for _, f := range fs {
			if f == n {
				return true
			}
		}
	}
	return false
}

// variantEntry is the entry of variant v in a listing, as from_pretrained
// (variant=v) would find it, except that an index beside the single file
// is read, as for the default names (singleBesideIndex warns).
func variantEntry(store Store, names []string, v string) (string, error) {
	single, index := VariantFiles(v)
	has := func(n string) bool {
		for _, x := range names {
			if x == n {
				return true
			}
		}
		return false
	}
	switch {
	case has(index):
		return index, nil
	case has(single):
		return single, nil
	}
	there := "it holds no variant"
	if vd := variantsOf(names); len(vd.entry) > 0 {
		there = "its variants: " + vd.describe()
	}
	return "", &FormatError{File: store.Location(""), Offset: -1, Reason: fmt.Sprintf("no variant %s: neither %s nor %s (%s)", Quote(v), single, index, there)}
}

// variantOfEntry is the variant whose index or single file entry is ("" for
// another name).
func variantOfEntry(entry string) string {
	if v, ok := strings.CutPrefix(entry, "model.safetensors.index."); ok {
		if v, ok = strings.CutSuffix(v, ".json"); ok {
			return v
		}
		return ""
	}
	if v, ok := strings.CutPrefix(entry, "model."); ok {
		if v, ok = strings.CutSuffix(v, ".safetensors"); ok {
			return v
		}
	}
	return ""
}

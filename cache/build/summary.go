package build

import (
	"fmt"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// Document is the cache build JSON document (docs/cli.md).
type Document struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema         ckpt.Schema `json:"schema_version"`
	Out            string      `json:"out"`
	Manifest       string      `json:"manifest"`
	Profile        string      `json:"profile"`
	Mesh           string      `json:"mesh"`
	CacheDir       string      `json:"cache_dir"`
	Files          int         `json:"files"`
	Built          []string    `json:"built"`
	Skipped        int         `json:"skipped"`
	Removed        []string    `json:"removed"`
	SourceTensors  int         `json:"source_tensors"`
	SourceElements int64       `json:"source_elements"`
	SourceBytes    int64       `json:"source_bytes"`
	Rehashed       int         `json:"rehashed"`
	// FromArchive counts the files an unpacked manifest described, rebuilt
	// from the source (Written.FromArchive).
	FromArchive       int     `json:"from_archive"`
	Seconds           float64 `json:"seconds"`
	ElementsPerSecond float64 `json:"elements_per_second"`
	// Warnings are the plan's warnings (mapping.Plan.Warnings), its
	// per-target warnings grouped by rule (mapping.Plan.GroupedWarnings),
	// then the build's notes (Result.Notes).
	Warnings []string `json:"warnings"`
	// Unknown are files in the cache folder no ckpt build recorded (left
	// alone); NonFinite the source tensors built with NaN/Inf kept.
	Unknown   []string         `json:"unknown"`
	NonFinite []ckpt.NonFinite `json:"nonfinite"`
	// PerDevice and Memory are the DRAM each device holds under the plan
	// and whether it fits (mapping.Plan.Memory; set by the caller, which
	// knows the device DRAM).
	PerDevice []mapping.DeviceBytes `json:"per_device,omitempty"`
	Memory    *mapping.Memory       `json:"memory,omitempty"`
	// Vision is the build of the plan's vision part (mapping.Plan.Vision),
	// in its own cache folder; per_device and memory above count both.
	Vision *Document `json:"vision,omitempty"`
}

// document is the build result of plan written to the cache root out, as
// the cache build JSON document; seconds is the wall time of the command.
func (r *Written) document(out string, plan *mapping.Plan, seconds float64) Document {
	s := Document{Out: out, Manifest: filepath.Join(cache.FolderOf(out, plan.CacheDir).Path(), cache.ManifestName),
		Profile: plan.Profile.Name, Mesh: plan.Mesh.String(),
		CacheDir: plan.CacheDir, Files: len(r.Manifest.Files), Built: r.Built, Skipped: len(r.Skipped), Removed: r.Removed,
		SourceTensors: r.SourceTensors, SourceElements: r.SourceElements, SourceBytes: r.SourceBytes, Rehashed: r.Rehashed, FromArchive: len(r.FromArchive),
		Seconds: seconds, Warnings: append(append(append([]string(nil), plan.Warnings...), plan.GroupedWarnings()...), r.notes()...),
		Unknown: append([]string{}, r.Unknown...), NonFinite: append([]ckpt.NonFinite{}, r.NonFinite...)}
	if seconds > 0 {
		s.ElementsPerSecond = float64(r.SourceElements) / seconds
	}
	if s.Built == nil {
		s.Built = []string{}
	}
	if s.Removed == nil {
		s.Removed = []string{}
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	return s
}

// notes are the notes of a build: a stale lock taken over, an earlier
// build of another source replaced, tensors built with NaN/Inf kept,
// unknown files left alone.
func (r *Written) notes() []string {
	var out []string
	if l := r.StaleLock; l != nil {
		out = append(out, fmt.Sprintf("took over the lock of a build that no longer runs (%s)", l))
	}
	if n := len(r.FromArchive); n > 0 {
		from := "an archive"
		if r.Unpacked != nil && r.Unpacked.Archive != "" {
			from = ckpt.EscapeName(r.Unpacked.Archive)
		}
		out = append(out, fmt.Sprintf("%d files came from %s (cache unpack): rebuilt from the source, "+
			"as an archive's manifest is no proof of what they were built from", n, from))
	}
	if r.Replaced != "" {
		out = append(out, fmt.Sprintf("the cache folder held a build of %s; it now holds this source's", ckpt.EscapeName(r.Replaced)))
	}
	if r.PartOf != "" {
		out = append(out, fmt.Sprintf("the vision folder held the vision part of %s (a device folder has one vision folder: its name has no mesh); "+
			"it now holds this build's, and %s has no vision folder of its own (build the two models into different device folders or cache roots)",
			ckpt.EscapeName(r.PartOf), ckpt.EscapeName(r.PartOf)))
	}
	if s := ckpt.NonFiniteNote(r.NonFinite, r.words); s != "" {
		out = append(out, s+"; recorded in the manifest")
	}
	if n := len(r.Unknown); n > 0 {
		out = append(out, fmt.Sprintf("%d file(s) in the cache folder are not from a ckpt build and were left alone (first: %s)", n, ckpt.EscapeName(r.Unknown[0])))
	}
	return out
}

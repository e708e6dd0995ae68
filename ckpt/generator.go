package ckpt

import "time"

// Generator names what wrote a report or a contract and when: the tool,
// its version, the time (RFC 3339, UTC, to the second). Documents carry
// it as "generated_by"; it is never compared.
type Generator struct {
	Tool    string `json:"tool"`
	Version string `json:"version"`
	Time    string `json:"time"`
}

// NewGenerator is the generator tool at version, now.
func NewGenerator(tool, version string, now time.Time) *Generator {
	return &Generator{Tool: tool, Version: version, Time: now.UTC().Format(time.RFC3339)}
}

// String is "ckpt 0.1.0, 2026-12-01T21:57:00Z".
func (g *Generator) String() string { return g.Tool + " " + g.Version + ", " + g.Time }

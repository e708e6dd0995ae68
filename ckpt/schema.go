package ckpt

import "strconv"

// SchemaVersion is the version of every JSON document the ckpt commands
// print (the "schema_version" key at the top of each document and of
// every JSON Lines summary record). It changes when a key is renamed or
// removed or its meaning changes; adding a key does not change it.
// Version 2 changed the keys of diff's per-layer records and of its
// sampled requant rows (docs/cli.md, diff). Version 3 gave every command
// one vocabulary: inspect's group names are diff's and verify's, cache ls
// writes placements, memory configs and per-device shapes as map does,
// and diff's JSON summary has the differs flag of its JSONL summary
// (docs/cli.md, "Schema versions").
const SchemaVersion = 3

// Schema is the schema_version field of a JSON document. Its zero value
// marshals as the current SchemaVersion, so a document built anywhere
// carries the version without setting it; a decoded document keeps the
// version it was written with.
type Schema int

// MarshalJSON writes the version: SchemaVersion for the zero value.
func (s Schema) MarshalJSON() ([]byte, error) {
	if s == 0 {
		s = SchemaVersion
	}
	return []byte(strconv.Itoa(int(s))), nil
}

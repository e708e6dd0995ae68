// Package inspect is the inspect workflow: it opens a checkpoint and lists
// the files and tensors that the globs select, with their summary by dtype
// and group, from the headers alone (Run). Of lists an already open
// checkpoint; Result is the inspect JSON document (docs/cli.md) and
// SummaryRecord the last record of its JSON Lines output.
//
// The package never prints; it returns values and the reader's typed
// errors.
package inspect

// Package contract is the structural contract of a checkpoint: what a
// later checkpoint (a fine-tune, a re-upload) must keep to be a drop-in
// replacement. A Contract records the config (ConfigOf), the FP8 scheme
// and every tensor's name, dtype and shape, with the xxh3 of its bytes
// when the data was read (OfOptions.ReadData).
//
// Run is the `ckpt contract` workflow (open strictly, then Of); New builds
// the contract of an open checkpoint, Write and Read store it as JSON
// (docs/formats.md), and Compare holds a checkpoint's contract against a
// stored one, with findings of the ids ContractKeyAdded ... ContractFP8NotConvert
// that `ckpt verify --against` reports.
//
// The package never prints; it returns values, ckpt.Findings and errors.
package contract

// Package arch derives, from a config alone, the tensors a checkpoint of a
// known architecture must hold: names, shapes, dtypes (with the accepted
// alternatives) and which of them are block-FP8 in an FP8 release.
//
// The one architecture known so far is the Qwen3.5-style hybrid (model_type
// qwen3_5 / qwen3_5_text): Gated DeltaNet and gated full-attention layers, a
// multi-token-prediction head mtp.*, and an optional vision tower.
package arch

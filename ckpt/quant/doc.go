// Package quant describes the quantisation schemes ckpt reads and the
// recipe a checkpoint's config declares: no tensors, only the facts the
// reader applies to them.
//
// A Scheme names how a tensor's values are made from what is stored
// (Plain, BlockFP8, MXFP4, NVFP4, and compressed-tensors' FP8Tensor,
// FP8Channel, FP8PerBlock). SpecOf gives the one description of each (Spec):
// how a config declares it, how its weights and their companions (scales)
// are named, typed and shaped, and the config keys of its ignore list.
//
// A Recipe is a checkpoint's quantisation as its config declares it:
// config.json's quantization_config (Config, read by NewConfig; the recipe
// by FromConfig) or ModelOpt's hf_quant_config.json (FromHFQuantConfig).
// A declaration ckpt does not know is a *RecipeError. Recipe.Ignored says
// which entry of the ignore list leaves a module unquantised; a
// modules_to_not_convert is read as transformers reads it (NotConvertList).
//
// The reader, package ckpt, applies a recipe to the tensors:
// (*ckpt.Checkpoint).QuantRecipe reads it, QuantWeight finds a weight's
// companions, QuantScheme says how each tensor's values are made. quant
// imports only numfmt and the standard library, so that the reader can
// read its config with it.
package quant

// Package ckpttest holds test helpers for the checkpoint reader: corrupt
// variants of every format rule (files and directories, each with the
// message it must produce), a store whose reads can be hooked, and NaN
// injection into a written checkpoint. The checkpoints themselves come from
// package synth; nothing large is committed.
package ckpttest

package build

import (
	"context"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// Hooked is a build's options with the tests' hooks (hooks), for
// WriteHooked.
type Hooked struct {
	Options WriteOptions
	h       hooks
}

// Hook is o without hooks yet.
func Hook(o WriteOptions) Hooked { return Hooked{Options: o} }

// WriteHooked is Write with the hooks of o.
func WriteHooked(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, out string, o Hooked) (*Written, error) {
	return write(ctx, c, plan, out, o.Options, o.h)
}

// HashCompare returns o set to hash every finished file both as written
// and read back (a difference fails the build), calling readBack for each
// file read back.
func HashCompare(o Hooked, readBack func(string)) Hooked {
	o.h.hashMode, o.h.readBack = hashCompare, readBack
	return o
}

// HashReadBack returns o set to hash every finished file by reading it
// back only (the build before files were hashed as written).
func HashReadBack(o Hooked, readBack func(string)) Hooked {
	o.h.hashMode, o.h.readBack = hashReadBack, readBack
	return o
}

// HashStreamed returns o (files hashed as written) with readBack called
// for each file that is read back nonetheless.
func HashStreamed(o Hooked, readBack func(string)) Hooked {
	o.h.readBack = readBack
	return o
}

// NoDirect returns o set to write every file through the page cache, as
// where the file system refuses direct writes.
func NoDirect(o Hooked) Hooked {
	o.h.noDirect = true
	return o
}

// Staging returns o with the staging budget and chunk size of direct
// writes set (bytes; chunk a multiple of 4096).
func Staging(o Hooked, budget, chunk int64) Hooked {
	o.h.stageBytes, o.h.stageChunk = budget, chunk
	return o
}

// StageStats returns o set to call f with the bytes the staged files of a
// durable build wrote directly and through the page cache.
func StageStats(o Hooked, f func(direct, paged int64)) Hooked {
	o.h.stageStats = f
	return o
}

// Notes are the notes of a build (notes).
func (r *Written) Notes() []string { return r.notes() }

package build

// HashCompare returns o set to hash every finished file both as written
// and read back (a difference fails the build), calling readBack for each
// file read back.
func HashCompare(o Options, readBack func(string)) Options {
	o.hashMode, o.readBack = hashCompare, readBack
	return o
}

// HashReadBack returns o set to hash every finished file by reading it
// back only (the build before files were hashed as written).
func HashReadBack(o Options, readBack func(string)) Options {
	o.hashMode, o.readBack = hashReadBack, readBack
	return o
}

// HashStreamed returns o (files hashed as written) with readBack called
// for each file that is read back nonetheless.
func HashStreamed(o Options, readBack func(string)) Options {
	o.readBack = readBack
	return o
}

// NoDirect returns o set to write every file through the page cache, as
// where the file system refuses direct writes.
func NoDirect(o Options) Options {
	o.noDirect = true
	return o
}

// Staging returns o with the staging budget and chunk size of direct
// writes set (bytes; chunk a multiple of 4096).
func Staging(o Options, budget, chunk int64) Options {
	o.stageBytes, o.stageChunk = budget, chunk
	return o
}

// StageStats returns o set to call f with the bytes the staged files of a
// durable build wrote directly and through the page cache.
func StageStats(o Options, f func(direct, paged int64)) Options {
	o.stageStats = f
	return o
}

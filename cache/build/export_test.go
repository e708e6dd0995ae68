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

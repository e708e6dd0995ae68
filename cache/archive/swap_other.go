//go:build !linux

package archive

// exchange puts the folder staged at stage in place of the folder at dir
// (swapRenames: without an atomic exchange of two directories, there is a
// moment where dir does not exist, but never one where it holds a mix).
func exchange(stage, dir string) (string, error) { return swapRenames(stage, dir) }

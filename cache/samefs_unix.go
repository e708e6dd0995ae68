//go:build unix

package cache

import "golang.org/x/sys/unix"

// SameFileSystem reports whether the directories a and b are on one file
// system (the same device), so that their free space is one pool: a
// vision model's two folders, built or unpacked side by side, need room
// for both together there. When either cannot be told it reports true
// (counted together: the cautious answer for a free-space check).
func SameFileSystem(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Stat(a, &sa) != nil || unix.Stat(b, &sb) != nil {
		return true
	}
	return sa.Dev == sb.Dev
}

//go:build unix

package build

import "golang.org/x/sys/unix"

// freeSpace is the bytes an unprivileged writer may use on the file
// system of dir (statfs f_bavail × f_bsize).
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

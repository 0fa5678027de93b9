//go:build linux || darwin || freebsd

package hub

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged user may still write on dir's
// file system; false when it cannot be told.
func freeBytes(dir string) (uint64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}

//go:build unix

package history

import (
	"os"
	"syscall"
)

// fileID is the device and inode of fi; ok is false when unknown.
func fileID(fi os.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true
}

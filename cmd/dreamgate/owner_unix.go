//go:build unix

package main

import (
	"fmt"
	"os"
	"os/user"
	"syscall"
)

// otherOwner reports whether dir belongs to an account other than this
// process's, and names it.
func otherOwner(dir string) (string, bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Getuid() {
		return "", false
	}
	if u, err := user.LookupId(fmt.Sprint(st.Uid)); err == nil {
		return u.Username, true
	}
	return fmt.Sprintf("uid %d", st.Uid), true
}

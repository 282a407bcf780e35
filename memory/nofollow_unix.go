//go:build unix

package memory

import "syscall"

// noFollow makes an open fail on a symbolic link as its last element.
const noFollow = syscall.O_NOFOLLOW

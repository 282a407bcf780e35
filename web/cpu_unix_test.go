//go:build unix

package web

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system: a
// benchmark's server time on a machine others load too, where the wall
// clock also counts their work.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build unix

package metrics

import "syscall"

// readUsage reads the CPU time and the open files limit, which every Unix
// reports the same way.
func readUsage(s *procStats) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.set(procCPUUser, float64(ru.Utime.Nano())/1e9)
		s.set(procCPUSystem, float64(ru.Stime.Nano())/1e9)
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		s.set(procMaxFDs, float64(rl.Cur))
	}
}

package metrics

import (
	"bytes"
	"os"
	"strconv"
	"sync"
)

// userHZ is the unit of the times in /proc/self/stat. Linux fixes it at
// 100 on every architecture Go runs on; reading it would need cgo
// (sysconf).
const userHZ = 100

// startTime is when the process started, read from /proc at the first
// scrape: it does not change.
var startTime struct {
	once sync.Once
	sec  float64
	ok   bool
}

// readProc reads memory, threads, page faults, I/O, open files and the
// start time from /proc/self.
func readProc(s *procStats) {
	pageSize := float64(os.Getpagesize())
	if stat, err := os.ReadFile("/proc/self/stat"); err == nil {
		// The command name, in parentheses, may hold spaces: fields are
		// counted from after it, the first being field 3 (state).
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			f := bytes.Fields(stat[i+1:])
			field := func(n int, set func(float64)) {
				if n-3 < len(f) {
					if v, err := strconv.ParseUint(string(f[n-3]), 10, 64); err == nil {
						set(float64(v))
					}
				}
			}
			field(10, func(v float64) { s.set(procMinorFaults, v) })
			field(12, func(v float64) { s.set(procMajorFaults, v) })
			field(20, func(v float64) { s.set(procThreads, v) })
			field(23, func(v float64) { s.set(procVirtual, v) })
			field(24, func(v float64) { s.set(procRSS, v*pageSize) })
			field(22, func(v float64) {
				startTime.once.Do(func() { startTime.sec, startTime.ok = bootTime() })
				if startTime.ok {
					s.set(procStartTime, startTime.sec+v/userHZ)
				}
			})
		}
	}
	keyed("/proc/self/status", func(key []byte, v float64) {
		// In kB.
		for _, k := range [...]struct {
			key string
			i   int
		}{{"VmPeak", procVirtualPeak}, {"VmHWM", procRSSPeak}, {"RssAnon", procRSSAnon}, {"RssFile", procRSSFile}, {"RssShmem", procRSSShared}} {
			if string(key) == k.key {
				s.set(k.i, v*1024)
			}
		}
	})
	// Not readable under some sandboxes; then left out.
	keyed("/proc/self/io", func(key []byte, v float64) {
		for _, k := range [...]struct {
			key string
			i   int
		}{{"rchar", procIOReadBytes}, {"wchar", procIOWrittenBytes}, {"syscr", procIOReadSyscalls}, {"syscw", procIOWriteSyscalls}, {"read_bytes", procIOStorageReadBytes}, {"write_bytes", procIOStorageWrittenBytes}} {
			if string(key) == k.key {
				s.set(k.i, v)
			}
		}
	})
	if n, ok := openFDs(); ok {
		s.set(procOpenFDs, n)
	}
}

// keyed calls f with each "key: number …" line of a /proc file whose
// value parses.
func keyed(path string, f func(key []byte, v float64)) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	for line := range bytes.Lines(data) {
		key, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(string(fields[0]), 10, 64); err == nil {
			f(key, float64(v))
		}
	}
}

// bootTime is when the machine booted, in seconds since the Unix epoch
// (btime in /proc/stat): /proc/self/stat gives the start time after it.
func bootTime() (float64, bool) {
	var sec float64
	var ok bool
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(data) {
		if rest, found := bytes.CutPrefix(line, []byte("btime ")); found {
			v, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 64)
			sec, ok = float64(v), err == nil
			break
		}
	}
	return sec, ok
}

// openFDs counts the entries of /proc/self/fd, less the one that reading
// it opens.
func openFDs() (float64, bool) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(256)
		n += len(names)
		if err != nil {
			break
		}
	}
	return float64(n - 1), true
}

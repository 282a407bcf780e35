package metrics

// The process_* families, by index, in the order of their names. Each
// platform fills what it can read (process_linux.go, process_unix.go); the
// rest are left out.
const (
	procCPUSystem = iota
	procCPUTotal
	procCPUUser
	procIOReadBytes
	procIOReadSyscalls
	procIOStorageReadBytes
	procIOStorageWrittenBytes
	procIOWriteSyscalls
	procIOWrittenBytes
	procMajorFaults
	procMaxFDs
	procMinorFaults
	procThreads
	procOpenFDs
	procRSSAnon
	procRSS
	procRSSFile
	procRSSPeak
	procRSSShared
	procStartTime
	procVirtual
	procVirtualPeak
	procCount
)

var procFamilies = [procCount]struct{ name, typ, help string }{
	procCPUSystem:             {"process_cpu_seconds_system_total", "counter", "CPU time spent in the kernel."},
	procCPUTotal:              {"process_cpu_seconds_total", "counter", "CPU time spent, user and system."},
	procCPUUser:               {"process_cpu_seconds_user_total", "counter", "CPU time spent in user space."},
	procIOReadBytes:           {"process_io_read_bytes_total", "counter", "Bytes read by read-like system calls."},
	procIOReadSyscalls:        {"process_io_read_syscalls_total", "counter", "Read-like system calls."},
	procIOStorageReadBytes:    {"process_io_storage_read_bytes_total", "counter", "Bytes read from storage."},
	procIOStorageWrittenBytes: {"process_io_storage_written_bytes_total", "counter", "Bytes written to storage."},
	procIOWriteSyscalls:       {"process_io_write_syscalls_total", "counter", "Write-like system calls."},
	procIOWrittenBytes:        {"process_io_written_bytes_total", "counter", "Bytes written by write-like system calls."},
	procMajorFaults:           {"process_major_pagefaults_total", "counter", "Page faults that loaded a page from disk."},
	procMaxFDs:                {"process_max_fds", "gauge", "The limit on open file descriptors."},
	procMinorFaults:           {"process_minor_pagefaults_total", "counter", "Page faults served without disk."},
	procThreads:               {"process_num_threads", "gauge", "OS threads of the process."},
	procOpenFDs:               {"process_open_fds", "gauge", "Open file descriptors."},
	procRSSAnon:               {"process_resident_memory_anon_bytes", "gauge", "Resident anonymous memory."},
	procRSS:                   {"process_resident_memory_bytes", "gauge", "Resident memory."},
	procRSSFile:               {"process_resident_memory_file_bytes", "gauge", "Resident file mappings."},
	procRSSPeak:               {"process_resident_memory_peak_bytes", "gauge", "The most resident memory the process has had."},
	procRSSShared:             {"process_resident_memory_shared_bytes", "gauge", "Resident shared memory."},
	procStartTime:             {"process_start_time_seconds", "gauge", "When the process started, in seconds since the Unix epoch."},
	procVirtual:               {"process_virtual_memory_bytes", "gauge", "Virtual memory size."},
	procVirtualPeak:           {"process_virtual_memory_peak_bytes", "gauge", "The largest virtual memory size the process has had."},
}

// procStats are the process figures read at one scrape; ok says which
// were read.
type procStats struct {
	v  [procCount]float64
	ok [procCount]bool
}

func (s *procStats) set(i int, v float64) {
	s.v[i], s.ok[i] = v, true
}

// appendProcess appends the process_* families that this platform can
// read, read now. A figure that cannot be read is left out: a scrape is
// no place to report it.
func appendProcess(b []byte) []byte {
	var s procStats
	readUsage(&s)
	readProc(&s)
	if s.ok[procCPUUser] && s.ok[procCPUSystem] {
		s.set(procCPUTotal, s.v[procCPUUser]+s.v[procCPUSystem])
	}
	for i, f := range procFamilies {
		if s.ok[i] {
			b = scalar(b, f.name, f.typ, f.help, s.v[i])
		}
	}
	return b
}

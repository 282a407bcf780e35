package metrics

import (
	"runtime"
	"runtime/debug"
	"time"
)

// appendRuntime appends the go_* families, in the order of their names,
// read now: the series of the usual Prometheus Go collector.
//
// It reads runtime, not runtime/metrics: importing runtime/metrics runs
// its package init at every start (about 0.08 ms, 95 allocations,
// measured with GODEBUG=inittrace=1), for series (GC and scavenger CPU
// time, scheduler latencies, mutex wait) that the usual collector does
// not serve either. A test keeps it out.
func appendRuntime(b []byte) []byte {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)

	b = scalar(b, "go_cgo_calls_count", "counter", "Calls made from Go to C.", float64(runtime.NumCgoCall()))
	b = scalar(b, "go_cpu_count", "gauge", "CPUs the process may use.", float64(runtime.NumCPU()))
	b = appendHeader(b, "go_gc_duration_seconds", "summary", "Wall time of the GC's stop-the-world pauses: quantiles of the recent ones, sum and count of all.")
	for i, q := range [...]string{"0", "0.25", "0.5", "0.75", "1"} {
		b = appendName(b, "go_gc_duration_seconds", "", [2][2]string{}, "quantile", q)
		b = append(b, ' ')
		b = appendValue(b, gc.PauseQuantiles[i].Seconds())
		b = append(b, '\n')
	}
	b = appendSample(b, "go_gc_duration_seconds", "_sum", [2][2]string{}, gc.PauseTotal.Seconds())
	b = appendSample(b, "go_gc_duration_seconds", "_count", [2][2]string{}, float64(gc.NumGC))
	b = scalar(b, "go_gc_forced_count", "counter", "GC cycles forced by the program.", float64(ms.NumForcedGC))
	b = scalar(b, "go_gomaxprocs", "gauge", "GOMAXPROCS.", float64(runtime.GOMAXPROCS(0)))
	b = scalar(b, "go_goroutines", "gauge", "Goroutines that exist.", float64(runtime.NumGoroutine()))
	b = appendHeader(b, "go_info", "gauge", "The Go version the binary was built with.")
	b = appendSample(b, "go_info", "", [2][2]string{{"version", runtime.Version()}}, 1)
	b = scalar(b, "go_memlimit_bytes", "gauge", "The GC's soft memory limit (GOMEMLIMIT).", float64(debug.SetMemoryLimit(-1)))
	b = scalar(b, "go_memstats_alloc_bytes", "gauge", "Bytes of heap objects allocated and in use.", float64(ms.Alloc))
	b = scalar(b, "go_memstats_alloc_bytes_total", "counter", "Bytes of heap objects allocated.", float64(ms.TotalAlloc))
	b = scalar(b, "go_memstats_buck_hash_sys_bytes", "gauge", "Bytes used by the profiling bucket hash table.", float64(ms.BuckHashSys))
	b = scalar(b, "go_memstats_frees_total", "counter", "Heap objects freed.", float64(ms.Frees))
	b = scalar(b, "go_memstats_gc_cpu_fraction", "gauge", "Fraction of the CPU time available used by the GC since the program started.", ms.GCCPUFraction)
	b = scalar(b, "go_memstats_gc_sys_bytes", "gauge", "Bytes used for GC metadata.", float64(ms.GCSys))
	b = scalar(b, "go_memstats_heap_alloc_bytes", "gauge", "Bytes of heap objects allocated and in use.", float64(ms.HeapAlloc))
	b = scalar(b, "go_memstats_heap_idle_bytes", "gauge", "Bytes in idle heap spans.", float64(ms.HeapIdle))
	b = scalar(b, "go_memstats_heap_inuse_bytes", "gauge", "Bytes in in-use heap spans.", float64(ms.HeapInuse))
	b = scalar(b, "go_memstats_heap_objects", "gauge", "Heap objects allocated.", float64(ms.HeapObjects))
	b = scalar(b, "go_memstats_heap_released_bytes", "gauge", "Bytes of heap returned to the OS.", float64(ms.HeapReleased))
	b = scalar(b, "go_memstats_heap_sys_bytes", "gauge", "Bytes of heap obtained from the OS.", float64(ms.HeapSys))
	b = scalar(b, "go_memstats_last_gc_time_seconds", "gauge", "When the last GC finished, in seconds since the Unix epoch.", float64(ms.LastGC)/1e9)
	b = scalar(b, "go_memstats_lookups_total", "counter", "Pointer lookups by the runtime.", float64(ms.Lookups))
	b = scalar(b, "go_memstats_mallocs_total", "counter", "Heap objects allocated.", float64(ms.Mallocs))
	b = scalar(b, "go_memstats_mcache_inuse_bytes", "gauge", "Bytes in use by mcache structures.", float64(ms.MCacheInuse))
	b = scalar(b, "go_memstats_mcache_sys_bytes", "gauge", "Bytes obtained from the OS for mcache structures.", float64(ms.MCacheSys))
	b = scalar(b, "go_memstats_mspan_inuse_bytes", "gauge", "Bytes in use by mspan structures.", float64(ms.MSpanInuse))
	b = scalar(b, "go_memstats_mspan_sys_bytes", "gauge", "Bytes obtained from the OS for mspan structures.", float64(ms.MSpanSys))
	b = scalar(b, "go_memstats_next_gc_bytes", "gauge", "Heap size at which the next GC will run.", float64(ms.NextGC))
	b = scalar(b, "go_memstats_other_sys_bytes", "gauge", "Bytes used for other runtime allocations.", float64(ms.OtherSys))
	b = scalar(b, "go_memstats_stack_inuse_bytes", "gauge", "Bytes in stack spans.", float64(ms.StackInuse))
	b = scalar(b, "go_memstats_stack_sys_bytes", "gauge", "Bytes of stack memory obtained from the OS.", float64(ms.StackSys))
	b = scalar(b, "go_memstats_sys_bytes", "gauge", "Bytes obtained from the OS.", float64(ms.Sys))
	threads, _ := runtime.ThreadCreateProfile(nil)
	b = scalar(b, "go_threads", "gauge", "OS threads the runtime has made.", float64(threads))
	return b
}

// scalar appends a family of one unlabelled sample.
func scalar(b []byte, name, typ, help string, v float64) []byte {
	b = appendHeader(b, name, typ, help)
	return appendSample(b, name, "", [2][2]string{}, v)
}

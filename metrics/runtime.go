package metrics

import (
	"math"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"time"
)

// The runtime/metrics samples appendRuntime reads, by index.
const (
	rtGCCPU = iota
	rtGCMarkAssistCPU
	rtGCPauses
	rtMemLimit
	rtMutexWait
	rtSchedLatencies
	rtScavengeCPU
	rtThreads
	rtCount
)

var rtNames = [rtCount]string{
	rtGCCPU:           "/cpu/classes/gc/total:cpu-seconds",
	rtGCMarkAssistCPU: "/cpu/classes/gc/mark/assist:cpu-seconds",
	rtGCPauses:        "/sched/pauses/total/gc:seconds",
	rtMemLimit:        "/gc/gomemlimit:bytes",
	rtMutexWait:       "/sync/mutex/wait/total:seconds",
	rtSchedLatencies:  "/sched/latencies:seconds",
	rtScavengeCPU:     "/cpu/classes/scavenge/total:cpu-seconds",
	rtThreads:         "/sched/threads/total:threads",
}

// appendRuntime appends the go_* families, in the order of their names,
// read now: the usual Prometheus Go collector's memstats, GC and scheduler
// series.
func appendRuntime(b []byte) []byte {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gc := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gc)
	var samples [rtCount]rtmetrics.Sample
	for i := range samples {
		samples[i].Name = rtNames[i]
	}
	rtmetrics.Read(samples[:])

	b = scalar(b, "go_cgo_calls_count", "counter", "Calls made from Go to C.", float64(runtime.NumCgoCall()))
	b = scalar(b, "go_cpu_count", "gauge", "CPUs the process may use.", float64(runtime.NumCPU()))
	b = rtScalar(b, "go_gc_cpu_seconds_total", "counter", "CPU time spent in the GC.", samples[rtGCCPU])
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
	b = rtScalar(b, "go_gc_mark_assist_cpu_seconds_total", "counter", "CPU time goroutines spent helping the GC mark.", samples[rtGCMarkAssistCPU])
	b = rtHistogram(b, "go_gc_pauses_seconds", "Stop-the-world pauses for the GC (_sum estimated from the buckets).", samples[rtGCPauses])
	b = scalar(b, "go_gomaxprocs", "gauge", "GOMAXPROCS.", float64(runtime.GOMAXPROCS(0)))
	b = scalar(b, "go_goroutines", "gauge", "Goroutines that exist.", float64(runtime.NumGoroutine()))
	b = appendHeader(b, "go_info", "gauge", "The Go version the binary was built with.")
	b = appendSample(b, "go_info", "", [2][2]string{{"version", runtime.Version()}}, 1)
	b = rtScalar(b, "go_memlimit_bytes", "gauge", "The GC's soft memory limit (GOMEMLIMIT).", samples[rtMemLimit])
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
	b = rtScalar(b, "go_mutex_wait_seconds_total", "counter", "Time goroutines spent blocked on a sync.Mutex or RWMutex.", samples[rtMutexWait])
	b = rtScalar(b, "go_scavenge_cpu_seconds_total", "counter", "CPU time spent returning memory to the OS.", samples[rtScavengeCPU])
	b = rtHistogram(b, "go_sched_latencies_seconds", "Time goroutines spent runnable before running (_sum estimated from the buckets).", samples[rtSchedLatencies])
	b = rtScalar(b, "go_threads", "gauge", "OS threads the runtime made.", samples[rtThreads])
	return b
}

// scalar appends a family of one unlabelled sample.
func scalar(b []byte, name, typ, help string, v float64) []byte {
	b = appendHeader(b, name, typ, help)
	return appendSample(b, name, "", [2][2]string{}, v)
}

// rtScalar appends a family of one runtime/metrics value; a value this
// Go does not have leaves the family out.
func rtScalar(b []byte, name, typ, help string, s rtmetrics.Sample) []byte {
	switch s.Value.Kind() {
	case rtmetrics.KindUint64:
		return scalar(b, name, typ, help, float64(s.Value.Uint64()))
	case rtmetrics.KindFloat64:
		return scalar(b, name, typ, help, s.Value.Float64())
	}
	return b
}

// rtHistogram appends a runtime/metrics histogram as a Prometheus one.
// The runtime's buckets are fine (about 160, a few per power of two); the
// bounds kept are the runtime's own, one at least every factor of four
// from 1 µs to 100 s, so every count stays exact and only resolution is
// lost. The runtime keeps no sum: _sum is estimated from each bucket's
// midpoint.
func rtHistogram(b []byte, name, help string, s rtmetrics.Sample) []byte {
	if s.Value.Kind() != rtmetrics.KindFloat64Histogram {
		return b
	}
	h := s.Value.Float64Histogram()
	b = appendHeader(b, name, "histogram", help)
	var cum uint64
	var sum float64
	next := 1e-6
	for i, n := range h.Counts {
		lo, hi := math.Max(h.Buckets[i], 0), h.Buckets[i+1]
		cum += n
		if !math.IsInf(hi, 1) {
			sum += float64(n) * (lo + hi) / 2
		} else {
			sum += float64(n) * lo
		}
		// Keep the first bound at or past next, up to 100 s.
		if math.IsInf(hi, 1) || hi < next || hi > 100 {
			continue
		}
		b = appendName(b, name, "_bucket", [2][2]string{}, "le", string(appendValue(nil, hi)))
		b = append(b, ' ')
		b = appendValue(b, float64(cum))
		b = append(b, '\n')
		next = hi * 4
	}
	b = appendName(b, name, "_bucket", [2][2]string{}, "le", "+Inf")
	b = append(b, ' ')
	b = appendValue(b, float64(cum))
	b = append(b, '\n')
	b = appendSample(b, name, "_sum", [2][2]string{}, sum)
	return appendSample(b, name, "_count", [2][2]string{}, float64(cum))
}

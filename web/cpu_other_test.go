//go:build !unix

package web

import "time"

// processCPU is not measured here: the benchmarks report wall time alone.
func processCPU() time.Duration { return 0 }

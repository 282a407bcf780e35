//go:build !unix

package memory

// noFollow: no such flag here; ReadFile's check that the file opened is
// the one described stands alone.
const noFollow = 0

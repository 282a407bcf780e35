//go:build !linux

package main

// maybeExecUnderMDWE: the kernel switch exists on Linux only.
func maybeExecUnderMDWE() {}

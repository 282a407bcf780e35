//go:build unix

package main

import "syscall"

// privateUmask makes what the process creates owner-only, whatever the
// umask it was started with. Our own files are created owner-only
// explicitly; this also covers what libraries create on their own (the
// memory repository's directories, config and refs, written by go-git).
// MCP servers the gateway starts inherit it: their files are owner-only
// too (docs/mcp.md says how to loosen that for one server).
func privateUmask() { syscall.Umask(0o077) }

//go:build !unix

package workspace

import "io/fs"

// linkCount is 1 where the file system does not report link counts through
// fs.FileInfo; the os.Root still keeps every access inside the workspace.
func linkCount(fs.FileInfo) uint64 { return 1 }

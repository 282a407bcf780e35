//go:build unix

package workspace

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The umask must not change the mode asked for: session metadata is 0600,
// a restored executable 0755.
func TestWriteFileModeIsExact(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v; want 0644 despite the umask", fi.Mode(), err)
	}
}

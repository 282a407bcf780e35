package dream

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/workspace"
)

// TestSnapshotPutBack: a failed phase 2's edits are undone file by file;
// untouched files are not rewritten and links are left alone.
func TestSnapshotPutBack(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	testkit.WriteFile(t, ws, "SOUL.md", initSoul)
	testkit.WriteFile(t, outside, "user.md", "outside\n")
	if err := os.Symlink(filepath.Join(outside, "user.md"), filepath.Join(ws, "USER.md")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	if err := os.Chmod(filepath.Join(ws, "SOUL.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	// memory/MEMORY.md is missing.
	root := openRoot(t, ws)
	snaps, err := snapshot(root)
	if err != nil {
		t.Fatal(err)
	}

	testkit.WriteFile(t, ws, "SOUL.md", "half-edited\n")
	testkit.WriteFile(t, ws, "memory/MEMORY.md", "created by a failed run\n")
	restored, err := putBack(root, snaps)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SOUL.md", "memory/MEMORY.md"}; !reflect.DeepEqual(restored, want) {
		t.Errorf("restored = %v, want %v", restored, want)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "SOUL.md"))
	if string(b) != initSoul {
		t.Errorf("SOUL.md = %q", b)
	}
	if fi, err := os.Stat(filepath.Join(ws, "SOUL.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("SOUL.md mode = %v, %v; want 0600 kept", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(ws, "memory", "MEMORY.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("MEMORY.md created by the failed run still exists: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "user.md")); string(b) != "outside\n" {
		t.Errorf("the link's target was touched: %q", b)
	}
	if restored, err := putBack(root, snaps); err != nil || len(restored) != 0 {
		t.Errorf("second putBack rewrote %v, %v", restored, err)
	}
}

func openRoot(t *testing.T, dir string) *workspace.Root {
	t.Helper()
	r, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// TestSnapshotAndPutBackHoldTheWriteLock: a chat write in progress through
// the shared workspace (holding its write lock) is never interleaved with
// the snapshot or the roll-back of a failed phase 2: both wait for it, so
// the snapshot never records half of it and the roll-back compares and
// rewrites the files as they are once it is done.
func TestSnapshotAndPutBackHoldTheWriteLock(t *testing.T) {
	ws := t.TempDir()
	testkit.WriteFile(t, ws, "SOUL.md", initSoul)
	testkit.WriteFile(t, ws, "USER.md", initUser)
	testkit.WriteFile(t, ws, "memory/MEMORY.md", initMemory)
	root := openRoot(t, ws)

	// holdLock takes the write lock and keeps it until release is closed.
	holdLock := func() (release chan struct{}, done chan error) {
		held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- root.Exclusive(func() error {
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		return release, done
	}
	waitsFor := func(name string, op func() error) {
		t.Helper()
		release, held := holdLock()
		finished := make(chan error, 1)
		go func() { finished <- op() }()
		select {
		case err := <-finished:
			t.Fatalf("%s ran while the workspace's write lock was held (err %v)", name, err)
		case <-time.After(200 * time.Millisecond):
		}
		close(release)
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		if err := <-finished; err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	var snaps []fileSnap
	waitsFor("snapshot", func() (err error) {
		snaps, err = snapshot(root)
		return err
	})
	testkit.WriteFile(t, ws, "memory/MEMORY.md", "half-edited by a failed run\n")
	var restored []string
	waitsFor("putBack", func() (err error) {
		restored, err = putBack(root, snaps)
		return err
	})
	if !reflect.DeepEqual(restored, []string{"memory/MEMORY.md"}) {
		t.Errorf("restored = %v", restored)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "memory", "MEMORY.md")); string(b) != initMemory {
		t.Errorf("MEMORY.md = %q after the roll-back", b)
	}
}

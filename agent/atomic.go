package agent

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path"
)

// newFileMode is the mode of files the tools create (before the umask).
const newFileMode fs.FileMode = 0o644

// writeAtomic replaces rel with data so that a reader (or a crash) sees the
// old content or the new, never a mix: a temp file in the same directory,
// fsync, rename, then fsync of the directory. existing is the Lstat of the
// file being replaced (nil when it is new); its permission bits are kept.
func (w *Workspace) writeAtomic(rel string, data []byte, existing fs.FileInfo) error {
	dir := path.Dir(rel)
	// A short fixed-length name: the target's own name may already be near
	// the 255-byte limit.
	tmp := path.Join(dir, ".dreamgate-tmp-"+rand.Text())
	mode := newFileMode
	if existing != nil {
		mode = existing.Mode().Perm()
	}
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return ioFailure("write", rel, err)
	}
	err = fillAndClose(f, data, mode, existing != nil)
	if err == nil {
		err = w.root.Rename(tmp, rel)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return ioFailure("write", rel, err)
	}
	// The rename is durable only once the directory is synced. The content
	// is already in place, so a failure here is not reported as a failed
	// write.
	if d, err := w.root.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// fillAndClose writes data, sets mode when keepMode (OpenFile's mode went
// through the umask; the replaced file's did not), syncs and closes f.
func fillAndClose(f *os.File, data []byte, mode fs.FileMode, keepMode bool) error {
	_, err := f.Write(data)
	if err == nil && keepMode {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// errChanged: the file at a checked path is no longer the one checked.
var errChanged = errors.New("file changed during the operation")

package workspace

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// tempPrefix starts the name of every temp file WriteFile creates. The
// name is short and fixed in length (the target's own name may already be
// near the 255-byte limit) and unique, so two writers never share one.
const tempPrefix = ".dreamgate-tmp-"

// IsTemp reports whether name (a base name) is one of WriteFile's temp
// files. One found when no write is running is the leftover of a killed
// process and may be removed.
func IsTemp(name string) bool { return strings.HasPrefix(name, tempPrefix) }

// WriteFile replaces the file at name (an ordinary path, absolute or
// relative to the working directory) with data, atomically and durably:
// a reader, or the file system after a crash, sees the old content or the
// new, never a mix, and once WriteFile returns nil the new content survives
// a crash. Missing parent directories are created, owner-only. perm is the file's
// permission bits, exactly (not filtered by the umask).
//
// The write goes through an os.Root opened on the file's directory, as
// Root.WriteFile does: it is the same write.
func WriteFile(name string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", base, err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", base, err)
	}
	defer r.Close()
	if err := writeIn(r, base, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", base, err)
	}
	return nil
}

// writeIn is the one atomic write: a uniquely named temp file beside rel
// (created exclusively), data written, mode set, fsync, rename over rel,
// fsync of the directory. The temp file is removed when any step before
// the rename fails. Errors are the os errors, unwrapped enough for
// errors.Is and errors.As.
func writeIn(r *os.Root, rel string, data []byte, perm fs.FileMode) error {
	dir := path.Dir(rel)
	tmp, err := writeTemp(r, dir, data, perm)
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		if tmp != "" {
			_ = r.Remove(tmp)
		}
		return err
	}
	return syncDir(r, dir)
}

// writeTemp writes data to a new, uniquely named temp file in dir (made
// when missing), with mode perm whatever the umask, fsynced and closed,
// and returns its name; after an error the caller removes a name it
// returned ("" when no file was made).
func writeTemp(r *os.Root, dir string, data []byte, perm fs.FileMode) (string, error) {
	if dir != "." {
		if err := r.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
	}
	tmp := path.Join(dir, tempPrefix+rand.Text())
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // OpenFile's mode went through the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return tmp, err
}

// syncDir makes a rename or a creation in dir durable. A file system that
// cannot sync directories (EINVAL, ENOTSUP) has nothing more to offer and
// is not an error.
func syncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.ENOTSUP) {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// SyncDir makes a rename or a file creation in dir (an ordinary path)
// durable, for writers that create or rename files themselves (an append
// that creates its file, a migration's rename).
func SyncDir(dir string) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("open directory for sync: %w", err)
	}
	defer r.Close()
	return syncDir(r, ".")
}

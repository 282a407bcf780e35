package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// A backup is a gzip'd tar: first the manifest (backupManifest), then the
// state directory's files under state/, then the workspace's under
// workspace/ — regular files and folders only, owner-only.
//
// It is taken as one moment with Dream paused (writeBackup), in an order
// that keeps what each record says about another true: the conversations
// (whose metadata say what of them is archived) and the inboxes before the
// archive, which then holds at least what they say; the memory files, the
// repository and Dream's ledger do not change meanwhile. A file still being
// appended to (a conversation, the archive) is copied up to its size when
// opened, so at worst its last line is cut, as by a crash, which its reader
// skips; one that vanished meanwhile (a temporary file) is left out.

// backupFormat is the manifest's format; a backup of a later format is
// refused rather than half read.
const backupFormat = 1

// manifestName is the manifest's entry.
const manifestName = "dreamgate-backup.json"

// backupManifest says what a backup is.
type backupManifest struct {
	Format    int       `json:"format"`
	Dreamgate string    `json:"dreamgate"`
	Created   time.Time `json:"created"`
	// Workspace and StateDir are where the files were.
	Workspace string `json:"workspace"`
	StateDir  string `json:"stateDir"`
	// RecallIndex says why the recall index is not in it.
	RecallIndex string `json:"recallIndex"`
}

// backupArchive writes cfg's workspace and state directory to w as a
// backup and returns how many files it holds.
func backupArchive(w io.Writer, cfg Config, now time.Time) (int, error) {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	m := backupManifest{Format: backupFormat, Dreamgate: readVersion().Version, Created: now.UTC(),
		Workspace: cfg.Workspace, StateDir: cfg.StateDir,
		RecallIndex: "not included: the first search after a restore rebuilds it from the archive, the conversations and cold memory"}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := tw.WriteHeader(&tar.Header{Name: manifestName, Mode: 0o600, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
		return 0, err
	}
	if _, err := tw.Write(data); err != nil {
		return 0, err
	}
	files := 0
	for _, tree := range []struct {
		prefix, dir string
		skip        func(string) bool
	}{
		{"state", cfg.StateDir, backupSkips(cfg, false)},
		{"workspace", cfg.Workspace, backupSkips(cfg, true)},
	} {
		n, err := tarTree(tw, tree.prefix, tree.dir, tree.skip)
		files += n
		if err != nil {
			return files, fmt.Errorf("%s: %w", tree.dir, err)
		}
	}
	if err := tw.Close(); err != nil {
		return files, err
	}
	return files, zw.Close()
}

// tarTree adds dir's folders and regular files under prefix, leaving out
// what skip names.
func tarTree(tw *tar.Writer, prefix, dir string, skip func(rel string) bool) (int, error) {
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile, or never made
			}
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		name := prefix + "/" + rel
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Name: name + "/", Mode: 0o700, Typeflag: tar.TypeDir})
		case d.Type().IsRegular():
			added, err := tarFile(tw, name, p)
			if added {
				files++
			}
			return err
		}
		return nil // a socket, a link: nothing to keep
	})
	return files, err
}

// tarFile adds the file at p as name, up to its size when opened; a file
// gone meanwhile is left out.
func tarFile(tw *tar.Writer, name, p string) (bool, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()&0o700 | 0o400), Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(h); err != nil {
		return false, err
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return false, fmt.Errorf("copy %s: %w", p, err)
	}
	return true, nil
}

// readManifest reads a backup's first entry, its manifest.
func readManifest(tr *tar.Reader) (backupManifest, error) {
	var m backupManifest
	h, err := tr.Next()
	if err != nil || h.Name != manifestName {
		return m, errors.New("it is not a dreamgate backup (no manifest first)")
	}
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
		return m, fmt.Errorf("its manifest does not read: %w", err)
	}
	if m.Format > backupFormat {
		return m, fmt.Errorf("it was made by dreamgate %s in a later format (%d); restore it with that version or a later one", m.Dreamgate, m.Format)
	}
	if m.Format < 1 {
		return m, errors.New("its manifest names no format")
	}
	return m, nil
}

// extractBackup writes the backup's files into cfg's workspace and state
// directory, never over a file that is there (keep names the one file
// that may be: the config in use, which is left as it is). It returns the
// files written and the entries kept back.
func extractBackup(tr *tar.Reader, cfg Config, keep string) (files int, kept []string, err error) {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, kept, nil
		}
		if err != nil {
			return files, kept, fmt.Errorf("read the backup: %w", err)
		}
		dest, err := backupDest(h.Name, cfg)
		if err != nil {
			return files, kept, err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dest, 0o700)
		case tar.TypeReg:
			if dest == keep {
				kept = append(kept, h.Name)
				continue
			}
			err = writeRestored(dest, tr, fs.FileMode(h.Mode).Perm()&0o700|0o400)
			files++
		default:
			err = fmt.Errorf("the backup holds %s, which is neither a file nor a folder", h.Name)
		}
		if err != nil {
			return files, kept, err
		}
	}
}

// backupDest is where an entry goes: under the workspace or the state
// directory, never outside them.
func backupDest(name string, cfg Config) (string, error) {
	top, rel, _ := strings.Cut(strings.TrimSuffix(name, "/"), "/")
	base := map[string]string{"workspace": cfg.Workspace, "state": cfg.StateDir}[top]
	if base == "" || rel == "" || !filepath.IsLocal(filepath.FromSlash(rel)) || path.Clean(rel) != rel {
		return "", fmt.Errorf("the backup holds %q, which is not a workspace or state file", name)
	}
	return filepath.Join(base, filepath.FromSlash(rel)), nil
}

// writeRestored writes one file, which must not exist yet.
func writeRestored(dest string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(dest, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if mode&0o200 == 0 {
		return os.Chmod(dest, mode) // git's objects stay read-only
	}
	return nil
}

// Package workspacetemplate holds the files a new dreamgate workspace starts
// with, embedded in the binary. Install copies them without ever overwriting
// a file that exists, so it is safe on an existing (also a nanobot) workspace.
//
// It imports no other package of ours.
package workspacetemplate

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed all:files
var files embed.FS

// FS returns the template tree (SOUL.md, USER.md, AGENTS.md, memory/…,
// prompts/…).
func FS() fs.FS {
	sub, err := fs.Sub(files, "files")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// Read returns one template file, e.g. "USER.md".
func Read(name string) ([]byte, error) {
	return fs.ReadFile(FS(), name)
}

// Install writes every template file missing from dir and returns the
// workspace-relative names it created. Existing files are left untouched.
func Install(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create workspace %s: %w", dir, err)
	}
	var created []string
	err := fs.WalkDir(FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		data, err := fs.ReadFile(FS(), name)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		created = append(created, name)
		return nil
	})
	if err != nil {
		return created, fmt.Errorf("install workspace template: %w", err)
	}
	return created, nil
}

package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// cmdRestoreBackup is `restore-backup FILE`: a backup (dreamgate backup)
// written into the workspace and state directory of this config, which
// must hold nothing yet but the config itself — a new machine's home, or
// one emptied on purpose. Nothing is ever overwritten. "-" reads stdin.
func cmdRestoreBackup(_ context.Context, e *env, args []string) error {
	fs := e.flags("restore-backup")
	if err := e.parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("usage: dreamgate restore-backup FILE   (- reads it from stdin)")}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	if cfg.Store.Postgres != "" {
		return &exitError{code: 1, err: errors.New("dreamgate restore-backup writes the files of the embedded engine, but this config keeps its program state in PostgreSQL (store.postgres): restore into a config without it, then move the state with dreamgate migrate --to-postgres")}
	}
	if err := emptyHome(cfg); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate restore-backup: %w", err)}
	}
	var in io.Reader = e.stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("dreamgate restore-backup: %w", err)}
		}
		defer f.Close()
		in = f
	}
	zr, err := gzip.NewReader(in)
	if err != nil {
		return &exitError{code: 1, err: errors.New("dreamgate restore-backup: it is not a dreamgate backup (not gzip'd)")}
	}
	tr := tar.NewReader(zr)
	m, err := readManifest(tr)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate restore-backup: %w", err)}
	}
	n, kept, err := extractBackup(tr, cfg, configInUse(cfg))
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate restore-backup stopped after %d files: %v; remove what it wrote in %s and %s before trying again", n, err, cfg.Workspace, cfg.StateDir)}
	}
	fmt.Fprintf(e.stdout, "Restored %d files of the backup made %s by dreamgate %s (of %s) into the workspace %s and the state directory %s.\n",
		n, m.Created.Local().Format("2006-01-02 15:04"), m.Dreamgate, m.Workspace, cfg.Workspace, cfg.StateDir)
	if len(kept) > 0 {
		fmt.Fprintf(e.stdout, "The backup's copy of the config was not restored: %s is the one in use.\n", cfg.path)
	}
	fmt.Fprintln(e.stdout, "The recall index is rebuilt by the first search.")
	return nil
}

// emptyHome accepts a workspace and a state directory that are missing or
// empty, but for the config in use (and, in the default layout, the
// workspace folder inside the state directory).
func emptyHome(cfg Config) error {
	for _, dir := range []string{cfg.Workspace, cfg.StateDir} {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, en := range entries {
			p := filepath.Join(dir, en.Name())
			if p == configInUse(cfg) || p == cfg.Workspace {
				continue // the config in use; the workspace, checked itself
			}
			return fmt.Errorf("%s holds %s: a backup is restored only into an empty home, and nothing is overwritten", dir, en.Name())
		}
	}
	return nil
}

// configInUse is the config file's absolute path ("" without one).
func configInUse(cfg Config) string {
	if cfg.path == "" {
		return ""
	}
	p, err := filepath.Abs(cfg.path)
	if err != nil {
		return cfg.path
	}
	return p
}

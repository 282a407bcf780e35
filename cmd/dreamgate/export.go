package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/workspace"
)

// cmdExport is `export DIR`: the program state of the engine the config
// uses (PostgreSQL, or the files) written back as files, beside a copy of
// the workspace's memory files and repository, so that DIR/workspace and
// DIR/state are a one-process workspace and state directory
// (nanobot-compatible: memory/history.jsonl, .cursor, .dream_cursor). DIR
// must be empty or missing: nothing is overwritten.
func cmdExport(ctx context.Context, e *env, args []string) error {
	fs := e.flags("export")
	if err := e.parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("usage: dreamgate export DIR")}
	}
	dir := fs.Arg(0)
	if err := emptyDir(dir); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate export: %w", err)}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	logger := e.logger(slog.LevelWarn)
	db, err := openDatabase(cfg, logger)
	if err != nil {
		return err
	}
	if db != nil {
		defer db.Close()
	}
	src, err := openArchive(cfg, db, logger, nil)
	if err != nil {
		return err
	}
	wsOut, stateOut := filepath.Join(dir, "workspace"), filepath.Join(dir, "state")
	skip := exportSkipsWorkspace
	if db != nil {
		// The memory repository and its files come from the database.
		skip = func(rel string) bool {
			return exportSkipsWorkspace(rel) || rel == ".git" || rel == ".gitignore" || isMemoryFile(rel)
		}
	}
	if err := copyTree(wsOut, cfg.Workspace, skip); err != nil {
		return fmt.Errorf("copy the workspace: %w", err)
	}
	if db != nil {
		said, err := exportRepository(cfg, db, wsOut, logger)
		if err != nil {
			return fmt.Errorf("export the memory repository: %w", err)
		}
		defer fmt.Fprintln(e.stdout, said)
	}
	if err := copyTree(stateOut, cfg.StateDir, exportSkipsState); err != nil {
		return fmt.Errorf("copy the state directory: %w", err)
	}
	dst, err := history.Open(filepath.Join(wsOut, filepath.FromSlash(workspace.MemoryDir)), history.Options{Logger: logger.With("component", "history")})
	if err != nil {
		return fmt.Errorf("open the exported history: %w", err)
	}
	from, doneFrom := filesState(src, cfg.Workspace, cfg.StateDir, time.Now())
	defer doneFrom()
	if db != nil {
		from = databaseState(db)
	}
	to, doneTo := filesState(dst, wsOut, stateOut, time.Now())
	defer doneTo()
	got, err := copyProgramState(to, from)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, got.sentence("to "+dir))
	fmt.Fprintf(e.stdout, "Its workspace is %s and its state directory %s.\n", wsOut, stateOut)
	return nil
}

// emptyDir accepts a directory that is missing or empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty; export writes into an empty or new directory only", dir)
	}
	return nil
}

// exportSkipsWorkspace: the program files the export writes from the
// engine, and what no copy needs (locks, the archive's private index).
func exportSkipsWorkspace(rel string) bool {
	return history.Owns(rel) || dream.OwnsFile(rel) || strings.HasSuffix(rel, ".lock")
}

// exportSkipsState: locks, the recall index (a cache rebuilt from the
// rest), and the conversations and inboxes, which the export writes from
// the engine.
func exportSkipsState(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	inbox := strings.HasPrefix(rel, "inbox") && strings.HasSuffix(rel, ".jsonl") && !strings.Contains(rel, "/")
	return strings.HasSuffix(rel, ".lock") || top == "recall" || top == "sessions" || inbox
}

// copyTree copies the regular files and directories under src into dst,
// owner-only, leaving out what skip names (slash-separated, relative) and
// symbolic links. A missing src copies nothing.
func copyTree(dst, src string, skip func(rel string) bool) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == src {
			return filepath.SkipDir
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
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
		out := filepath.Join(dst, filepath.FromSlash(rel))
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o700)
		case d.Type().IsRegular():
			return copyFile(out, p)
		}
		return nil
	})
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cmdBackup is `backup FILE`: the workspace (memory files, memory
// repository, archive, Dream's ledger) and the state directory
// (conversations, inboxes, the memory page's key, per-scope MCP servers'
// folders) as one .tar.gz, taken as one moment while the gateway runs
// (backupArchive). FILE is never overwritten; "-" writes to stdout. A
// running gateway takes it (it owns the files); without one the command
// does.
func cmdBackup(ctx context.Context, e *env, args []string) error {
	fs := e.flags("backup")
	if err := e.parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("usage: dreamgate backup FILE   (a .tar.gz; - writes it to stdout)")}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	if err := backupEngine(cfg); err != nil {
		return err
	}
	file := fs.Arg(0)
	out, commit, err := createBackupFile(file, e.stdout)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate backup: %w", err)}
	}
	defer out.Close() // after commit, a no-op; else it removes the partial file
	to := *e
	to.stdout = out
	asked, err := to.viaGateway(ctx, cfg, "backup", []string{"-"})
	if !asked {
		err = localBackup(ctx, &to, cfg)
	}
	if err != nil {
		return err
	}
	if err := commit(); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate backup: %w", err)}
	}
	if file != "-" {
		fmt.Fprintf(e.stderr, "Backup written to %s. Restore it into an empty home with: dreamgate restore-backup %s\n", file, file)
	}
	return nil
}

// backupEngine refuses a backup of the PostgreSQL engine's state: the
// database is backed up as databases are, consistently, by pg_dump.
func backupEngine(cfg Config) error {
	if cfg.Store.Postgres == "" {
		return nil
	}
	return &exitError{code: 1, err: errors.New("dreamgate backup copies the files of the embedded engine, but this config keeps its program state in PostgreSQL (store.postgres): back up the database with pg_dump and the workspace folder beside it, or, with the gateways stopped, write it all as files with dreamgate export DIR (docs/operations.md)")}
}

// localBackup takes the backup in this process.
func localBackup(ctx context.Context, e *env, cfg Config) error {
	setUp, err := workspaceSetUp(cfg)
	if err != nil {
		return err
	}
	if !setUp {
		return &exitError{code: 1, err: fmt.Errorf("dreamgate backup: no workspace at %s yet, so nothing to back up", cfg.Workspace)}
	}
	a, err := newApp(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	defer a.close()
	return writeBackup(ctx, e, a.parts(nil))
}

// adminBackup is `backup -` asked of the running gateway: the archive
// streams back to the command, which writes the file.
func adminBackup(ctx context.Context, e *env, p *gatewayProcess, args []string) error {
	fs := e.flags("backup")
	if err := e.parse(fs, args, 1); err != nil {
		return err
	}
	if fs.Arg(0) != "-" {
		return &exitError{code: 2, err: errors.New("the gateway writes a backup only to the command that asks for it")}
	}
	return writeBackup(ctx, e, p.parts())
}

// writeBackup writes op's backup to e.stdout, with Dream paused: no Dream,
// restore or move changes memory, the repository or the ledger meanwhile.
// A Dream that runs is waited for.
func writeBackup(ctx context.Context, e *env, op operatorParts) error {
	waiting := func(since time.Time) {
		fmt.Fprintf(e.stderr, "Waiting for the Dream running since %s to end…\n", since.Format("15:04:05"))
	}
	var n int
	err := op.ledger().Pause(ctx, waiting, func() error {
		var err error
		n, err = backupArchive(e.stdout, op.cfg, time.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("back up: %w", err)
	}
	fmt.Fprintf(e.stderr, "Backed up %d files of %s and %s (the recall index is left out: the first search rebuilds it).\n",
		n, op.cfg.Workspace, op.cfg.StateDir)
	return nil
}

// createBackupFile opens where a backup goes: stdout for "-", else a
// partial file beside name (owner-only) that commit syncs and renames to
// name, and Close removes unless commit ran. name must not exist.
func createBackupFile(name string, stdout io.Writer) (out io.WriteCloser, commit func() error, err error) {
	if name == "-" {
		return nopCloser{stdout}, func() error { return nil }, nil
	}
	if _, err := os.Lstat(name); err == nil {
		return nil, nil, fmt.Errorf("%s exists; a backup never overwrites a file: give a new name", name)
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".partial-")
	if err != nil {
		return nil, nil, err
	}
	pf := &partialFile{File: f}
	return pf, func() error {
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		// Link, not rename: a file made meanwhile under name is kept.
		if err := os.Link(f.Name(), name); err != nil {
			return err
		}
		pf.done = true
		return os.Remove(f.Name())
	}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// partialFile is a backup being written; closed before it is complete,
// it is removed.
type partialFile struct {
	*os.File
	done bool
}

func (p *partialFile) Close() error {
	if p.done {
		return nil
	}
	p.File.Close()
	return os.Remove(p.Name())
}

// backupSkips says which files of the workspace (ws) and the state
// directory (!ws) a backup leaves out, by slash-separated path: locks, the
// log, and the recall index (a cache the first search rebuilds); sockets
// are no files to copy. The workspace inside the state directory (the
// default layout) is copied once, as the workspace.
func backupSkips(cfg Config, ws bool) func(rel string) bool {
	nested := ""
	if rel, err := filepath.Rel(cfg.StateDir, cfg.Workspace); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		nested = filepath.ToSlash(rel)
	}
	return func(rel string) bool {
		if strings.HasSuffix(rel, ".lock") {
			return true
		}
		if ws {
			return false
		}
		top, _, _ := strings.Cut(rel, "/")
		return rel == nested || top == "recall" || rel == "gateway.log"
	}
}

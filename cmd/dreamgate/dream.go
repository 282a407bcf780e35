package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
)

// cmdDream is `dream run|log|restore`, the CLI twins of /dream,
// /dream-log and /dream-restore. The CLI user is local and so an admin.
func cmdDream(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return &exitError{code: 2, err: errors.New("usage: dreamgate dream run | log [sha] | restore [sha]")}
	}
	sub := args[0]
	fs := e.flags("dream " + sub)
	if err := e.parse(fs, args[1:]); err != nil {
		return err
	}
	rev := fs.Arg(0)
	cfg, err := e.config()
	if err != nil {
		return err
	}
	a, err := newApp(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	defer a.close()
	switch sub {
	case "run":
		d, err := a.dreamer()
		if err != nil {
			return err
		}
		rep, err := d.Run(ctx, "cli", func(msg string) { fmt.Fprintln(e.stderr, msg) })
		if errors.Is(err, dream.ErrAlreadyRunning) {
			return &exitError{code: 1, err: errors.New(dream.FormatBusy(err, time.Now()))}
		}
		if rep.Outcome != "" {
			fmt.Fprintln(e.stdout, dream.FormatReport(rep))
		}
		if err != nil {
			if rep.Outcome == "" {
				return fmt.Errorf("dream run: %w", err)
			}
			return &exitError{code: 1, err: errors.New("")}
		}
		return nil
	case "log":
		repo, err := a.openRepo()
		if err != nil {
			return err
		}
		var (
			c gitstore.Commit
			d gitstore.Diff
		)
		if rev == "" {
			c, d, err = repo.Latest(dream.SubjectPrefix)
		} else {
			c, d, err = repo.Show(rev)
		}
		if err != nil {
			return revisionError(rev, err)
		}
		fmt.Fprintln(e.stdout, dream.FormatCommit(c, d))
		return nil
	case "restore":
		repo, err := a.openRepo()
		if err != nil {
			return err
		}
		if rev == "" {
			cs, err := repo.Log(10, dream.SubjectPrefix)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, dream.FormatList(cs))
			return nil
		}
		d, err := a.dreamer()
		if err != nil {
			return err
		}
		res, err := d.Restore(rev)
		if errors.Is(err, dream.ErrAlreadyRunning) {
			return &exitError{code: 1, err: errors.New(dream.FormatBusy(err, time.Now()))}
		}
		if err != nil {
			return revisionError(rev, err)
		}
		fmt.Fprintln(e.stdout, dream.FormatRestore(res))
		return nil
	default:
		return &exitError{code: 2, err: fmt.Errorf("unknown dream command %q; use run, log or restore", sub)}
	}
}

func revisionError(rev string, err error) error {
	switch {
	case errors.Is(err, gitstore.ErrAmbiguousRevision):
		return &exitError{code: 1, err: fmt.Errorf("%q matches more than one commit; give more characters of the sha", rev)}
	case errors.Is(err, gitstore.ErrUnknownRevision) && rev == "":
		return &exitError{code: 1, err: errors.New("Dream has not changed memory yet; run `dreamgate dream run`")}
	case errors.Is(err, gitstore.ErrUnknownRevision):
		return &exitError{code: 1, err: fmt.Errorf("no commit %s; `dreamgate dream restore` lists the Dream commits", rev)}
	case errors.Is(err, dream.ErrNotDreamCommit):
		return &exitError{code: 1, err: errors.New("only Dream commits can be restored; `dreamgate dream restore` lists them")}
	}
	return err
}

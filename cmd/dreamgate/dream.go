package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gitstore"
)

// cmdDream is `dream run|log|restore`, the CLI twins of /dream,
// /dream-log and /dream-restore. The CLI user is local and so an admin. A
// running gateway does it when there is one: its Dreamer, with its key.
func cmdDream(ctx context.Context, e *env, args []string) error {
	d, err := parseDream(e, args)
	if err != nil || d.sub == "" {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	if asked, err := e.viaGateway(ctx, cfg, "dream", args); asked {
		return err
	}
	a, err := newApp(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	defer a.close()
	return runDream(ctx, e, a.parts(nil), d)
}

// adminDream is `dream run|log|restore` asked of the running gateway.
func adminDream(ctx context.Context, e *env, p *gatewayProcess, args []string) error {
	d, err := parseDream(e, args)
	if err != nil || d.sub == "" {
		return err
	}
	return runDream(ctx, e, p.parts(), d)
}

// dreamArgs is a dream command: run, log or restore, its --scope, its sha
// and a restore's choice (keep or all).
type dreamArgs struct {
	sub    string // "" when only the usage was asked for
	scope  *scopeChoice
	rev    string
	choice string
}

func parseDream(e *env, args []string) (dreamArgs, error) {
	const usage = "usage: dreamgate dream run | log [sha] | restore [sha [keep|all]]   (each takes --scope NAME and -h)"
	switch {
	case len(args) == 0:
		return dreamArgs{}, &exitError{code: 2, err: errors.New(usage)}
	case isHelp(args[0]):
		fmt.Fprintln(e.stdout, usage)
		return dreamArgs{}, nil
	case args[0] != "run" && args[0] != "log" && args[0] != "restore":
		return dreamArgs{}, &exitError{code: 2, err: fmt.Errorf("unknown dream command %q; use run, log or restore", args[0])}
	}
	fs := e.flags("dream " + args[0])
	d := dreamArgs{sub: args[0], scope: scopeFlag(fs)}
	maxArgs := 1
	if d.sub == "restore" {
		maxArgs = 2 // the sha, then keep or all
	}
	if err := e.parse(fs, args[1:], maxArgs); err != nil {
		return dreamArgs{}, err
	}
	d.rev, d.choice = fs.Arg(0), fs.Arg(1)
	return d, nil
}

func runDream(ctx context.Context, e *env, op operatorParts, d dreamArgs) error {
	switch d.sub {
	case "run":
		return dreamRun(ctx, e, op, d.scope)
	case "log":
		return dreamLog(e, op, d.scope, d.rev)
	default:
		return dreamRestore(e, op, d.scope, d.rev, d.choice)
	}
}

// dreamRun is `dream run`: one Dream now, its progress on stderr.
func dreamRun(ctx context.Context, e *env, op operatorParts, scope *scopeChoice) error {
	d, err := op.dreamer()
	if err != nil {
		return openError(err)
	}
	rep, err := d.Run(ctx, dream.TriggerCLI, scope.scopes(), func(msg string) { fmt.Fprintln(e.stderr, msg) })
	if rep.Outcome == "" {
		if err != nil {
			return revisionError("", err)
		}
		return nil
	}
	fmt.Fprintln(e.stdout, op.a.runText(rep))
	if err != nil {
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

// dreamLog is `dream log [sha]`: the latest Dream commit, or the one
// named, and the restore that undid it when one did.
func dreamLog(e *env, op operatorParts, scope *scopeChoice, rev string) error {
	repo, err := op.a.openRepo()
	if err != nil {
		return openError(err)
	}
	var (
		c    gitstore.Commit
		d    gitstore.Diff
		keep = scope.keep()
	)
	if rev == "" {
		c, d, err = repo.Latest(dream.SubjectPrefix, keep)
	} else {
		c, d, err = repo.Show(rev, keep)
		if err == nil && keep != nil && d.Empty() {
			return &exitError{code: 1, err: fmt.Errorf("commit %s changed no file of the memory scope %s", c.Short, scope.name())}
		}
	}
	if rev == "" && errors.Is(err, gitstore.ErrNoMatchingCommit) {
		if d, derr := op.dreamer(); derr == nil {
			return &exitError{code: 1, err: errors.New(noDreamCommits(d.Status(scope.scopes()), time.Now()))}
		}
	}
	if err != nil {
		return revisionError(rev, err)
	}
	if r, ok, err := repo.UndoneBy(c.SHA, keep); err == nil && ok {
		fmt.Fprintln(e.stdout, dreamtext.CLI().UndoneCommit(c, d, r))
		return nil
	}
	fmt.Fprintln(e.stdout, dreamtext.CLI().Commit(c, d))
	return nil
}

// dreamRestore is `dream restore [sha [keep|all]]`: the changes that can
// be undone; or the undo of one, at once unless later changes touched its
// lines and no choice was given (then the choice is shown, exit 1).
func dreamRestore(e *env, op operatorParts, scope *scopeChoice, rev, choice string) error {
	if rev == "" {
		repo, err := op.a.openRepo()
		if err != nil {
			return openError(err)
		}
		cs, err := repo.LogPrefixes(10, dream.UndoablePrefixes, scope.keep())
		if err != nil {
			return revisionError("", err)
		}
		fmt.Fprintln(e.stdout, dreamtext.CLI().List(cs))
		return nil
	}
	opts := dream.RestoreOptions{Origin: "Asked for with dreamgate dream restore."}
	switch choice {
	case "":
	case dreamtext.ChoiceKeep:
	case dreamtext.ChoiceAll:
		opts.Resolution = gitstore.UndoAll
	default:
		return &exitError{code: 2, err: fmt.Errorf("dream restore: %q is neither keep nor all: use keep to keep the lines later changes made, all to undo the whole change", choice)}
	}
	d, err := op.dreamer()
	if err != nil {
		return openError(err)
	}
	if choice == "" {
		plan, err := d.PlanRestore(rev, scope.scopes())
		if err != nil {
			return revisionError(rev, err)
		}
		if plan.Conflicts() > 0 {
			fmt.Fprintln(e.stdout, dreamtext.CLI().Choose(plan))
			return &exitError{code: 1, err: errors.New("")}
		}
	}
	res, err := d.Restore(rev, scope.scopes(), opts)
	if err != nil {
		return revisionError(rev, err)
	}
	fmt.Fprintln(e.stdout, dreamtext.CLI().Restored(res))
	return nil
}

// openError is a memory repository that could not be opened, as the CLI
// says it. A damaged one stops Dream; the operator at this terminal gets
// what is wrong and how to repair it.
func openError(err error) error {
	var de *gitstore.DamagedError
	if errors.As(err, &de) {
		return &exitError{code: 1, err: errors.New("Dream is stopped: " + de.Error() + ".")}
	}
	return err
}

// revisionError is a failed Dream or repository call as the one sentence the
// user sees (exit 1).
func revisionError(rev string, err error) error {
	return &exitError{code: 1, err: errors.New(dreamtext.CLI().Error(err, rev, time.Now()))}
}

// noDreamCommits is /dream-log's answer before any Dream commit (whether
// none has run yet, or Dreams ran and changed nothing), with the CLI's way
// to start one.
func noDreamCommits(s dream.Status, now time.Time) string {
	return dreamtext.CLI().NoDreamCommits(s, now)
}

// runText is the reply to `dream run`. When nothing was new while
// conversations wait unarchived, it says why, as /dream does: Dream reads
// only the archive, and the CLI does not archive conversations.
func (a *app) runText(rep dream.Report) string {
	if rep.Outcome != dream.OutcomeNothingNew || rep.Recovered != "" {
		return dreamtext.Report(rep)
	}
	waiting, err := a.sessions.Unarchived()
	if err != nil {
		a.logger.Warn("could not look for unarchived conversations", "err", err)
	}
	if len(waiting) == 0 {
		return dreamtext.Report(rep)
	}
	idle := time.Duration(a.cfg.Agent.IdleCompactAfterMinutes) * time.Minute
	return dreamtext.NothingNew(dreamtext.NotArchived(len(waiting)), idle)
}

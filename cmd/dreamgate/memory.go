package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/recall"
)

// memoryUsage is `memory`'s usage lines.
const memoryUsage = `usage: dreamgate memory move --conversation KEY --to SCOPE [--from SCOPE] [--since "YYYY-MM-DD HH:MM"] [--dry-run]
       dreamgate memory edit [--scope NAME] [--from PATH|-] FILE`

// resetWait bounds the wait for the recall index's lock after a move.
const resetWait = 30 * time.Second

// cmdMemory is `memory move`: the operator moves what a conversation had
// archived into a wider scope (before the gateway saw its audience
// change: a channel made private, a guest who joined) to the scope it
// belongs in — its archive entries and the memory lines traced to them,
// as one commit (dream.Dreamer.Move). The recall index is rebuilt after,
// so its search finds them in their new scope only.
func cmdMemory(ctx context.Context, e *env, args []string) error {
	switch {
	case len(args) == 0:
		return &exitError{code: 2, err: errors.New(memoryUsage)}
	case isHelp(args[0]):
		fmt.Fprintln(e.stdout, memoryUsage)
		return nil
	case args[0] == "edit":
		return cmdMemoryEdit(ctx, e, args[1:])
	case args[0] != "move":
		return &exitError{code: 2, err: fmt.Errorf("unknown memory command %q; use move or edit", args[0])}
	}
	fs := e.flags("memory move")
	var req dream.MoveRequest
	toSet := false
	fs.StringVar(&req.Conversation, "conversation", "", `the conversation's session key, e.g. "slack:C0123ABCD" (its threads too)`)
	fs.Func("to", `the scope its memory belongs in: a folder name under scopes/, or "default"`, func(v string) (err error) {
		req.To, err = memory.ParseName(v)
		toSet = err == nil
		return err
	})
	fs.Func("from", `move only what stands in this scope (default: every scope but --to)`, func(v string) error {
		s, err := memory.ParseName(v)
		req.From = append(req.From, s)
		return err
	})
	fs.Func("since", `move only what was archived at or after this local time ("YYYY-MM-DD HH:MM" or "YYYY-MM-DD")`, func(v string) (err error) {
		req.Since, err = parseSince(v)
		return err
	})
	fs.BoolVar(&req.DryRun, "dry-run", false, "say what would move, change nothing")
	if err := e.parse(fs, args[1:], 0); err != nil {
		return err
	}
	if req.Conversation == "" || !toSet {
		return &exitError{code: 2, err: errors.New(memoryUsage)}
	}
	a, d, err := e.openDreamer()
	if err != nil {
		return err
	}
	defer a.close()
	res, err := d.Move(req)
	var busy *dream.BusyError
	switch {
	case errors.As(err, &busy):
		return &exitError{code: 1, err: errors.New("a Dream or a restore is running; move when it is over")}
	case errors.Is(err, dream.ErrNotDreamed):
		return &exitError{code: 1, err: fmt.Errorf("%w (dreamgate dream run), then move", err)}
	case err != nil:
		return &exitError{code: 1, err: err}
	}
	writeMove(e.stdout, req, res)
	if req.DryRun || len(res.Entries) == 0 {
		return nil
	}
	idx := recall.Open(recall.Options{Store: recallStore(a.db), Dir: recallDir(a.cfg.StateDir)})
	defer idx.Close()
	rctx, cancel := context.WithTimeout(ctx, resetWait)
	defer cancel()
	if err := idx.Reset(rctx); err != nil {
		fmt.Fprintf(e.stderr, "dreamgate: the recall index could not be reset (%v): its search may find the moved entries under their old scope until it is rebuilt; run the move again\n", err)
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

// parseSince reads --since in the local time zone, as the archive's
// timestamps are.
func parseSince(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, strings.TrimSpace(v), time.Local); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New(`not a time: use "YYYY-MM-DD HH:MM" (local time) or "YYYY-MM-DD"`)
}

// writeMove says what a move did, or would do.
func writeMove(w io.Writer, req dream.MoveRequest, res dream.MoveResult) {
	to := memory.Name(req.To)
	if len(res.Entries) == 0 {
		fmt.Fprintf(w, "Nothing of %s to move: none of its history entries stands outside %s (as asked).\n", req.Conversation, to)
		return
	}
	verb := "Moved"
	if req.DryRun {
		verb = "Would move"
	}
	fmt.Fprintf(w, "%s %d history %s of %s to %s:\n", verb, len(res.Entries), pluralWord(len(res.Entries), "entry", "entries"), req.Conversation, to)
	for _, en := range res.Entries {
		fmt.Fprintf(w, "  %d  %s  from %s\n", en.Cursor, en.Timestamp, memory.Name(en.Scope))
	}
	if len(res.Lines) == 0 {
		fmt.Fprintln(w, "No memory line is traced to them.")
	} else {
		fmt.Fprintln(w, "Memory lines traced to them:")
		for _, l := range res.Lines {
			how := "moved "
			if l.Copied {
				how = "copied (also said elsewhere, so it stays too)"
			}
			fmt.Fprintf(w, "  %s %s: %s\n", how, path.Join(l.Scope.Dir(), l.File), l.Text)
		}
	}
	if res.Commit.SHA != "" {
		fmt.Fprintf(w, "Commit %s: %s\n", res.Commit.Short, res.Commit.Subject)
		fmt.Fprintln(w, "The memory repository's earlier commits still hold these lines where they were (see docs/privacy.md, \"Moving what went to a wider scope\").")
	}
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// openDreamer opens the app and its Dreamer for a command that changes
// memory; the caller closes the app.
func (e *env) openDreamer() (*app, *dream.Dreamer, error) {
	cfg, err := e.config()
	if err != nil {
		return nil, nil, err
	}
	a, err := newApp(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return nil, nil, err
	}
	d, err := a.dreamer()
	if err != nil {
		a.close()
		return nil, nil, openError(err)
	}
	return a, d, nil
}

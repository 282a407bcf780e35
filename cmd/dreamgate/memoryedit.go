package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/memory"
)

// memoryEditUsage is `memory edit`'s usage line.
const memoryEditUsage = `usage: dreamgate memory edit [--scope NAME] [--from PATH|-] FILE   (FILE: SOUL.md, USER.md, MEMORY.md or COLD.md)`

// cmdMemoryEdit is `memory edit`: a person changes one of a scope's
// memory files — in $VISUAL or $EDITOR on a copy of the file as memory
// holds it, or from a file or the standard input (--from) — and the
// change is committed as a hand edit (dream.Dreamer.Edit), whatever the
// engine: where the memory repository is the database's, this is how a
// hand edit reaches memory.
func cmdMemoryEdit(ctx context.Context, e *env, args []string) error {
	flags := e.flags("memory edit")
	scope := scopeFlag(flags)
	from := flags.String("from", "", `take the new content from this file ("-": the standard input) instead of an editor`)
	if err := e.parse(flags, args, 1); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return &exitError{code: 2, err: errors.New(memoryEditUsage)}
	}
	rel, ok := memoryFileArg(flags.Arg(0))
	if !ok {
		return &exitError{code: 2, err: fmt.Errorf("%q is not a memory file: SOUL.md, USER.md, MEMORY.md or COLD.md", flags.Arg(0))}
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	a, err := newApp(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	defer a.close()
	d, err := a.dreamer()
	if err != nil {
		return openError(err)
	}
	old, err := a.mem.Read(scope.scope, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &exitError{code: 1, err: fmt.Errorf("read %s of the %s scope: %w", rel, memory.Name(scope.scope), err)}
	}
	data, err := newContent(ctx, e, *from, rel, old)
	if err != nil {
		return err
	}
	res, err := d.Edit(scope.scope, rel, data)
	var busy *dream.BusyError
	switch {
	case errors.As(err, &busy):
		return &exitError{code: 1, err: errors.New("a Dream or a restore is running; edit when it is over")}
	case err != nil:
		return &exitError{code: 1, err: err}
	}
	writeEdit(e.stdout, scope.scope, rel, res)
	return nil
}

// memoryFileArg maps a FILE argument to the memory file it names.
func memoryFileArg(arg string) (string, bool) {
	switch strings.TrimPrefix(filepath.ToSlash(arg), "./") {
	case memory.Soul:
		return memory.Soul, true
	case memory.User:
		return memory.User, true
	case memory.Long, "MEMORY.md":
		return memory.Long, true
	case memory.Cold, "COLD.md":
		return memory.Cold, true
	}
	return "", false
}

// newContent is the file's new content: read from --from, or edited by
// the person in their editor on a copy of old.
func newContent(ctx context.Context, e *env, from, rel string, old []byte) ([]byte, error) {
	switch from {
	case "-":
		return io.ReadAll(e.stdin)
	case "":
	default:
		b, err := os.ReadFile(from)
		if err != nil {
			return nil, &exitError{code: 1, err: fmt.Errorf("read the new content: %w", err)}
		}
		return b, nil
	}
	editor := e.getenv("VISUAL")
	if editor == "" {
		editor = e.getenv("EDITOR")
	}
	if editor == "" {
		return nil, &exitError{code: 2, err: errors.New("set VISUAL or EDITOR to edit in an editor, or give the new content with --from PATH (or - for the standard input)")}
	}
	dir, err := os.MkdirTemp("", "dreamgate-edit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(tmp, old, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "editor", tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	if err := cmd.Run(); err != nil {
		return nil, &exitError{code: 1, err: fmt.Errorf("the editor (%s) failed: %w; nothing was changed", editor, err)}
	}
	return os.ReadFile(tmp)
}

// writeEdit says what the edit did.
func writeEdit(w io.Writer, scope audience.Scope, rel string, res dream.EditResult) {
	if res.Saved != "" {
		fmt.Fprintf(w, "Edits made on disk were saved first: commit %s.\n", res.Saved)
	}
	if res.Commit.SHA == "" {
		fmt.Fprintf(w, "Nothing changed: %s of the %s scope already holds that.\n", rel, memory.Name(scope))
		return
	}
	added, deleted := 0, 0
	for _, f := range res.Diff.Files {
		added, deleted = added+f.Added, deleted+f.Deleted
	}
	fmt.Fprintf(w, "Committed %s (%s): %s of the %s scope, %d %s added, %d removed.\n",
		res.Commit.Short, res.Commit.Subject, rel, memory.Name(scope), added, pluralWord(added, "line", "lines"), deleted)
	fmt.Fprintf(w, "It shows in /dream-log and can be undone like any change: dreamgate dream restore %s\n", res.Commit.Short)
}

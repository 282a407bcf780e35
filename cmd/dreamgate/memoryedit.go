package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// An edit is of one scope's file: without --scope, the default scope's
	// (scopeFlag's usage says every scope, as the commands that list do).
	flags.Lookup("scope").Usage = `the memory scope whose file to edit: a folder name under scopes/, or "default" for the workspace root's files (the default)`
	from := flags.String("from", "", `take the new content from this file ("-": the standard input) instead of an editor`)
	if err := e.parse(flags, args, 1); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return &exitError{code: 2, err: errors.New(memoryEditUsage)}
	}
	rel, err := memoryFileArg(flags.Arg(0), scope.one)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	a, d, err := e.openDreamer()
	if err != nil {
		return err
	}
	defer a.close()
	known, err := scopeKnown(a.mem, scope.scope)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	old, err := a.mem.Read(scope.scope, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &exitError{code: 1, err: fmt.Errorf("read %s of the %s scope: %w", rel, memory.Name(scope.scope), err)}
	}
	data, err := newContent(ctx, e, *from, rel, old)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("the new content of %s is empty: nothing was changed (to clear the file, keep a line such as its heading)", rel)}
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
	if !known && res.Commit.SHA != "" {
		fmt.Fprintf(e.stdout, "The %s scope had no memory before: this edit began it (dreamgate status lists the scopes there are).\n", memory.Name(scope.scope))
	}
	return nil
}

// memoryFileArg maps a FILE argument to the memory file it names. A
// scope folder's file typed as its path (scopes/NAME/USER.md) is refused
// with the --scope it wants, unless --scope was given (scoped): then it is
// simply no memory file.
func memoryFileArg(arg string, scoped bool) (string, error) {
	p := strings.TrimPrefix(filepath.ToSlash(arg), "./")
	switch p {
	case memory.Soul:
		return memory.Soul, nil
	case memory.User:
		return memory.User, nil
	case memory.Long, "MEMORY.md":
		return memory.Long, nil
	case memory.Cold, "COLD.md":
		return memory.Cold, nil
	}
	if rest, ok := strings.CutPrefix(p, audience.ScopesDir+"/"); ok && !scoped {
		name, file, _ := strings.Cut(rest, "/")
		if _, err := memory.ParseName(name); err == nil && memory.IsTierFile(file) {
			return "", fmt.Errorf("%q is a scope's memory file: name the scope and the file as `dreamgate memory edit --scope %s %s`", arg, name, file)
		}
	}
	return "", fmt.Errorf("%q is not a memory file: SOUL.md, USER.md, MEMORY.md or COLD.md", arg)
}

// scopeKnown reports whether memory has scope s already. An edit of a
// scope it has none of begins that scope's memory — an operator's way to
// give a team memory before its first conversation — and says so, so a
// mistyped --scope is seen at once.
func scopeKnown(mem *memory.Memory, s audience.Scope) (bool, error) {
	all, err := mem.Scopes()
	return slices.Contains(all, s), err
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

package dream

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// Moving a conversation's memory to the scope it belongs in: the
// operator's correction when an audience changed before the gateway saw
// it (a channel made private, a guest who joined), so that what was
// archived in the meantime went into a wider scope. The conversation's
// archive entries move to the right scope, and so do the memory lines
// traced to them alone (their src: cursors); a line traced to entries of
// another conversation too was said where that scope's audience heard
// it, so it stays and is copied. It is a step of its own (step.go): the
// lines leave one scope and reach the other in one commit, before the
// archive's entries are rescoped; a move cut short is finished by asking
// for it again. The commits before it still hold what it moved: the
// repository's history is never rewritten.

// stepMove names a move's commit in its trailers.
const stepMove stepKind = "move"

// MoveSubject starts the subject of a move's commit.
const MoveSubject = "move:"

// MoveRequest says what to move.
type MoveRequest struct {
	// Conversation is a session key ("slack:C123"): its entries, and its
	// threads' ("slack:C123:<ts>").
	Conversation string
	// To is the scope they belong in.
	To audience.Scope
	// From, when set, moves only entries now in these scopes; else every
	// entry of the conversation not in To.
	From []audience.Scope
	// Since, when set, moves only entries archived at or after it (their
	// timestamp, to the minute, in the local time zone).
	Since time.Time
	// DryRun says what would move and changes nothing.
	DryRun bool
}

// picks reports whether e is one of the entries r moves.
func (r MoveRequest) picks(e history.Entry) bool {
	if e.Scope == r.To || (e.SessionKey != r.Conversation && !strings.HasPrefix(e.SessionKey, r.Conversation+":")) {
		return false
	}
	if r.From != nil && !slices.Contains(r.From, e.Scope) {
		return false
	}
	if !r.Since.IsZero() {
		t, err := time.ParseInLocation(history.TimestampLayout, e.Timestamp, time.Local)
		if err != nil || t.Before(r.Since.Truncate(time.Minute)) {
			return false
		}
	}
	return true
}

// MovedLine is one memory line a move took out of a scope (or copied).
type MovedLine struct {
	Scope  audience.Scope
	File   string // workspace-relative within the scope: SOUL.md, memory/MEMORY.md, …
	Text   string
	Copied bool // traced to other entries too: it stays where it was
}

// MoveResult is what a move did (or would do, on a dry run).
type MoveResult struct {
	Entries []history.Entry // as they were before
	Lines   []MovedLine
	Commit  gitstore.Commit // zero when no line moved, or on a dry run
}

// ErrNotDreamed is wrapped by a move's error when entries it would move
// have not been dreamed yet in their scope: their facts are in no line, so
// Dream must read them first (dreamgate dream run).
var ErrNotDreamed = errors.New("history entries not dreamed yet")

// Rescoper is the archive's optional capability a move needs: rewriting
// entries' scopes (history.Store's Rescope).
type Rescoper interface {
	Rescope(pick func(history.Entry) bool, to audience.Scope) ([]history.Entry, error)
}

// Move moves r's entries and the lines traced to them into r.To, under
// the Dream lock (a *BusyError when a Dream or a restore holds it). An
// empty result is no error: nothing is left to move.
func (d *Dreamer) Move(r MoveRequest) (MoveResult, error) {
	if r.Conversation == "" {
		return MoveResult{}, errors.New("dream move: which conversation?")
	}
	if _, err := audience.ParseScope(string(r.To)); err != nil {
		return MoveResult{}, fmt.Errorf("dream move: %w", err)
	}
	rs, ok := d.hist.(Rescoper)
	if !ok {
		return MoveResult{}, errors.New("dream move: this archive cannot move entries")
	}
	h, _, err := d.open()
	if h == nil {
		return MoveResult{}, err
	}
	defer h.end()
	if err != nil {
		return MoveResult{}, fmt.Errorf("dream move: %w", err)
	}
	entries, err := d.movable(h, r)
	if err != nil || len(entries) == 0 {
		return MoveResult{}, err
	}
	res := MoveResult{Entries: entries}
	if res.Lines, res.Commit, err = d.moveLines(h, r, entries); err != nil || r.DryRun {
		return res, err
	}
	if _, err := rs.Rescope(r.picks, r.To); err != nil {
		return res, fmt.Errorf("dream move: the lines moved (commit %s), the archive's entries did not; ask again: %w", res.Commit.Short, err)
	}
	d.log.Info("moved a conversation's memory to another scope", "conversation", r.Conversation, "scope", string(r.To),
		"entries", len(entries), "lines", len(res.Lines), "commit", res.Commit.Short)
	return res, nil
}

// movable lists r's entries, refusing when one is not dreamed yet.
func (d *Dreamer) movable(h *held, r MoveRequest) ([]history.Entry, error) {
	all, err := d.hist.Since(0, 0)
	if err != nil {
		return nil, fmt.Errorf("dream move: read history: %w", err)
	}
	var entries []history.Entry
	for _, e := range all {
		if r.picks(e) {
			entries = append(entries, e)
		}
	}
	bl, _, err := d.ledger.backlogs(&h.rec)
	if err != nil {
		return nil, err
	}
	var unread []string
	for _, e := range entries {
		for _, b := range bl {
			if b.Scope == e.Scope && e.Cursor >= b.First {
				unread = append(unread, fmt.Sprint(e.Cursor))
			}
		}
	}
	if len(unread) > 0 {
		return nil, fmt.Errorf("dream move: %w (%s): run a Dream first", ErrNotDreamed, strings.Join(unread, ", "))
	}
	return entries, nil
}

// moveLines builds the move's commit from the files as committed (hand
// edits saved first) and lands it; on a dry run it only says what would
// move.
func (d *Dreamer) moveLines(h *held, r MoveRequest, entries []history.Entry) ([]MovedLine, gitstore.Commit, error) {
	moved := map[int]bool{}
	var from []audience.Scope
	for _, e := range entries {
		moved[e.Cursor] = true
		if !slices.Contains(from, e.Scope) {
			from = append(from, e.Scope)
		}
	}
	var rep Report
	if !r.DryRun {
		for _, s := range append(slices.Clone(from), r.To) {
			if _, err := d.handEdits(h, s, &rep); err != nil {
				return nil, gitstore.Commit{}, fmt.Errorf("dream move: %w", err)
			}
		}
	}
	head, err := d.repo.Head()
	if err != nil {
		return nil, gitstore.Commit{}, fmt.Errorf("dream move: read the memory repository's head: %w", err)
	}
	files := map[string][]byte{}
	read := func(s audience.Scope, rel string) ([]byte, error) {
		p := path.Join(s.Dir(), rel)
		if data, ok := files[p]; ok {
			return data, nil
		}
		if r.DryRun {
			// The move would save hand edits first: they count.
			return d.liveFile(s, rel)
		}
		data, _, err := d.repo.FileAt(head.SHA, p)
		return data, err
	}
	var lines []MovedLine
	for _, s := range from {
		for _, rel := range append(workspace.MemoryFiles(), workspace.Cold) {
			src, dst := path.Join(s.Dir(), rel), path.Join(r.To.Dir(), rel)
			data, err := read(s, rel)
			if err != nil {
				return nil, gitstore.Commit{}, fmt.Errorf("dream move: read %s: %w", src, err)
			}
			kept, taken, copied := takeLines(data, moved)
			if len(taken)+len(copied) == 0 {
				continue
			}
			target, err := read(r.To, rel)
			if err != nil {
				return nil, gitstore.Commit{}, fmt.Errorf("dream move: read %s: %w", dst, err)
			}
			files[src], files[dst] = kept, addLines(target, append(taken, copied...))
			for _, l := range taken {
				lines = append(lines, MovedLine{Scope: s, File: rel, Text: l.Text})
			}
			for _, l := range copied {
				lines = append(lines, MovedLine{Scope: s, File: rel, Text: l.Text, Copied: true})
			}
		}
	}
	if r.DryRun || len(lines) == 0 {
		return lines, gitstore.Commit{}, nil
	}
	c, err := d.landMove(h, r, from, head.SHA, files, len(entries), lines)
	return lines, c, err
}

// liveFile reads scope s's memory file rel as it is now (nil when there
// is none), through the memory: never through a symbolic link.
func (d *Dreamer) liveFile(s audience.Scope, rel string) ([]byte, error) {
	data, err := d.mem.Read(s, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// landMove commits the move's files as one step across its scopes.
func (d *Dreamer) landMove(h *held, r MoveRequest, from []audience.Scope, base string, files map[string][]byte, entries int, lines []MovedLine) (gitstore.Commit, error) {
	var changes []gitstore.Change
	for _, p := range slices.Sorted(maps.Keys(files)) {
		changes = append(changes, gitstore.Change{Path: p, Data: files[p]})
	}
	var body strings.Builder
	fmt.Fprintf(&body, "The operator moved %s of %s from %s to %s: what was said there after its audience changed belongs to %s.\n\n",
		plural(entries, "history entry", "history entries"), r.Conversation, scopeNames(from), scopeName(r.To), scopeName(r.To))
	for _, l := range lines {
		verb := "moved"
		if l.Copied {
			verb = "copied"
		}
		fmt.Fprintf(&body, "- %s from %s: %s\n", verb, path.Join(l.Scope.Dir(), l.File), l.Text)
	}
	body.WriteString("\nThe commits before this one still hold these lines where they were.")
	res, err := d.steps(h).land(step{
		note:    stepNote{Kind: stepMove, Scope: r.To},
		also:    from,
		subject: fmt.Sprintf("%s %s of %s to %s", MoveSubject, plural(len(lines), "line", "lines"), r.Conversation, scopeName(r.To)),
		body:    body.String(),
		base:    base,
		changes: changes,
	})
	if err != nil {
		return gitstore.Commit{}, fmt.Errorf("dream move: %w", err)
	}
	return res.commit, nil
}

// takeLines splits a file for a move: the facts every source of which is
// among moved leave it (taken); those traced to moved entries and others
// too stay and are copied; the rest stay. Lines without sources stay.
func takeLines(data []byte, moved map[int]bool) (kept []byte, taken, copied []memline.Line) {
	f := memline.ParseFile(data)
	out := f.Items[:0:0]
	for _, it := range f.Items {
		if !it.Fact || len(it.Line.Sources) == 0 {
			out = append(out, it)
			continue
		}
		n := 0
		for _, c := range it.Line.Sources {
			if moved[c] {
				n++
			}
		}
		switch {
		case n == len(it.Line.Sources):
			taken = append(taken, it.Line)
		case n > 0:
			copied = append(copied, it.Line)
			out = append(out, it)
		default:
			out = append(out, it)
		}
	}
	if len(taken) == 0 {
		return data, taken, copied
	}
	f.Items = out
	return f.Bytes(), taken, copied
}

// addLines appends lines to a file, leaving out those it states already
// (the same fact, whatever its comment): a move asked again adds nothing
// twice.
func addLines(data []byte, lines []memline.Line) []byte {
	f := memline.ParseFile(data)
	have := map[string]bool{}
	for _, i := range f.Facts() {
		have[memline.Key(f.Items[i].Line.Text)] = true
	}
	out := slices.Clone(data)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	for _, l := range lines {
		if k := memline.Key(l.Text); !have[k] {
			have[k] = true
			out = append(out, l.String()+"\n"...)
		}
	}
	return out
}

func scopeName(s audience.Scope) string {
	if s == DefaultScope {
		return "the default scope"
	}
	return string(s)
}

func scopeNames(list []audience.Scope) string {
	names := make([]string, len(list))
	for i, s := range list {
		names[i] = scopeName(s)
	}
	return strings.Join(names, ", ")
}

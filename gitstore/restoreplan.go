package gitstore

import (
	"fmt"
	"strings"
)

// RestorePlan is what undoing a commit does, file by file: what a person
// is asked to confirm, and what a restore made did.
type RestorePlan struct {
	// Target is the commit whose change is undone.
	Target Commit
	// Files are the files the undo changes, or where it conflicts, in path
	// order: only files Target changed.
	Files []FileUndo
	// Links are the files Target changed that were symbolic links before
	// it, in path order: they stay as they are, since a restore never
	// brings a link back.
	Links []string
	// Later are the commits after Target that changed a file where the
	// undo conflicts, newest first (at most 10; their Body empty): the
	// later changes the person chooses against.
	Later []Commit
	// Uncommitted says some file the filter accepts has edits not yet
	// committed: Restore saves them first as ManualSubject (they stay).
	Uncommitted bool
	// Resolution is what a restore made of the conflicts (in a plan not
	// yet made: KeepLater).
	Resolution Resolution
	// Base is the full id of the commit the plan was made on (PlanUndo,
	// Restore): Changes apply on top of it. "" for a plan made on the
	// workspace's files (PlanRestore).
	Base string
}

// Changes are the files the undo changes, conflicts resolved as res says:
// what a commit of the undo holds on top of Base.
func (p RestorePlan) Changes(res Resolution) []Change {
	var out []Change
	for _, f := range p.Files {
		o := f.out[res]
		if !o.changes {
			continue
		}
		out = append(out, Change{Path: f.Path, Data: o.data, Remove: !o.exists})
	}
	return out
}

// Conflicts counts the places where a later change touched the lines the
// undo would change.
func (p RestorePlan) Conflicts() int {
	n := 0
	for _, f := range p.Files {
		n += len(f.Conflicts)
	}
	return n
}

// FileUndo is what undoing the commit does to one file.
type FileUndo struct {
	Path string
	// Removed are the commit's lines that go (they stand as it left
	// them); Restored the lines it removed or changed, which come back.
	Removed, Restored []string
	// Conflicts are the places where a later change touched the lines the
	// commit changed, in file order.
	Conflicts []LineConflict
	// Whole says the file is not lines of text (a link, a binary file): it
	// is put back whole where it still is as the commit left it, else
	// that is its one conflict.
	Whole bool

	// Deleted and Created say the undo removes the file (the commit made
	// it, and nothing else is left in it) or brings it back, where the
	// later lines are kept.
	Deleted, Created bool

	out     [2]fileOut // by Resolution
	was     blobState  // the file as it stood when planned
	touched bool       // a later change removed or rewrote a line of the commit's
	// link: the file was a symbolic link before the commit; it stays as
	// it is (RestorePlan.Links).
	link bool
}

// Changes says the undo changes the file, conflicts resolved as res says.
func (f FileUndo) Changes(res Resolution) bool { return f.out[res].changes }

// Counts says how many lines of the file the undo takes out and puts in,
// conflicts resolved as res says.
func (f FileUndo) Counts(res Resolution) (out, in int) {
	out, in = len(f.Removed), len(f.Restored)
	if res == UndoAll {
		for _, c := range f.Conflicts {
			out += len(c.Now)
			in += len(c.Before)
		}
	}
	return out, in
}

// LineConflict is a place where the commit changed lines and a later
// change changed them again (or rewrote the lines around where the
// commit removed some).
type LineConflict struct {
	// Now are the lines standing there: KeepLater keeps them.
	Now []string
	// Left are the lines as the commit left them.
	Left []string
	// Before are the lines as they stood before the commit: UndoAll puts
	// them back instead of Now.
	Before []string
}

// Trailer keys of a restore commit: what it undid, known from the
// repository alone.
const (
	// TrailerReverts names the commit undone (full id).
	TrailerReverts = "Reverts"
	// TrailerReverted is one file's lines: "<path> -<out> +<in>".
	TrailerReverted = "Reverted"
	// TrailerKeptLater and TrailerUndidLater count one file's conflicts
	// and say what was made of them: "<path> <count>".
	TrailerKeptLater  = "Kept-Later"
	TrailerUndidLater = "Undid-Later"
)

// Message is the body of a revert commit, without its trailers: what it
// did in words, conflicts resolved as res says, and note (where it was
// asked for and by whom; "" none).
func (p RestorePlan) Message(res Resolution, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Undid %s (%s) line by line: the lines it added went, the lines it removed or changed came back where they stood; every other line stayed.\n\n",
		p.Target.Short, subjectOr(p.Target.Subject))
	if note = strings.TrimSpace(note); note != "" {
		b.WriteString(note + "\n\n")
	}
	for _, f := range p.Files {
		out, in := f.Counts(res)
		line := fmt.Sprintf("- %s: %s taken out, %s put back", f.Path, plural(out, "line", "lines"), plural(in, "line", "lines"))
		if f.Whole {
			line = "- " + f.Path + ": put back whole"
		}
		if !f.Changes(res) {
			line = "- " + f.Path + ": unchanged"
		}
		if n := len(f.Conflicts); n > 0 {
			what := "kept the later lines"
			if res == UndoAll {
				what = "undid them too"
			}
			line += fmt.Sprintf("; where a later change had touched the same lines (%s): %s", plural(n, "place", "places"), what)
		}
		b.WriteString(line + "\n")
	}
	for _, p := range p.Links {
		b.WriteString("- " + p + ": left as it is: it was a symbolic link before, which a restore never brings back\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// Trailers are the revert commit's trailers, "Key: value" each: the commit
// undone (Reverts), each file's lines (Reverted) and what was made of its
// conflicts (Kept-Later, Undid-Later), conflicts resolved as res says. They
// go in the message's last paragraph, where UndoneBy reads them.
func (p RestorePlan) Trailers(res Resolution) []string {
	out := []string{TrailerReverts + ": " + p.Target.SHA}
	for _, f := range p.Files {
		if f.Changes(res) {
			o, i := f.Counts(res)
			out = append(out, fmt.Sprintf("%s: %s -%d +%d", TrailerReverted, f.Path, o, i))
		}
		if n := len(f.Conflicts); n > 0 {
			key := TrailerKeptLater
			if res == UndoAll {
				key = TrailerUndidLater
			}
			out = append(out, fmt.Sprintf("%s: %s %d", key, f.Path, n))
		}
	}
	return out
}

func subjectOr(s string) string {
	if s == "" {
		return "no message"
	}
	return s
}

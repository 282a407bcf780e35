package dreamtext

import (
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/mdfence"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// The words of a restore: the list of what can be undone, the choice a
// person makes where later changes touched the same lines, and what a
// restore did, file by file and line by line.

// Choice words, as typed after the commit id: keep the later lines, or
// undo the whole change.
const (
	ChoiceKeep = "keep"
	ChoiceAll  = "all"
)

// restoreLinesCap bounds the lines a restore's reply shows: a deep Dream
// undone brings back dozens of lines, all of them named; a restore of a
// whole rewritten file is better read with /dream-log.
const restoreLinesCap = 12_000

// List is the reply to /dream-restore without arguments: the changes that
// can be undone (Dreams', restores', hand edits'), newest first (the
// caller asks for the 10 latest).
func (k Commands) List(cs []gitstore.Commit) string {
	if len(cs) == 0 {
		return "No Dream commits yet: Dream has not changed the memory files."
	}
	var b strings.Builder
	b.WriteString("Changes you can undo, newest first:\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "- `%s` %s %s\n", c.Short, showTime(c.When), subjectOr(c.Subject))
	}
	fmt.Fprintf(&b, "See one with %s; undo one with %s: only its own lines change back, later changes and hand edits stay.",
		k.cmd(k.Log, "<sha>"), k.cmd(k.Restore, "<sha>"))
	return b.String()
}

// Choose is the reply to /dream-restore <sha> when later changes touched
// lines the commit changed: what the undo does either way, the places to
// choose on, and the two commands. Nothing is changed yet.
func (k Commands) Choose(p dream.RestorePlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Undoing `%s` (%s) needs your choice: later changes touched %s of the lines it changed. Nothing has been changed yet.\n",
		p.Target.Short, subjectOr(p.Target.Subject), plural(p.Conflicts(), "place", "places"))
	if lines := fileLines(p.RestorePlan, gitstore.KeepLater, false) + linkLines(p.RestorePlan, p.Target.Short); lines != "" {
		b.WriteString("\nEither way:\n" + lines)
	}
	b.WriteString("\nWhere later changes touched the same lines:\n")
	b.WriteString(conflictLines(p.RestorePlan))
	if len(p.Later) > 0 {
		names := make([]string, len(p.Later))
		for i, c := range p.Later {
			names[i] = fmt.Sprintf("`%s` %s", c.Short, subjectOr(c.Subject))
		}
		fmt.Fprintf(&b, "Changed since by: %s.\n", strings.Join(names, "; "))
	}
	fmt.Fprintf(&b, "\nChoose:\n- %s — undo the rest and keep the later lines\n- %s — undo it whole: the lines come back as they were before it, replacing the later ones",
		k.cmd(k.Restore, p.Target.Short+" "+ChoiceKeep), k.cmd(k.Restore, p.Target.Short+" "+ChoiceAll))
	return b.String()
}

// Restored is the reply to a restore made: the commits, every file and
// line it changed, what it made of the places later changes had touched,
// a deep Dream's hold, and how to undo it.
func (k Commands) Restored(r dream.RestoreResult) string {
	var b strings.Builder
	res := r.Plan.Resolution
	fmt.Fprintf(&b, "Undid `%s` (%s) line by line (new commit `%s`).\n", r.Target.Short, subjectOr(r.Target.Subject), r.Revert.Short)
	if len(r.Saved) > 0 {
		fmt.Fprintf(&b, "Edits made by hand since the last commit were saved first (`%s`); they stay.\n", strings.Join(r.Saved, "`, `"))
	}
	b.WriteString(fileLines(r.Plan, res, true))
	if n := r.Plan.Conflicts(); n > 0 {
		if res == gitstore.UndoAll {
			fmt.Fprintf(&b, "Where later changes had touched the same lines (%s), those were undone too.\n", plural(n, "place", "places"))
		} else {
			fmt.Fprintf(&b, "Where later changes had touched the same lines (%s), the later lines were kept.\n", plural(n, "place", "places"))
		}
	}
	b.WriteString(linkLines(r.Plan, r.Target.Short))
	b.WriteString("Every other line and file stays as it was. The history behind the undone change will not be dreamed again.")
	for _, h := range r.Held {
		fmt.Fprintf(&b, "\nThe lines the deep Dream had taken out are back in hot memory (%s now): it will not be compacted again until it grows past %s, so the next Dreams leave them there.",
			plural(h.Tokens, "token", "tokens"), plural(h.Until, "token", "tokens"))
	}
	fmt.Fprintf(&b, "\nUndo this restore with %s", k.cmd(k.Restore, r.Revert.Short))
	return b.String()
}

// fileLines names each file the undo changes, resolved as res says, with
// its lines in a diff block: "-" the lines that go, "+" the lines that
// come back. With conflicts, the places res undoes too are shown.
func fileLines(p gitstore.RestorePlan, res gitstore.Resolution, withConflicts bool) string {
	var b, diff strings.Builder
	for _, f := range p.Files {
		if !f.Changes(res) && (f.Whole || len(f.Removed)+len(f.Restored) == 0) {
			continue
		}
		out, in := len(f.Removed), len(f.Restored)
		if withConflicts {
			out, in = f.Counts(res)
		}
		what := fmt.Sprintf("%s taken out, %s put back", plural(out, "line", "lines"), plural(in, "line", "lines"))
		switch {
		case f.Whole:
			what = "put back whole (it is not lines of text)"
		case f.Deleted:
			what += " (the file goes: the change had made it)"
		case f.Created:
			what += " (the file comes back)"
		}
		fmt.Fprintf(&b, "- %s: %s\n", base(f.Path), what)
		fmt.Fprintf(&diff, "%s\n", base(f.Path))
		for _, l := range f.Removed {
			diff.WriteString("-" + l + "\n")
		}
		for _, l := range f.Restored {
			diff.WriteString("+" + l + "\n")
		}
		if withConflicts && res == gitstore.UndoAll {
			for _, c := range f.Conflicts {
				for _, l := range c.Now {
					diff.WriteString("-" + l + "\n")
				}
				for _, l := range c.Before {
					diff.WriteString("+" + l + "\n")
				}
			}
		}
	}
	if diff.Len() > 0 {
		text, _ := textcut.Chars(strings.TrimRight(diff.String(), "\n"), restoreLinesCap, "\n...[more lines: see the new commit with /dream-log]")
		fence := mdfence.For(text)
		fmt.Fprintf(&b, "%sdiff\n%s\n%s\n", fence, text, fence)
	}
	return b.String()
}

// conflictLines shows each place a later change touched: the lines now
// (kept by "keep") and as they were before the commit (put back by "all").
func conflictLines(p gitstore.RestorePlan) string {
	var text strings.Builder
	for _, f := range p.Files {
		for _, c := range f.Conflicts {
			fmt.Fprintf(&text, "%s\n", base(f.Path))
			if f.Whole {
				text.WriteString("  (the whole file: it is not lines of text)\n")
				continue
			}
			writeSide(&text, "now:    ", c.Now)
			writeSide(&text, "before: ", c.Before)
		}
	}
	s, _ := textcut.Chars(strings.TrimRight(text.String(), "\n"), restoreLinesCap, "\n...")
	fence := mdfence.For(s)
	return fmt.Sprintf("%stext\n%s\n%s\n", fence, s, fence)
}

func writeSide(b *strings.Builder, label string, lines []string) {
	if len(lines) == 0 {
		b.WriteString("  " + label + "(no line)\n")
		return
	}
	for i, l := range lines {
		if i > 0 {
			label = strings.Repeat(" ", len(label))
		}
		b.WriteString("  " + label + l + "\n")
	}
}

// linkLines says of the files that were symbolic links before the commit
// short that they stay as they are: a restore never brings a link back.
func linkLines(p gitstore.RestorePlan, short string) string {
	n := len(p.Links)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s: before `%s` %s a symbolic link, and a restore never brings a link back.\n",
		baseNames(p.Links), itThey(n, "stays as it is", "stay as they are"), short, itThey(n, "it was", "they were"))
}

// baseNames names files by their base names: "USER.md", "SOUL.md and
// USER.md".
func baseNames(paths []string) string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = base(p)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func itThey(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

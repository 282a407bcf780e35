package dreamtext

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/mdfence"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// Damaged is what the Dream commands and /status say while the memory
// repository's branch is damaged beyond the automatic repair: Dream stops
// rather than start a new history. The operator's log has the detail
// (which file, what to write into it); a chat does not.
const Damaged = "Dream is stopped: the memory repository's history is damaged and could not be repaired automatically, so nothing was re-created; the gateway log says how to repair it."

// logDiffCap caps the diff a commit is shown with; the channel splits long
// replies, but a whole rewritten file is not worth reading in a chat.
const logDiffCap = 6_000

// NoDreamCommits is /dream-log's reply when the repository holds no Dream
// commit: before the first Dream that is "none has run yet" and how to
// start one, which is not the same news as Dreams that ran and changed
// nothing.
func (k Commands) NoDreamCommits(s dream.Status, now time.Time) string {
	if s.Last == nil && !s.Running {
		msg := "No Dream has run yet. Start one with " + k.cmd(k.Run, "")
		if !s.Next.IsZero() {
			msg += fmt.Sprintf(", or wait for the scheduled one at %s (in %s)", showTime(s.Next), ago(s.Next.Sub(now)))
		}
		return msg + "."
	}
	if s.Last == nil {
		return fmt.Sprintf("The first Dream is running now (started %s ago); it has not changed the memory files yet.", ago(now.Sub(s.Since)))
	}
	return fmt.Sprintf("No Dream commits yet: Dreams have run (the last %s ago: %s) but none has changed the memory files.",
		ago(now.Sub(s.Last.When)), outcomeText(s.Last.Outcome))
}

// Commit is the reply to /dream-log [sha]: the commit and its diff against
// its parent, and how to undo it when it can be (a Dream's, a restore's,
// hand edits).
func (k Commands) Commit(c gitstore.Commit, d gitstore.Diff) string {
	s := commitText(c, d)
	if dream.Undoable(c.Subject) && !d.Empty() {
		s += "\n\nUndo it with " + k.cmd(k.Restore, c.Short)
	}
	return s
}

// UndoneCommit is Commit for a commit a restore (r) has undone since (the
// latest Dream commit, or the one asked for): it says so and how to bring
// the change back, instead of offering an undo that would change nothing.
func (k Commands) UndoneCommit(c gitstore.Commit, d gitstore.Diff, r gitstore.Commit) string {
	return commitText(c, d) + fmt.Sprintf("\n\nAlready undone by `%s` %s (%s). Bring it back with %s",
		r.Short, showTime(r.When), subjectOr(r.Subject), k.cmd(k.Restore, r.Short))
}

func commitText(c gitstore.Commit, d gitstore.Diff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n`%s` %s\n", subjectOr(c.Subject), c.Short, showTime(c.When))
	if len(d.Files) == 0 {
		b.WriteString("No memory file changed in this commit.\n")
		return strings.TrimRight(b.String(), "\n")
	}
	parts := make([]string, len(d.Files))
	for i, f := range d.Files {
		if f.Binary {
			parts[i] = base(f.Path) + " (binary)"
		} else {
			parts[i] = fmt.Sprintf("%s (+%d -%d)", base(f.Path), f.Added, f.Deleted)
		}
	}
	fmt.Fprintf(&b, "Changed: %s\n", strings.Join(parts, ", "))
	if diff := strings.TrimRight(d.Unified, "\n"); diff != "" {
		diff, _ = textcut.Chars(diff, logDiffCap, "\n...[diff truncated]")
		fence := mdfence.For(diff)
		fmt.Fprintf(&b, "\n%sdiff\n%s\n%s\n", fence, diff, fence)
	}
	return strings.TrimRight(b.String(), "\n")
}

func subjectOr(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

// Error turns an error from Run, Restore or the repository calls behind
// /dream-log and /dream-restore into one sentence for a person; rev is the
// revision they typed ("" when none). The error itself belongs in the log.
func (k Commands) Error(err error, rev string, now time.Time) string {
	rev = strings.TrimSpace(rev)
	var amb *gitstore.AmbiguousRevisionError
	var runErr *dream.RunError
	var link *gitstore.LinkNotRestoredError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, dream.ErrAlreadyRunning):
		return Busy(err, now)
	case errors.As(err, &runErr):
		return fmt.Sprintf("Dream failed: %s.", reasonOr(runErr.Reason))
	case errors.Is(err, dream.ErrNotDreamCommit):
		return fmt.Sprintf("`%s` cannot be undone: only a Dream's changes, a restore and hand edits can. Try %s to list them.", rev, k.cmd(k.Restore, ""))
	case errors.As(err, &amb):
		shorts := make([]string, 0, len(amb.Candidates))
		for _, c := range amb.Candidates {
			shorts = append(shorts, "`"+c[:min(8, len(c))]+"`")
		}
		return fmt.Sprintf("`%s` matches several commits (%s); give more characters.", rev, strings.Join(shorts, ", "))
	case errors.Is(err, gitstore.ErrAmbiguousRevision):
		return fmt.Sprintf("`%s` matches several commits; give more characters.", rev)
	case errors.Is(err, gitstore.ErrInvalidRevision):
		return fmt.Sprintf("`%s` is not a commit id: give 4 to 40 hex characters, e.g. %s.", rev, k.cmd(k.Log, "1a2b3c4d"))
	case errors.Is(err, gitstore.ErrUnknownRevision), errors.Is(err, gitstore.ErrNotInHistory):
		return fmt.Sprintf("No memory change `%s`. Try %s to list them.", rev, k.cmd(k.Restore, ""))
	case errors.Is(err, gitstore.ErrNoMatchingCommit):
		return "No Dream commits yet: Dream has not changed the memory files."
	case errors.Is(err, gitstore.ErrRootCommit):
		return fmt.Sprintf("`%s` is the first commit of the memory repository; there is no earlier state to restore.", rev)
	case errors.As(err, &link):
		return fmt.Sprintf("Undoing `%s` changes nothing: before it, %s %s a symbolic link, and a restore never brings a link back (memory is never read through one).",
			rev, baseNames(link.Paths), itThey(len(link.Paths), "was", "were"))
	case errors.Is(err, gitstore.ErrNothingToCommit):
		return fmt.Sprintf("Undoing `%s` changes nothing now: its change is undone already, or every line of it was changed since and the later lines are kept.", rev)
	case errors.Is(err, gitstore.ErrLocked), errors.Is(err, gitstore.ErrConcurrentUpdate):
		return "The memory repository is busy (another git command is using it); try again in a moment."
	case errors.Is(err, gitstore.ErrDamaged):
		return Damaged
	case errors.Is(err, gitstore.ErrNotARepository), errors.Is(err, gitstore.ErrNestedRepository):
		return "The memory repository is not available; see the log for details."
	}
	return "Something went wrong with the memory repository; see the log for details."
}

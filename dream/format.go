package dream

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/mdfence"
)

// The texts of the Dream commands, shared by chat (/dream, /dream-log,
// /dream-restore) and the CLI (dreamgate dream run|log|restore). Each is
// plain text with Markdown code spans and fences, which every channel
// renders or shows legibly. None carries an error's text: errors are mapped
// to sentences here and logged by the caller.

// logDiffCap caps the diff /dream-log shows; the channel splits long
// replies, but a whole rewritten file is not worth reading in a chat.
const logDiffCap = 6_000

// showTime renders a commit time with its zone: a named zone by name
// ("CEST"), an unnamed one by offset ("+0200"), offset zero as "UTC".
func showTime(t time.Time) string {
	name, off := t.Zone()
	switch {
	case off == 0 && (name == "" || name[0] == '+' || name[0] == '-'):
		return t.Format("2006-01-02 15:04") + " UTC"
	case name == "" || name[0] == '+' || name[0] == '-':
		return t.Format("2006-01-02 15:04 -0700")
	}
	return t.Format("2006-01-02 15:04 MST")
}

// FormatReport is the reply to /dream and `dreamgate dream run`.
func FormatReport(r Report) string {
	var b strings.Builder
	if r.Recovered != "" {
		fmt.Fprintf(&b, "Dream first recorded the edits of an interrupted Dream (commit %s). ", r.Recovered)
	}
	switch r.Outcome {
	case OutcomeNothingNew:
		b.WriteString("Dream: nothing new to read.")
		return b.String()
	case OutcomeCompleted:
		b.WriteString(doneText(r))
		if r.ManualCommit != "" {
			fmt.Fprintf(&b, " Hand edits made since the last Dream were saved first (commit %s).", r.ManualCommit)
		}
		b.WriteString(backlogText(r.Backlog))
		return b.String()
	case OutcomePartial:
		if r.Batches > 0 {
			b.WriteString(doneText(r) + " ")
		}
		msg := fmt.Sprintf("Dream applied part of the findings from history entries %s", batchRange(r))
		if r.Commit != "" {
			msg += fmt.Sprintf(" (commit %s)", r.Commit)
		}
		fmt.Fprintf(&b, "%s, then stopped: %s. The other %s will be applied next time.",
			msg, reasonOr(r.Reason), plural(r.Left, "finding", "findings"))
		b.WriteString(backlogText(r.Backlog))
		return b.String()
	case OutcomeSkipped:
		if r.Batches > 0 {
			b.WriteString(doneText(r) + " Then: ")
		}
		fmt.Fprintf(&b, "Dream failed: %s. After %d failed runs, history entries %s were skipped; the skip is recorded in the history.",
			reasonOr(r.Reason), r.Failures, batchRange(r))
		return b.String()
	case OutcomeFailed:
		if r.Batches > 0 {
			b.WriteString(doneText(r) + " Then the next batch failed: ")
		}
		fmt.Fprintf(&b, "Dream failed: %s.", reasonOr(r.Reason))
		switch {
		case r.Entries == 0:
		case r.Failures > 0 && r.MaxFailures > 0:
			fmt.Fprintf(&b, " The entries will be read again next time (failed %d of %d times).", r.Failures, r.MaxFailures)
		default:
			b.WriteString(" The entries will be read again next time.")
		}
		return b.String()
	}
	return "Dream: no result."
}

// FormatPublicReport is FormatReport for a chat user who is not the
// operator: a failure is told without the operator's detail (the model's
// endpoint, the config keys to check), which goes to the log.
func FormatPublicReport(r Report) string {
	if r.PublicReason != "" {
		r.Reason = r.PublicReason
	}
	return FormatReport(r)
}

// doneText says what the completed batches of a run did.
func doneText(r Report) string {
	var b strings.Builder
	if r.Outcome != OutcomeCompleted && r.Batches > 0 {
		r.Entries = r.EntriesDone
	}
	read := plural(r.Entries, "history entry", "history entries")
	if r.Batches > 1 {
		read += fmt.Sprintf(" in %d batches", r.Batches)
	}
	switch {
	case r.Changes == 0 && r.Findings > 0:
		// Phase 2 may have found the facts already there, or failed
		// every edit and given up: say only what is known.
		entries := plural(r.Entries, "entry", "entries")
		if r.Batches > 1 {
			entries += fmt.Sprintf(" in %d batches", r.Batches)
		}
		fmt.Fprintf(&b, "Dream: read %s; %s, but no memory file changed.", entries, plural(r.Findings, "finding", "findings"))
	case r.Changes == 0:
		entries := plural(r.Entries, "entry", "entries")
		if r.Batches > 1 {
			entries += fmt.Sprintf(" in %d batches", r.Batches)
		}
		fmt.Fprintf(&b, "Dream: read %s, nothing worth changing.", entries)
	default:
		b.WriteString("Dream: ")
		for i, f := range r.Files {
			if i == 0 {
				b.WriteString(plural(f.Changes, "change", "changes"))
			} else {
				fmt.Fprintf(&b, ", %d", f.Changes)
			}
			b.WriteString(" to " + base(f.Path))
		}
		commits := "commit " + r.Commit
		if len(r.Commits) > 1 {
			commits = "commits " + strings.Join(r.Commits, ", ")
		}
		fmt.Fprintf(&b, " (%s), %s read.", commits, read)
	}
	return b.String()
}

// batchRange is "first-last" of the last batch a run attempted.
func batchRange(r Report) string {
	if r.BatchFirst == 0 {
		return fmt.Sprintf("%d-%d", r.First, r.Last)
	}
	return fmt.Sprintf("%d-%d", r.BatchFirst, r.BatchLast)
}

// backlogText tells how many unread entries wait after a run.
func backlogText(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" %s still waiting for the next Dream.", plural(n, "unread history entry is", "unread history entries are"))
}

// FormatNothingNew is /dream's reply when Dream found nothing to read even
// after the conversation it was sent from was archived: why (a clause the
// caller knows, e.g. "this conversation was already archived"), then how
// conversations reach Dream at all. idle is idleCompactAfterMinutes (0:
// off).
func FormatNothingNew(why string, idle time.Duration) string {
	msg := "Dream: nothing new to read"
	if why = strings.TrimSpace(why); why != "" {
		msg += ": " + why
	}
	return msg + ". " + HowConversationsArrive(idle)
}

// HowConversationsArrive says, in one sentence, when a conversation reaches
// Dream: only what is archived is read.
func HowConversationsArrive(idle time.Duration) string {
	if idle <= 0 {
		return "Conversations reach Dream once they are archived: when one grows past its share of the context window, or on /new (archiving after idle minutes is off)."
	}
	return fmt.Sprintf("Conversations reach Dream once they are archived: when one grows past its share of the context window, on /new, or after %s without a message.", idleText(idle))
}

func idleText(d time.Duration) string {
	if d < time.Minute {
		return plural(int(d/time.Second), "second", "seconds")
	}
	return plural(int(d/time.Minute), "minute", "minutes")
}

// FormatNoDreamCommits is /dream-log's reply when the repository holds no
// Dream commit: before the first Dream that is "none has run yet" and how to
// start one, which is not the same news as Dreams that ran and changed
// nothing.
func FormatNoDreamCommits(s Status, now time.Time, start string) string {
	if s.Last == nil && !s.Running {
		msg := "No Dream has run yet. Start one with " + start
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

// outcomeText is an Outcome in words.
func outcomeText(o Outcome) string {
	switch o {
	case OutcomeNothingNew:
		return "nothing new to read"
	case OutcomeCompleted:
		return "completed"
	case OutcomeFailed:
		return "failed"
	case OutcomeSkipped:
		return "skipped a batch"
	}
	return string(o)
}

func reasonOr(s string) string {
	if s == "" {
		return "something went wrong"
	}
	return s
}

// FormatCommit is the reply to /dream-log [sha]: the commit and its diff
// against its parent.
func FormatCommit(c gitstore.Commit, d gitstore.Diff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n`%s` %s\n", subjectOr(c.Subject), c.Short, showTime(c.When))
	if len(d.Files) == 0 {
		b.WriteString("No memory file changed in this commit.\n")
	} else {
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
			diff, cut := capText(diff, logDiffCap)
			if cut {
				diff = strings.TrimSuffix(diff, "…[truncated]") + "\n...[diff truncated]"
			}
			fence := mdfence.For(diff)
			fmt.Fprintf(&b, "\n%sdiff\n%s\n%s\n", fence, diff, fence)
		}
	}
	if strings.HasPrefix(c.Subject, SubjectPrefix) {
		fmt.Fprintf(&b, "\nUndo it with /dream-restore %s", c.Short)
	}
	return strings.TrimRight(b.String(), "\n")
}

// FormatUndoneCommit is FormatCommit for the latest Dream commit when a
// restore (r) has undone it since: it says so instead of offering the
// undo again.
func FormatUndoneCommit(c gitstore.Commit, d gitstore.Diff, r gitstore.Commit) string {
	s := strings.TrimSuffix(FormatCommit(c, d), fmt.Sprintf("\n\nUndo it with /dream-restore %s", c.Short))
	return s + fmt.Sprintf("\n\nAlready undone by `%s` %s (%s).", r.Short, showTime(r.When), subjectOr(r.Subject))
}

func subjectOr(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}

// FormatList is the reply to /dream-restore without arguments: the given
// Dream commits, newest first (the caller asks for the 10 latest).
func FormatList(cs []gitstore.Commit) string {
	if len(cs) == 0 {
		return "No Dream commits yet: Dream has not changed the memory files."
	}
	var b strings.Builder
	b.WriteString("Dream commits, newest first:\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "- `%s` %s %s\n", c.Short, showTime(c.When), subjectOr(c.Subject))
	}
	b.WriteString("See one with /dream-log <sha>; undo one (and everything after it) with /dream-restore <sha>.")
	return b.String()
}

// maxLaterListed bounds the later commits FormatRestore names: a restore
// far back undoes thousands, which no chat message should list.
const maxLaterListed = 10

// FormatRestore is the reply to /dream-restore <sha>.
func FormatRestore(r RestoreResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Restored the memory files to their state before `%s` (new commit `%s`).", r.Target.Short, r.Revert.Short)
	if len(r.Files) > 0 {
		names := make([]string, len(r.Files))
		for i, f := range r.Files {
			names[i] = base(f)
		}
		fmt.Fprintf(&b, "\nRestored: %s.", strings.Join(names, ", "))
	}
	var later []string
	skipped := 0
	for _, c := range r.Undone {
		switch {
		case c.SHA == r.Target.SHA:
		case len(later) == maxLaterListed:
			skipped++
		default:
			later = append(later, fmt.Sprintf("`%s` %s", c.Short, subjectOr(c.Subject)))
		}
	}
	if skipped > 0 {
		later = append(later, fmt.Sprintf("… and %d more", skipped))
	}
	if len(later) > 0 {
		fmt.Fprintf(&b, "\nThis also undid later changes to those files:\n- %s", strings.Join(later, "\n- "))
	}
	b.WriteString("\nThe history behind the undone change will not be dreamed again.")
	return b.String()
}

// FormatBusy is the reply when a Dream is already running:
// "Already dreaming (started 12s ago)."
func FormatBusy(err error, now time.Time) string {
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Since.IsZero() {
		return "Already dreaming."
	}
	return fmt.Sprintf("Already dreaming (started %s ago).", ago(now.Sub(busy.Since)))
}

// ago renders an elapsed time coarsely: 12s, 3m, 1h5m.
func ago(d time.Duration) string {
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

// FormatError turns an error from Run, Restore or the repository calls
// behind /dream-log and /dream-restore into one sentence for a user; rev is
// the revision the user typed ("" when none). The error itself belongs in
// the log.
func FormatError(err error, rev string, now time.Time) string {
	rev = strings.TrimSpace(rev)
	var amb *gitstore.AmbiguousRevisionError
	var runErr *RunError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrAlreadyRunning):
		return FormatBusy(err, now)
	case errors.As(err, &runErr):
		return fmt.Sprintf("Dream failed: %s.", reasonOr(runErr.Reason))
	case errors.Is(err, ErrNotDreamCommit):
		return fmt.Sprintf("`%s` is not a Dream commit; only Dream's changes can be restored. Try /dream-restore to list them.", rev)
	case errors.As(err, &amb):
		shorts := make([]string, 0, len(amb.Candidates))
		for _, c := range amb.Candidates {
			shorts = append(shorts, "`"+c[:min(8, len(c))]+"`")
		}
		return fmt.Sprintf("`%s` matches several commits (%s); give more characters.", rev, strings.Join(shorts, ", "))
	case errors.Is(err, gitstore.ErrAmbiguousRevision):
		return fmt.Sprintf("`%s` matches several commits; give more characters.", rev)
	case errors.Is(err, gitstore.ErrInvalidRevision):
		return fmt.Sprintf("`%s` is not a commit id: give 4 to 40 hex characters, e.g. /dream-log 1a2b3c4d.", rev)
	case errors.Is(err, gitstore.ErrUnknownRevision), errors.Is(err, gitstore.ErrNotInHistory):
		return fmt.Sprintf("No Dream commit `%s`. Try /dream-restore to list them.", rev)
	case errors.Is(err, gitstore.ErrNoMatchingCommit):
		return "No Dream commits yet: Dream has not changed the memory files."
	case errors.Is(err, gitstore.ErrRootCommit):
		return fmt.Sprintf("`%s` is the first commit of the memory repository; there is no earlier state to restore.", rev)
	case errors.Is(err, gitstore.ErrNothingToCommit):
		return fmt.Sprintf("The memory files already are as they were before `%s`; nothing to restore.", rev)
	case errors.Is(err, gitstore.ErrLocked), errors.Is(err, gitstore.ErrConcurrentUpdate):
		return "The memory repository is busy (another git command is using it); try again in a moment."
	case errors.Is(err, gitstore.ErrNotARepository), errors.Is(err, gitstore.ErrNestedRepository):
		return "The memory repository is not available; see the log for details."
	}
	return "Something went wrong with the memory repository; see the log for details."
}

// FormatStatus is the Dream line of /status and `dreamgate status`.
func FormatStatus(s Status, now time.Time) string {
	var parts []string
	if s.Running {
		parts = append(parts, fmt.Sprintf("dreaming now (started %s ago)", ago(now.Sub(s.Since))))
	}
	if s.Last == nil {
		parts = append(parts, "last: never")
	} else {
		l := s.Last
		last := fmt.Sprintf("last: %s ago, %s", ago(now.Sub(l.When)), l.Outcome)
		switch {
		case l.Commit != "":
			last += fmt.Sprintf(" (%s, commit %s)", plural(l.Changes, "change", "changes"), l.Commit)
		case l.Outcome == OutcomeFailed || l.Outcome == OutcomeSkipped:
			if l.Reason != "" {
				last += ": " + l.Reason
			}
		}
		parts = append(parts, last)
		if l.Left > 0 {
			parts = append(parts, fmt.Sprintf("%s of history %d-%d left for the next run", plural(l.Left, "finding", "findings"), l.First, l.Last))
		}
	}
	if s.Backlog > 0 {
		parts = append(parts, fmt.Sprintf("%s waiting", plural(s.Backlog, "unread history entry", "unread history entries")))
	}
	if len(s.Skips) > 0 {
		k := s.Skips[len(s.Skips)-1]
		parts = append(parts, fmt.Sprintf("skipped history %d-%d %s ago after repeated failures", k.First, k.Last, ago(now.Sub(k.When))))
	}
	if !s.Next.IsZero() {
		parts = append(parts, fmt.Sprintf("next: %s (in %s)", showTime(s.Next), ago(s.Next.Sub(now))))
	} else {
		parts = append(parts, "next: not scheduled")
	}
	return "Dream: " + strings.Join(parts, "; ")
}

// FormatSkips is what /dream-log adds about batches Dream gave up on
// (newest first), "" when there were none: a skip makes no commit, and
// must not be silent.
func FormatSkips(s Status, now time.Time) string {
	if len(s.Skips) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Skipped after repeated failures (not read into memory; recorded in the history):")
	for i := len(s.Skips) - 1; i >= 0; i-- {
		k := s.Skips[i]
		fmt.Fprintf(&b, "\n- history entries %d-%d, %s ago", k.First, k.Last, ago(now.Sub(k.When)))
		if k.Findings > 0 {
			fmt.Fprintf(&b, ", %s not applied", plural(k.Findings, "finding", "findings"))
		}
		if k.Reason != "" {
			b.WriteString(": " + k.Reason)
		}
	}
	return b.String()
}

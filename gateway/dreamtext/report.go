package dreamtext

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/dream"
)

// Report is the reply to /dream and `dreamgate dream run` for the operator:
// a failure names what to check.
func Report(r dream.Report) string {
	var b strings.Builder
	if r.Recovered != "" {
		fmt.Fprintf(&b, "Dream first finished what an interrupted Dream had begun (commit %s). ", r.Recovered)
	}
	switch r.Outcome {
	case dream.OutcomeNothingNew:
		b.WriteString("Dream: nothing new to read.")
		return b.String()
	case dream.OutcomeCompleted:
		if r.Entries > 0 || r.Batches > 0 || len(r.Deep) == 0 {
			b.WriteString(doneText(r))
		} else {
			b.WriteString("Dream: nothing new to read.")
		}
		if dt := deepText(r.Deep); dt != "" {
			b.WriteString(" " + dt)
		}
		if r.ManualCommit != "" {
			fmt.Fprintf(&b, " Hand edits made since the last Dream were saved first (commit %s).", r.ManualCommit)
		}
		b.WriteString(backlogText(r.Backlog))
		return b.String()
	case dream.OutcomePartial:
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
	case dream.OutcomeSkipped:
		if r.Batches > 0 {
			b.WriteString(doneText(r) + " Then: ")
		}
		fmt.Fprintf(&b, "Dream failed: %s. After %d failed runs, history entries %s were skipped; the skip is recorded in the history.",
			reasonOr(r.Reason), r.Failures, batchRange(r))
		return b.String()
	case dream.OutcomeFailed:
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

// PublicReport is Report for a chat user who is not the operator: a
// failure is told without the operator's detail (the model's endpoint, the
// config keys to check), which goes to the log.
func PublicReport(r dream.Report) string {
	if r.PublicReason != "" {
		r.Reason = r.PublicReason
	}
	return Report(r)
}

// deepText says what the run's deep Dreams did ("" when none changed
// anything), in counts: a deep Dream's scope is not for every reader.
func deepText(deep []dream.DeepReport) string {
	var commits []string
	merged, cold := 0, 0
	for _, d := range deep {
		if d.Commit == "" {
			continue
		}
		commits = append(commits, d.Commit)
		merged += d.Merged
		cold += d.ColdLines
	}
	if len(commits) == 0 {
		return ""
	}
	var parts []string
	if merged > 0 {
		parts = append(parts, plural(merged, "line", "lines")+" merged away")
	}
	if cold > 0 {
		parts = append(parts, plural(cold, "line", "lines")+" moved to cold memory")
	}
	if len(parts) == 0 {
		parts = append(parts, "lines rewritten")
	}
	word := "commit"
	if len(commits) > 1 {
		word = "commits"
	}
	return fmt.Sprintf("Deep Dream: %s (%s %s); nothing is deleted, and a restore of the %s puts the lines back.", strings.Join(parts, ", "), word, strings.Join(commits, ", "), word)
}

// doneText says what the completed batches of a run did.
func doneText(r dream.Report) string {
	var b strings.Builder
	if r.Outcome != dream.OutcomeCompleted && r.Batches > 0 {
		r.Entries = r.EntriesDone
	}
	read := plural(r.Entries, "history entry", "history entries")
	if r.Batches > 1 {
		read += fmt.Sprintf(" in %d batches", r.Batches)
	}
	entries := plural(r.Entries, "entry", "entries")
	if r.Batches > 1 {
		entries += fmt.Sprintf(" in %d batches", r.Batches)
	}
	switch {
	case r.Changes == 0 && r.Findings > 0:
		// Phase 2 may have found the facts already there, or failed
		// every edit and given up: say only what is known.
		fmt.Fprintf(&b, "Dream: read %s; %s, but no memory file changed.", entries, plural(r.Findings, "finding", "findings"))
	case r.Changes == 0:
		fmt.Fprintf(&b, "Dream: read %s, nothing worth changing.", entries)
	default:
		b.WriteString("Dream: ")
		for i, f := range byName(r.Files) {
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

// byName sums the changes of the files of one name: a run over several
// memory scopes changes each scope's USER.md, and the reader is told what
// changed, not where (a scope's name is not for every reader).
func byName(files []dream.FileChange) []dream.FileChange {
	var out []dream.FileChange
	for _, f := range files {
		f.Path = base(f.Path)
		if i := slices.IndexFunc(out, func(o dream.FileChange) bool { return o.Path == f.Path }); i >= 0 {
			out[i].Changes += f.Changes
			continue
		}
		out = append(out, f)
	}
	return out
}

// batchRange is "first-last" of the last batch a run attempted.
func batchRange(r dream.Report) string {
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

func reasonOr(s string) string {
	if s == "" {
		return "something went wrong"
	}
	return s
}

// NothingNew is the reply when a Dream found nothing to read although
// something was said that the asker expects it to read: why (a clause the
// caller knows, e.g. "this conversation was already archived"), then how
// conversations reach Dream at all. idle is idleCompactAfterMinutes (0:
// off).
func NothingNew(why string, idle time.Duration) string {
	msg := "Dream: nothing new to read"
	if why = strings.TrimSpace(why); why != "" {
		msg += ": " + why
	}
	return msg + ". " + HowConversationsArrive(idle)
}

// NotArchived is NothingNew's why when n conversations hold messages that
// are not archived yet: Dream cannot see them.
func NotArchived(n int) string {
	return plural(n, "conversation has messages", "conversations have messages") + " not archived yet, and Dream reads only the archive"
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

// Busy is the reply when a Dream is already running:
// "Already dreaming (started 12s ago)."
func Busy(err error, now time.Time) string {
	var busy *dream.BusyError
	if !errors.As(err, &busy) || busy.Since.IsZero() {
		return "Already dreaming."
	}
	return fmt.Sprintf("Already dreaming (started %s ago).", ago(now.Sub(busy.Since)))
}

// Status is the Dream line of /status and `dreamgate status`.
func Status(s dream.Status, now time.Time) string {
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
			undone := ""
			if l.UndoneBy != "" {
				undone = ", undone by " + l.UndoneBy
			}
			last += fmt.Sprintf(" (%s, commit %s%s)", plural(l.Changes, "change", "changes"), l.Commit, undone)
		case l.Outcome == dream.OutcomeFailed || l.Outcome == dream.OutcomeSkipped:
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
	if s.LastDeep != nil {
		parts = append(parts, fmt.Sprintf("last deep Dream %s ago", ago(now.Sub(*s.LastDeep))))
	}
	if n := len(s.DeepAsked); n > 0 {
		parts = append(parts, fmt.Sprintf("a deep Dream is due for %s over its memory budget", plural(n, "scope", "scopes")))
	}
	if !s.Next.IsZero() {
		parts = append(parts, fmt.Sprintf("next: %s (in %s)", showTime(s.Next), ago(s.Next.Sub(now))))
	} else {
		parts = append(parts, "next: not scheduled")
	}
	return "Dream: " + strings.Join(parts, "; ")
}

// Skips is what /dream-log adds about batches Dream gave up on (newest
// first), "" when there were none: a skip makes no commit, and must not be
// silent.
func Skips(s dream.Status, now time.Time) string {
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

// outcomeText is an Outcome in words.
func outcomeText(o dream.Outcome) string {
	switch o {
	case dream.OutcomeNothingNew:
		return "nothing new to read"
	case dream.OutcomeCompleted:
		return "completed"
	case dream.OutcomeFailed:
		return "failed"
	case dream.OutcomeSkipped:
		return "skipped a batch"
	}
	return string(o)
}

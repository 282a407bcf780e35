package gateway

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gitstore"
)

// Dreamer is what the Dream commands (/dream, /dream-log, /dream-restore)
// and /status need of Dream. Each call names the memory scopes it is
// about (dream.Scopes: the zero value is none).
type Dreamer interface {
	Run(ctx context.Context, trigger string, scopes dream.Scopes, progress func(string)) (dream.Report, error)
	Restore(rev string, scopes dream.Scopes, opts dream.RestoreOptions) (dream.RestoreResult, error)
	PlanRestore(rev string, scopes dream.Scopes) (dream.RestorePlan, error)
	Status(scopes dream.Scopes) dream.Status
}

// dreamScopes are the memory scopes a Dream command from in is about: the
// scopes its audience may read, so that /dream reads, and /status and
// /dream-restore show and touch, nothing another audience said; every
// scope for the operator at the terminal, who may inspect them all.
func (g *Gateway) dreamScopes(in channels.Inbound) dream.Scopes {
	a := g.audienceOf(in)
	if a.Kind == audience.Operator {
		return dream.AllScopes()
	}
	return dream.OnlyScopes(g.readable(a)...)
}

// MemoryLog is what /dream-log and /dream-restore read of the memory
// repository. keep chooses the files the asker may see (nil: every file):
// a commit is found or listed only when it changed one of them, and its
// diff holds only those.
type MemoryLog interface {
	Latest(subjectPrefix string, keep func(path string) bool) (gitstore.Commit, gitstore.Diff, error)
	// Show returns the commit rev and its diff cut to keep; a commit that
	// changed none of keep's files is not the asker's to see (the caller
	// answers as for an unknown one).
	Show(rev string, keep func(path string) bool) (gitstore.Commit, gitstore.Diff, error)
	// LogPrefixes lists the newest n commits whose subject starts with any
	// of prefixes (the changes /dream-restore can undo).
	LogPrefixes(n int, prefixes []string, keep func(path string) bool) ([]gitstore.Commit, error)
	// UndoneBy finds the restore, still in effect, that undid the commit
	// sha (a full id): its trailers name it.
	UndoneBy(sha string, keep func(path string) bool) (gitstore.Commit, bool, error)
}

// memoryKeep chooses the memory files a Dream command from in may show and
// touch: every file for the operator at the terminal, who may inspect
// every scope (nil); else the files of the scopes its audience may read,
// so that /dream-log and /dream-restore show nothing another audience
// said.
func (g *Gateway) memoryKeep(in channels.Inbound) func(path string) bool {
	return g.MemoryKeep(in.Audience)
}

// MemoryKeep is memoryKeep for an audience a channel names outside a
// message (Discord's autocomplete of a commit's sha).
func (g *Gateway) MemoryKeep(a audience.Audience) func(path string) bool {
	if a.Kind == audience.Operator {
		return nil
	}
	readable := g.readable(a)
	return func(p string) bool {
		s, ok := audience.ScopeOfPath(p)
		return ok && slices.Contains(readable, s)
	}
}

// hideCandidates drops the candidates an ambiguous revision names when
// the asker may not see every commit: they may be other scopes' commits.
func hideCandidates(err error, keep func(string) bool) error {
	var amb *gitstore.AmbiguousRevisionError
	if keep != nil && errors.As(err, &amb) {
		return gitstore.ErrAmbiguousRevision
	}
	return err
}

// dreamTimeout bounds a /dream started from chat; Dream has its own
// deadline too.
const dreamTimeout = 45 * time.Minute

func cmdDream() *command {
	return &command{
		name: "/dream",
		help: "run Dream now: archive this conversation and fold the archive into long-term memory",
		run: func(ctx context.Context, g *Gateway, req cmdRequest) string {
			if g.deps.Dream == nil {
				if g.deps.DreamOff != "" {
					return g.deps.DreamOff
				}
				return "Dream is off in this gateway's config."
			}
			in := req.in
			// "Remember this": what was just said is not in the archive yet,
			// and Dream reads only the archive. The command runs in the
			// session's worker, so this archive never overlaps a turn of it.
			arch := g.archiveForDream(ctx, in)
			if in.InOrder {
				// A script's lines are answered in order: its next line
				// (a /dream-log) sees what this Dream did.
				g.dreamFor(ctx, in, arch)
				return ""
			}
			// Dream runs beside the conversation, not in its queue: it may
			// take minutes and the conversation goes on meanwhile.
			// Its answer is out when the Dream ends: a restart before
			// that runs the command again (the inbox keeps it).
			*req.later = true
			g.answerLater(in, func() { g.dreamFor(g.bgCtx, in, arch) })
			return ""
		},
	}
}

// dreamFor runs the Dream /dream asked for, within dreamTimeout of ctx,
// showing its progress, and sends its outcome.
func (g *Gateway) dreamFor(ctx context.Context, in channels.Inbound, arch dreamArchive) {
	ctx, cancel := context.WithTimeout(ctx, dreamTimeout)
	defer cancel()
	stop := g.startTyping(ctx, in)
	defer stop()
	progress := func(msg string) {
		g.send(channels.ReplyTo(in, channels.KindProgress, msg))
	}
	rep, err := g.deps.Dream.Run(ctx, dream.TriggerManual, g.dreamScopes(in), progress)
	var text string
	if err != nil {
		g.logger.Warn("/dream did not complete", "session", in.SessionKey, "outcome", rep.Outcome, "err", err)
	}
	switch {
	case rep.Outcome == dream.OutcomeNothingNew:
		text = dreamtext.NothingNew(arch.why(), g.cfg.IdleCompactAfter)
	case rep.Outcome != "" && in.Local:
		text = dreamtext.Report(rep)
	case rep.Outcome != "":
		// Slack, Discord: the operator's detail is in the log.
		text = dreamtext.PublicReport(rep)
	default:
		text = dreamtext.Chat().Error(err, "", g.now())
	}
	if arch.err != nil && rep.Outcome != dream.OutcomeNothingNew {
		text = archiveFailedNote + " " + text
	}
	// A Dream that did not run or failed is the line's failure (a script
	// piping /dream exits 1), not its answer.
	kind := channels.KindReply
	if rep.Outcome == dream.OutcomeFailed || rep.Outcome == "" {
		kind = channels.KindError
	}
	g.send(channels.ReplyTo(in, kind, text))
}

const archiveFailedNote = "I could not archive this conversation first (the error is in the gateway log), so Dream read only what was archived before."

// dreamArchive is what /dream's archive of its own conversation did.
type dreamArchive struct {
	tail    int   // unarchived messages found
	entries int   // history entries written
	err     error // the archive failed (logged)
}

// archiveForDream archives the unarchived tail of the session the command
// came from, through the same path as /new and the idle archive. The caller
// runs in that session's worker.
func (g *Gateway) archiveForDream(ctx context.Context, in channels.Inbound) dreamArchive {
	var a dreamArchive
	if g.deps.Consolidator == nil {
		return a
	}
	sess, err := g.openSession(in, true)
	if err != nil {
		g.logger.Error("/dream could not open the session to archive it", "session", in.SessionKey, "err", err)
		a.err = err
		return a
	}
	if a.tail = sess.Len() - sess.LastConsolidated(); a.tail <= 0 {
		a.tail = 0
		return a
	}
	g.send(channels.ReplyTo(in, channels.KindProgress, "Archiving this conversation for Dream…"))
	ctx, cancel := context.WithTimeout(ctx, archiveTimeout)
	defer cancel()
	rep, err := g.deps.Consolidator.ArchiveTail(ctx, sess)
	a.entries, a.err = len(rep.Entries), err
	if err != nil {
		g.logger.Error("/dream: archiving the conversation failed", "session", in.SessionKey, "err", err)
	}
	return a
}

// why says why Dream found nothing although /dream archived first.
func (a dreamArchive) why() string {
	switch {
	case a.err != nil:
		return "this conversation could not be archived (the error is in the gateway log), and nothing else is waiting"
	case a.tail == 0:
		return "everything said here was archived before, and no conversation has been archived since the last Dream"
	case a.entries == 0:
		return "the archive of this conversation found nothing worth keeping"
	}
	// Entries were written and yet none was new to Dream: another Dream
	// (cron, another process) read them in between.
	return "another Dream has already read this conversation's archive"
}

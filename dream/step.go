package dream

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
)

// A step is one whole change of memory: a Dream batch, a deep pass, a
// restore, a scope's first files, hand edits saved. It happens entirely —
// its files, its commit, what the ledger learns of it — or not at all,
// whatever the kill point:
//
//  1. its new files are built apart from the live ones (a Dream edits a
//     staging copy, stage.go);
//  2. one commit holds them, on top of the commit they were built on, and
//     the branch moves to it: the one moment the step happens (a kill
//     before it changed nothing);
//  3. the files are written from the commit, each where it still holds the
//     parent commit's version;
//  4. the ledger takes in what the commit's trailers say (the scope's new
//     cursor, the findings left, a deep Dream's result) and the commit as
//     its head.
//
// A kill after 2 is finished at the next start from the commit alone
// (recovery.go): steps 3 and 4 again, for every commit after the ledger's
// head. The ledger's part of a step is therefore never guessed, and a
// finding's edit and its applied mark land in one commit.

// stepKind names what a step is, in its trailers.
type stepKind string

const (
	stepBatch    stepKind = "batch"
	stepDeep     stepKind = "deep"
	stepHandEdit stepKind = "hand-edit"
	stepScope    stepKind = "scope-created"
	stepRestore  stepKind = "restore"
)

// stepNote is what a step's commit tells the ledger, in its trailers.
type stepNote struct {
	Kind  stepKind
	Scope audience.Scope
	// A batch: the history entries it read (First-Last); Done when every
	// finding is applied (the cursor moves past Last), else Left are the
	// findings still to apply, of Total.
	First, Last int
	Done        bool
	Left        []finding
	Total       int
	// A deep Dream: the size it had to leave the memory at, over its
	// target (0: it reached it).
	DeepLeft int
	// A restore (restore.go): the commit it undoes (short id), the commit
	// whose change is back when it undoes a restore, and the hold of a
	// restored deep Dream (tokens; -1 ends one).
	Reverts, Redoes string
	Hold            int
	// Commit is the short id of the step's commit, known once it is made
	// (not a trailer).
	Commit string
	// extra are further trailers the step's commit carries (a restore's,
	// which gitstore reads), not read back into the note.
	extra []string
}

// Trailer keys. "Scope" is older than whole steps: every commit of a
// scope other than the default one has always ended with it.
const (
	trailerScope    = "Scope"
	trailerStep     = "Dream-Step"
	trailerHistory  = "Dream-History"
	trailerDone     = "Dream-Done"
	trailerLeft     = "Dream-Left"
	trailerFinding  = "Dream-Finding"
	trailerDeepLeft = "Dream-Deep-Left"
	trailerReverts  = gitstore.TrailerReverts
	trailerRedoes   = "Dream-Redoes"
	trailerHold     = "Dream-Hold"
)

// trailers renders the note as the last paragraph of a commit message:
// one "Key: value" line each, as git trailers are. The default scope's
// commits name no scope, as they always read.
func (n stepNote) trailers() string {
	var lines []string
	add := func(k, v string) { lines = append(lines, k+": "+v) }
	if n.Scope != DefaultScope {
		add(trailerScope, string(n.Scope))
	}
	if n.Kind == "" {
		return strings.Join(lines, "\n")
	}
	add(trailerStep, string(n.Kind))
	switch n.Kind {
	case stepBatch:
		add(trailerHistory, fmt.Sprintf("%d-%d", n.First, n.Last))
		if n.Done {
			add(trailerDone, "yes")
			break
		}
		add(trailerLeft, fmt.Sprintf("%d of %d", len(n.Left), n.Total))
		for _, f := range n.Left {
			add(trailerFinding, strings.Join(strings.Fields(f.String()), " "))
		}
	case stepDeep:
		add(trailerDeepLeft, strconv.Itoa(n.DeepLeft))
	case stepRestore:
		if n.Redoes != "" {
			add(trailerRedoes, n.Redoes)
		}
		if n.Hold != 0 {
			add(trailerHold, strconv.Itoa(n.Hold))
		}
	}
	return strings.Join(append(n.extra, lines...), "\n")
}

// withNote ends a commit body with the note's trailers.
func withNote(body string, n stepNote) string {
	t := n.trailers()
	switch {
	case t == "":
		return body
	case strings.TrimSpace(body) == "":
		return t
	}
	return strings.TrimRight(body, "\n") + "\n\n" + t
}

// parseNote reads the trailers of a commit body: the note of a step
// (Kind "" for a commit that is none of ours, or older than whole steps).
func parseNote(body string) stepNote {
	var n stepNote
	paras := strings.Split(strings.TrimRight(body, "\n"), "\n\n")
	last := paras[len(paras)-1]
	for line := range strings.Lines(last) {
		key, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		switch key {
		case trailerScope:
			if s, err := audience.ParseScope(value); err == nil {
				n.Scope = s
			}
		case trailerStep:
			n.Kind = stepKind(value)
		case trailerHistory:
			a, b, _ := strings.Cut(value, "-")
			n.First, _ = strconv.Atoi(a)
			n.Last, _ = strconv.Atoi(b)
		case trailerDone:
			n.Done = value == "yes"
		case trailerLeft:
			_, total, _ := strings.Cut(value, " of ")
			n.Total, _ = strconv.Atoi(total)
		case trailerFinding:
			if a := parseAnalysis(value); len(a.findings) == 1 {
				n.Left = append(n.Left, a.findings[0])
			}
		case trailerDeepLeft:
			n.DeepLeft, _ = strconv.Atoi(value)
		case trailerReverts:
			n.Reverts = shortOf(value)
		case trailerRedoes:
			n.Redoes = value
		case trailerHold:
			n.Hold, _ = strconv.Atoi(value)
		}
	}
	if n.Kind == stepBatch && n.Last == 0 {
		n.Kind = "" // unreadable: nothing to take in
	}
	return n
}

// step is a step of memory, built: its files (workspace-relative) and its
// commit's subject, body and note.
type step struct {
	note    stepNote
	subject string
	body    string
	// also are the other scopes whose files the step changes (a move's
	// sources; note.Scope is its target).
	also []audience.Scope
	// base is the full id of the commit the changes were built on.
	base    string
	changes []gitstore.Change
	// rebase, when set, lets the step land after a chat edited the scope's
	// files while it was built: those edits are committed first (as hand
	// edits), and rebase makes each changed file's content from base's
	// version (old), the step's (ours) and the edited one (theirs). Nil: the
	// step gives up (errChangedMeanwhile), unless overLive.
	rebase func(old, ours, theirs []byte) []byte
	// overLive: the step's files do not come from the live ones (a scope's
	// first files, from the template), so it lands whatever they hold;
	// a live file that is not base's version is kept, to be committed as
	// a hand edit after it.
	overLive bool
}

// errChangedMeanwhile: a chat edited the scope's files while a step was
// built, and the step does not merge.
var errChangedMeanwhile = errors.New("the memory files changed while the Dream worked on them")

// landing is what land did.
type landing struct {
	commit gitstore.Commit // zero when the step changed no file
	// manual is the commit of hand edits made while the step was built,
	// saved first (zero when none).
	manual gitstore.Commit
	// kept lists files a link or an edit kept from being written (they are
	// committed as a hand edit later).
	kept []string
}

// stepStore is where a step lands: the one boundary between Dream and its
// records. The file engine (fileSteps: the memory repository and the
// ledger's file) makes the branch's move the commit point and the ledger
// follow from the commit's trailers; an engine keeping both in a database
// would make the commit, the branch and the ledger's record one
// transaction, behind the same two methods.
type stepStore interface {
	// land makes the step happen whole (see step), or not at all.
	land(s step) (landing, error)
	// finish completes the steps a kill interrupted after their commit:
	// it writes their files and has the ledger take them in; it returns
	// the commits it finished.
	finish() ([]gitstore.Commit, error)
}

// fileSteps is the file engine of stepStore.
type fileSteps struct {
	d *Dreamer
	h *held
}

var _ stepStore = fileSteps{}

// steps is the held ledger's stepStore.
func (d *Dreamer) steps(h *held) stepStore { return fileSteps{d: d, h: h} }

func (f fileSteps) land(s step) (landing, error) {
	d := f.d
	keep := OnlyScopes(append([]audience.Scope{s.note.Scope}, s.also...)...).pathIn
	var out landing
	base := s.base
	took := false // the ledger took the step in with its commit (dbsteps.go)
	err := d.exclusive(func() error {
		// Under a scope's lease, the store confirms it is still this
		// holder's before the step writes anything (lease.go).
		if err := d.checkFence(f.h); err != nil {
			return err
		}
		st, err := d.repo.Status(keep)
		if err != nil {
			return fmt.Errorf("compare the memory files before the commit: %w", err)
		}
		if !st.Empty() && !s.overLive {
			if s.rebase == nil {
				return errChangedMeanwhile
			}
			if out.manual, err = f.saveMeanwhile(st, s.note.Scope); err != nil {
				return err
			}
			if s.changes, err = f.rebaseOnto(s, out.manual.SHA); err != nil {
				return err
			}
			base = out.manual.SHA
		}
		out.commit, took, err = f.commitStep(base, s)
		if errors.Is(err, gitstore.ErrNothingToCommit) {
			out.commit, err = gitstore.Commit{}, nil
			return nil
		}
		if err != nil {
			return fmt.Errorf("commit %q: %w", s.subject, err)
		}
		// The step has happened; its files follow. A failure from here
		// on is finished by the next start, from the commit.
		res, err := d.repo.Checkout(base, out.commit.SHA, keep)
		out.kept = res.Kept
		if err != nil {
			d.log.Warn("a Dream step's files could not all be written; the next Dream writes them", "commit", out.commit.Short, "err", err)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	head := out.commit.SHA
	notes := []stepNote{s.note}
	notes[0].Commit = out.commit.Short
	if head == "" {
		head = out.manual.SHA
		notes = nil
	}
	if head == "" || took {
		return out, nil
	}
	if err := f.h.landed(notes, head, d.now()); err != nil {
		// The commit stands: the next start takes it in.
		d.log.Warn("the ledger did not take in a Dream step; the next Dream does, from its commit", "commit", shortOf(head), "err", err)
	}
	return out, nil
}

// saveMeanwhile commits the scope's files a chat edited while a step was
// built, as hand edits, before the step that rebases onto them.
func (f fileSteps) saveMeanwhile(st gitstore.Diff, scope audience.Scope) (gitstore.Commit, error) {
	c, err := f.d.repo.CommitPaths(diffPaths(st), gitstore.ManualSubject, withNote(f.d.repo.Summary(st, summaryCap), stepNote{Kind: stepHandEdit, Scope: scope}))
	if err != nil {
		return gitstore.Commit{}, fmt.Errorf("save the edits made during the Dream: %w", err)
	}
	f.d.log.Info("dream saved edits made while it worked, before its own", "commit", c.Short, "files", len(st.Files))
	return c, nil
}

// rebaseOnto rebuilds the step's changes on top of the commit onto, which
// holds edits made while the step was built.
func (f fileSteps) rebaseOnto(s step, onto string) ([]gitstore.Change, error) {
	out := slices.Clone(s.changes)
	for i, ch := range out {
		old, _, err := f.d.repo.FileAt(s.base, ch.Path)
		if err != nil {
			return nil, err
		}
		theirs, ok, err := f.d.repo.FileAt(onto, ch.Path)
		if err != nil {
			return nil, err
		}
		if !ok || ch.Remove {
			continue
		}
		out[i].Data = s.rebase(old, ch.Data, theirs)
	}
	return out, nil
}

// exclusive runs fn under the workspace's write lock (the chat tools' and
// a restore's), so that no chat edit falls between a step's compare, its
// commit and the writing of its files.
func (d *Dreamer) exclusive(fn func() error) error {
	ws, done, err := d.baseRoot()
	if err != nil {
		return err
	}
	defer done()
	return ws.Exclusive(fn)
}

func shortOf(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

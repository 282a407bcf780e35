package web

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway/dreamtext"
	"github.com/dreamgate/dreamgate/gitstore"
)

// The timeline is the memory repository's history as the viewer may see
// it: the commits that changed a file of a scope they read (Dreams, deep
// Dreams, hand edits, restores), newest first, a page at a time; each
// commit's diff cut to those files; and, for admins, the undo of a commit
// (a Dream's, a restore's, hand edits') after a page that names every file
// and line it changes and lets them choose where later changes touched
// the same lines.

// timelinePageSize is how many commits a timeline page lists.
const timelinePageSize = 30

// kindFilter is one choice of the timeline's "show" filter: a subject
// prefix.
type kindFilter struct{ Key, Prefix, Label string }

var kindFilters = []kindFilter{
	{"", "", "Everything"},
	{"dream", dream.SubjectPrefix, "Dreams"},
	{"deep", deepPrefix, "Deep Dreams"},
	{"manual", gitstore.ManualSubject, "Hand edits"},
	{"revert", gitstore.RevertPrefix, "Restores"},
}

// deepPrefix starts a deep Dream's subject ("dream: deep — …").
const deepPrefix = dream.SubjectPrefix + " deep"

// commitKind names what made a commit, from its subject.
func commitKind(subject string) string {
	switch {
	case strings.HasPrefix(subject, deepPrefix):
		return "deep Dream"
	case strings.HasPrefix(subject, dream.SubjectPrefix):
		return "Dream"
	case strings.HasPrefix(subject, gitstore.ManualSubject):
		return "hand edit"
	case strings.HasPrefix(subject, gitstore.RevertPrefix):
		return "restore"
	case strings.HasPrefix(subject, "init:"):
		return "setup"
	}
	return "change"
}

type timelineData struct {
	Rows   []timelineRow
	Kinds  []kindFilter
	Kind   string
	Scopes []scopeLink
	Scope  string
	// Older is the link to the next page ("" on the last); Newest to the
	// first (on a later page).
	Older, Newest string
	Off           string
}

func (s *Server) timeline(w http.ResponseWriter, r *http.Request, v *Viewer) {
	q := r.URL.Query()
	d := timelineData{Kinds: kindFilters, Kind: q.Get("kind"), Scope: q.Get("scope")}
	if s.deps.Repo == nil {
		d.Off = "The memory repository is not available; the gateway log says why."
		s.render(w, r, v, http.StatusOK, "Timeline", "timeline", timelinePage(s.clock(), d))
		return
	}
	i := slices.IndexFunc(kindFilters, func(k kindFilter) bool { return k.Key == d.Kind })
	if i < 0 {
		s.notFound(w, r, v, "There is no such kind of change.")
		return
	}
	prefix := kindFilters[i].Prefix
	keep := v.keep(s.deps.Memory)
	if d.Scope != "" {
		sc, ok := parseScopeName(d.Scope)
		if !ok || !v.mayRead(sc, s.deps.Memory) {
			s.notFound(w, r, v, "There is no such memory scope.")
			return
		}
		keep = onlyScope(sc)
	}
	if scopes, err := s.viewerScopes(v); err == nil && len(scopes) > 1 && len(scopes) <= scopesPageSize {
		for _, sc := range scopes {
			d.Scopes = append(d.Scopes, scopeLink{Name: scopeName(sc), Label: s.scopeLabel(nil, sc)})
		}
	}
	before := q.Get("before")
	if before != "" && !s.visible(before, v) {
		s.notFound(w, r, v, "There is no such page of the timeline.")
		return
	}
	cs, err := s.deps.Repo.LogBefore(before, timelinePageSize+1, prefix, keep)
	if err != nil {
		s.failed(w, r, v, "memory repository's history", err)
		return
	}
	if len(cs) > timelinePageSize {
		cs = cs[:timelinePageSize]
		d.Older = timelineURL(d.Kind, d.Scope, cs[len(cs)-1].SHA)
	}
	if before != "" {
		d.Newest = timelineURL(d.Kind, d.Scope, "")
	}
	nm := s.namer(r)
	defer nm.done()
	for _, c := range cs {
		row := timelineRow{Commit: c}
		// The diff as the viewer may see it: its scopes and its lines.
		if _, diff, err := s.deps.Repo.Show(c.SHA, keep); err == nil {
			row.changeOf = s.summarize(nm, diff)
		} else {
			s.log.Warn("web: a timeline commit's diff", "commit", c.Short, "err", err)
		}
		d.Rows = append(d.Rows, row)
	}
	s.render(w, r, v, http.StatusOK, "Timeline", "timeline", timelinePage(s.clock(), d))
}

// timelineRow is one commit of the timeline with what it changed.
type timelineRow struct {
	gitstore.Commit
	changeOf
}

func timelineURL(kind, scope, before string) string {
	var q []string
	if kind != "" {
		q = append(q, "kind="+kind)
	}
	if scope != "" {
		q = append(q, "scope="+scope)
	}
	if before != "" {
		q = append(q, "before="+before)
	}
	if len(q) == 0 {
		return "/timeline"
	}
	return "/timeline?" + strings.Join(q, "&")
}

func onlyScope(sc audience.Scope) func(string) bool {
	return func(p string) bool {
		got, ok := audience.ScopeOfPath(p)
		return ok && got == sc
	}
}

// fullSHA reports whether s is a whole commit id as the pages link them:
// a prefix could be ambiguous, and which commits it matches is not for
// every viewer to learn.
func fullSHA(s string) bool {
	return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == ""
}

// visible reports whether sha names a commit the viewer may see.
func (s *Server) visible(sha string, v *Viewer) bool {
	if !fullSHA(sha) {
		return false
	}
	_, ok := s.visibleCommit(sha, v)
	return ok
}

type commitData struct {
	Commit gitstore.Commit
	Kind   string
	// Body is the commit message's body, for the operator alone: it was
	// written for every file of the commit.
	Body  string
	Files []gitstore.FileChange
	Diff  []diffLine
	// CanRestore: an admin may undo this Dream commit.
	CanRestore bool
	// Restored says this commit was just made by a restore from this page.
	Restored bool
}

type diffLine struct{ Class, Text string }

// maxDiffLines bounds the diff a commit page shows (a deep Dream moves
// many lines); the rest is counted.
const maxDiffLines = 3000

func (s *Server) commit(w http.ResponseWriter, r *http.Request, v *Viewer) {
	sha := r.PathValue("sha")
	if s.deps.Repo == nil {
		s.notFound(w, r, v, "There is no such commit.")
		return
	}
	if !fullSHA(sha) {
		s.openShort(w, r, v, sha)
		return
	}
	keep := v.keep(s.deps.Memory)
	c, diff, err := s.deps.Repo.Show(sha, keep)
	switch {
	case isUnknown(err), err == nil && keep != nil && diff.Empty():
		s.notFound(w, r, v, "There is no such commit.")
		return
	case err != nil:
		s.failed(w, r, v, "commit", err)
		return
	}
	d := commitData{Commit: c, Kind: commitKind(c.Subject), Files: diff.Files, Diff: diffLines(diff.Unified),
		Restored: r.URL.Query().Get("restored") == "1"}
	if v.Operator {
		d.Body = withoutDiff(c.Body)
	}
	d.CanRestore = v.Admin && s.deps.Dream != nil && dream.Undoable(c.Subject) && !diff.Empty()
	s.render(w, r, v, http.StatusOK, c.Subject, "timeline", commitPage(s.clock(), d))
}

// openShort opens a commit by a short id, as git takes one: a prefix of
// at least 4 hex digits naming one commit. Only the commits the viewer may
// see count, so a prefix tells nobody of another's commits: one of them
// is the page it redirects to, several are listed to choose from, none is
// not found.
func (s *Server) openShort(w http.ResponseWriter, r *http.Request, v *Viewer, prefix string) {
	prefix = strings.ToLower(prefix)
	if len(prefix) < 4 || len(prefix) > 40 || strings.Trim(prefix, "0123456789abcdef") != "" {
		s.notFound(w, r, v, "There is no such commit: a commit id is 4 to 40 hex digits.")
		return
	}
	var candidates []string
	c, _, err := s.deps.Repo.Show(prefix, nil)
	var many *gitstore.AmbiguousRevisionError
	switch {
	case err == nil:
		candidates = []string{c.SHA}
	case errors.As(err, &many):
		candidates = many.Candidates
	case isUnknown(err):
	default:
		s.failed(w, r, v, "commit", err)
		return
	}
	var shown []gitstore.Commit
	for _, sha := range candidates {
		if c, ok := s.visibleCommit(sha, v); ok {
			shown = append(shown, c)
		}
	}
	switch len(shown) {
	case 0:
		s.notFound(w, r, v, "There is no such commit.")
	case 1:
		http.Redirect(w, r, "/commit/"+shown[0].SHA, http.StatusSeeOther)
	default:
		s.render(w, r, v, http.StatusMultipleChoices, "Which commit?", "timeline", ambiguousPage(s.clock(), prefix, shown))
	}
}

// visibleCommit is the commit sha (a full id) when the viewer may see it.
func (s *Server) visibleCommit(sha string, v *Viewer) (gitstore.Commit, bool) {
	keep := v.keep(s.deps.Memory)
	c, d, err := s.deps.Repo.Show(sha, keep)
	return c, err == nil && (keep == nil || !d.Empty())
}

// openCommit is the timeline's "open commit" form: the id typed, as a
// commit page's address.
func (s *Server) openCommit(w http.ResponseWriter, r *http.Request, v *Viewer) {
	sha := strings.TrimSpace(r.URL.Query().Get("sha"))
	if sha == "" || strings.Trim(strings.ToLower(sha), "0123456789abcdef") != "" || len(sha) > 40 {
		s.notFound(w, r, v, "There is no such commit: a commit id is 4 to 40 hex digits.")
		return
	}
	http.Redirect(w, r, "/commit/"+strings.ToLower(sha), http.StatusSeeOther)
}

// withoutDiff is a commit body without the fenced diff block Dream's
// and hand edits' bodies carry (gitstore's Summary): the page shows that
// diff already, coloured and cut to the viewer's files. The fence is a run
// of three or more backticks, longer than any in the diff.
func withoutDiff(body string) string {
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		fence, ok := strings.CutSuffix(l, "diff")
		if !ok || len(fence) < 3 || strings.Trim(fence, "`") != "" {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == fence {
				kept := append(lines[:i:i], lines[j+1:]...)
				return strings.TrimSpace(strings.Join(kept, "\n"))
			}
		}
	}
	return body
}

func isUnknown(err error) bool {
	return errors.Is(err, gitstore.ErrUnknownRevision) || errors.Is(err, gitstore.ErrInvalidRevision) ||
		errors.Is(err, gitstore.ErrAmbiguousRevision)
}

// diffLines classes each line of a unified diff for its colour.
func diffLines(unified string) []diffLine {
	var out []diffLine
	n := 0
	for line := range strings.Lines(unified) {
		line = strings.TrimRight(line, "\n")
		if n == maxDiffLines {
			out = append(out, diffLine{"more", "… (the rest of the diff is not shown)"})
			break
		}
		n++
		class := "ctx"
		switch {
		case strings.HasPrefix(line, "diff --git"), strings.HasPrefix(line, "index "),
			strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "),
			strings.HasPrefix(line, "new file"), strings.HasPrefix(line, "deleted file"):
			class = "file"
		case strings.HasPrefix(line, "@@"):
			class = "hunk"
		case strings.HasPrefix(line, "+"):
			class = "add"
		case strings.HasPrefix(line, "-"):
			class = "del"
		}
		out = append(out, diffLine{class, line})
	}
	return out
}

type restoreData struct {
	Plan   dream.RestorePlan
	Expect string
	// Changed says the plan differs from the one the viewer confirmed.
	Changed bool
}

// restoreConfirm shows what a restore would do, for an admin to confirm.
func (s *Server) restoreConfirm(w http.ResponseWriter, r *http.Request, v *Viewer) {
	plan, ok := s.plan(w, r, v)
	if !ok {
		return
	}
	s.render(w, r, v, http.StatusOK, "Undo "+plan.Target.Short+"?", "timeline",
		restorePage(s.clock(), s.csrfToken(v), restoreData{Plan: plan, Expect: planDigest(plan)}))
}

// restore undoes a commit's change once an admin confirmed the plan the
// confirmation page showed, with the choice made there where later changes
// touched the same lines ("keep" the later lines, or undo "all"); when the
// plan changed since (a Dream or another restore in between), the new one
// is shown to confirm instead.
func (s *Server) restore(w http.ResponseWriter, r *http.Request, v *Viewer) {
	plan, ok := s.plan(w, r, v)
	if !ok {
		return
	}
	if planDigest(plan) != r.PostFormValue("expect") {
		s.render(w, r, v, http.StatusConflict, "Undo "+plan.Target.Short+"?", "timeline",
			restorePage(s.clock(), s.csrfToken(v), restoreData{Plan: plan, Expect: planDigest(plan), Changed: true}))
		return
	}
	opts := dream.RestoreOptions{Origin: "Asked for on the memory page by " + v.who() + "."}
	if r.PostFormValue("resolution") == "all" {
		opts.Resolution = gitstore.UndoAll
	}
	res, err := s.deps.Dream.Restore(plan.Target.SHA, v.dreamScopes(s.deps.Memory), opts)
	if err != nil {
		s.restoreFailed(w, r, v, err)
		return
	}
	s.log.Info("web: restored", "target", res.Target.Short, "commit", res.Revert.Short, "files", len(res.Files),
		"conflicts", res.Plan.Conflicts(), "by", v.who())
	http.Redirect(w, r, "/commit/"+res.Revert.SHA+"?restored=1", http.StatusSeeOther)
}

// plan finds what restoring the commit in the URL would do, answering
// the request itself when it cannot be done.
func (s *Server) plan(w http.ResponseWriter, r *http.Request, v *Viewer) (dream.RestorePlan, bool) {
	if !v.Admin {
		s.render(w, r, v, http.StatusForbidden, "Not allowed", "timeline", messagePage(message{Title: "Not allowed",
			Text: "Undoing a Dream is for admins. Whoever runs this gateway can make you one by adding you to \"admins\" in its config."}))
		return dream.RestorePlan{}, false
	}
	sha := r.PathValue("sha")
	if s.deps.Dream == nil || !fullSHA(sha) {
		s.notFound(w, r, v, "There is no such commit.")
		return dream.RestorePlan{}, false
	}
	plan, err := s.deps.Dream.PlanRestore(sha, v.dreamScopes(s.deps.Memory))
	if err != nil {
		s.restoreFailed(w, r, v, err)
		return dream.RestorePlan{}, false
	}
	return plan, true
}

// restoreFailed says why a restore cannot be planned or made.
func (s *Server) restoreFailed(w http.ResponseWriter, r *http.Request, v *Viewer, err error) {
	back := "/commit/" + r.PathValue("sha")
	say := func(status int, text string) {
		s.render(w, r, v, status, "Not restored", "timeline", messagePage(message{Title: "Not restored", Text: text, Link: back, LinkText: "Back to the commit"}))
	}
	var busy *dream.BusyError
	var link *gitstore.LinkNotRestoredError
	switch {
	case isUnknown(err), errors.Is(err, dream.ErrNotInScopes):
		s.notFound(w, r, v, "There is no such commit.")
	case errors.As(err, &busy):
		say(http.StatusConflict, dreamtext.Busy(err, s.now()))
	case errors.Is(err, dream.ErrNotDreamCommit):
		say(http.StatusBadRequest, "Only a Dream's changes, a restore and hand edits can be undone here.")
	case errors.As(err, &link):
		was := " was a symbolic link"
		if len(link.Paths) > 1 {
			was = " were symbolic links"
		}
		say(http.StatusConflict, "Undoing this commit changes nothing: before it, "+strings.Join(link.Paths, ", ")+was+
			", and a restore never brings a link back.")
	case errors.Is(err, gitstore.ErrNothingToCommit):
		say(http.StatusConflict, "Undoing this commit changes nothing now: its change is undone already, or every line of it was changed since.")
	case errors.Is(err, gitstore.ErrRootCommit), errors.Is(err, gitstore.ErrNotInHistory):
		say(http.StatusBadRequest, "This commit has no earlier state in the current history to go back to.")
	default:
		s.log.Error("web: restore", "path", r.URL.Path, "err", err)
		say(http.StatusInternalServerError, "The restore failed; the reason is in the gateway log.")
	}
}

// undoLines are the lines an undo takes out ("-") and puts back ("+") in
// one file, as the confirmation shows them.
func undoLines(f gitstore.FileUndo) []diffLine {
	out := make([]diffLine, 0, len(f.Removed)+len(f.Restored))
	for _, l := range f.Removed {
		out = append(out, diffLine{"del", "-" + l})
	}
	for _, l := range f.Restored {
		out = append(out, diffLine{"add", "+" + l})
	}
	return out
}

// sideLines are one side of a conflict as shown: its lines, or that there
// is none.
func sideLines(lines []string) []string {
	if len(lines) == 0 {
		return []string{"(no line)"}
	}
	return lines
}

// planDigest names a plan in the confirmation form, so that the restore
// made is the one confirmed.
func planDigest(p dream.RestorePlan) string {
	h := sha256.New()
	h.Write([]byte(p.Target.SHA + "\n"))
	for _, f := range p.Files {
		fmt.Fprintf(h, "f %s %d %q %q\n", f.Path, len(f.Conflicts), f.Removed, f.Restored)
		for _, c := range f.Conflicts {
			fmt.Fprintf(h, "c %q %q\n", c.Now, c.Before)
		}
	}
	if p.Uncommitted {
		h.Write([]byte("hand edits\n"))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
)

// fileCommit is a commit of the fake repository: the files it changed, with
// the text each diff holds.
type fileCommit struct {
	c     gitstore.Commit
	files map[string]string
}

// scopedLog is a memory log that cuts to keep as MemoryLog's contract
// says, over commits given newest first.
type scopedLog struct{ commits []fileCommit }

func (l scopedLog) cut(fc fileCommit, keep func(string) bool) gitstore.Diff {
	var d gitstore.Diff
	for p, text := range fc.files {
		if keep == nil || keep(p) {
			d.Files = append(d.Files, gitstore.FileChange{Path: p, Added: 1})
			d.Unified += "diff --git a/" + p + " b/" + p + "\n+" + text + "\n"
		}
	}
	return d
}

func (l scopedLog) Latest(_ string, keep func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	for _, fc := range l.commits {
		if d := l.cut(fc, keep); !d.Empty() {
			return fc.c, d, nil
		}
	}
	return gitstore.Commit{}, gitstore.Diff{}, gitstore.ErrNoMatchingCommit
}

func (l scopedLog) Show(rev string, keep func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	for _, fc := range l.commits {
		if strings.HasPrefix(fc.c.SHA, rev) {
			return fc.c, l.cut(fc, keep), nil
		}
	}
	return gitstore.Commit{}, gitstore.Diff{}, gitstore.ErrUnknownRevision
}

func (l scopedLog) LogPrefixes(n int, _ []string, keep func(string) bool) ([]gitstore.Commit, error) {
	var out []gitstore.Commit
	for _, fc := range l.commits {
		if d := l.cut(fc, keep); !d.Empty() && len(out) < n {
			out = append(out, fc.c)
		}
	}
	return out, nil
}

func (l scopedLog) UndoneBy(string, func(string) bool) (gitstore.Commit, bool, error) {
	return gitstore.Commit{}, false, nil
}

// scopedDreamer restores as dream.Dreamer does, over a scopedLog: only the
// chosen scopes' files of a commit that changed one of them.
type scopedDreamer struct {
	archiveDreamer
	log scopedLog
}

func (d *scopedDreamer) PlanRestore(rev string, scopes dream.Scopes) (dream.RestorePlan, error) {
	res, err := d.Restore(rev, scopes, dream.RestoreOptions{})
	return dream.RestorePlan{RestorePlan: res.Plan}, err
}

func (d *scopedDreamer) Restore(rev string, scopes dream.Scopes, _ dream.RestoreOptions) (dream.RestoreResult, error) {
	keep := func(p string) bool {
		s, ok := audience.ScopeOfPath(p)
		return ok && scopes.Has(s)
	}
	c, diff, err := d.log.Show(rev, keep)
	if err != nil {
		return dream.RestoreResult{}, err
	}
	if diff.Empty() {
		return dream.RestoreResult{}, gitstore.ErrUnknownRevision
	}
	res := dream.RestoreResult{Target: c, Revert: gitstore.Commit{SHA: strings.Repeat("9", 40), Short: "99999999"}}
	for _, f := range diff.Files {
		res.Files = append(res.Files, f.Path)
		res.Plan.Files = append(res.Plan.Files, gitstore.FileUndo{Path: f.Path, Removed: []string{"- a line"}})
	}
	return res, nil
}

func commitOf(i int, files map[string]string) fileCommit {
	sha := fmt.Sprintf("%02d%s", i, strings.Repeat("ab", 19))
	return fileCommit{c: gitstore.Commit{SHA: sha, Short: sha[:8], Subject: fmt.Sprintf("dream: %d changes from history %d-%d", len(files), i, i)}, files: files}
}

// /dream-log and /dream-restore show an audience only the commits, and the
// parts of their diffs, of the scopes it may read: Bob in a public channel
// never reads Ana's DM or a private channel, whatever sha he types; the
// operator reads everything; a restore touches only the readable scopes'
// files, and another scope's commit is unknown to it.
func TestDreamLogShowsOnlyReadableScopes(t *testing.T) {
	anaC := commitOf(4, map[string]string{"scopes/" + string(anaDM.Home()) + "/USER.md": "- salary band K7Q2Z9"})
	privC := commitOf(3, map[string]string{"scopes/" + string(slackPrivate.Home()) + "/memory/MEMORY.md": "- code VORTEXPLUM"})
	mixed := commitOf(2, map[string]string{
		"scopes/" + string(slackTeam.Home()) + "/memory/MEMORY.md": "- TEAMFACT ships Fridays",
		"scopes/" + string(anaDM.Home()) + "/USER.md":              "- Ana SECRETPART",
	})
	rootC := commitOf(1, map[string]string{"USER.md": "- operator ROOTPIN"})
	log := scopedLog{commits: []fileCommit{anaC, privC, mixed, rootC}}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, func(_ *Config, d *Deps) {
		d.MemoryLog, d.Dream = log, &scopedDreamer{archiveDreamer: archiveDreamer{fc: &fakeConsolidator{done: make(chan string, 4)}}, log: log}
	})
	env.g.admins["test:UBOB"] = true // an admin still reads only what his audience may
	ask := func(a audience.Audience, text string) string {
		t.Helper()
		in := withAudience(inbound("cmd-"+string(a.Kind), text), a)
		in.SenderID = "UBOB"
		wait(t, mustSubmit(t, env, in))
		return env.ch.reply(t)
	}
	secrets := []string{"K7Q2Z9", "VORTEXPLUM", "SECRETPART", "ROOTPIN"}
	for _, a := range []audience.Audience{slackTeam, bobDM} {
		for _, text := range []string{"/dream-log", "/dream-restore"} { // the sha typed is echoed; no other is named
			got := ask(a, text)
			for _, sha := range []string{anaC.c.Short, privC.c.Short, rootC.c.Short} {
				if strings.Contains(got, sha) {
					t.Errorf("%v: %s names the commit %s:\n%s", a, text, sha, got)
				}
			}
		}
	}
	for _, text := range []string{"/dream-log", "/dream-restore", "/dream-log " + anaC.c.Short, "/dream-log " + privC.c.Short,
		"/dream-log " + rootC.c.Short, "/dream-restore " + anaC.c.Short, "/dream-restore " + mixed.c.Short} {
		for _, a := range []audience.Audience{slackTeam, bobDM} {
			got := ask(a, text)
			for _, s := range secrets {
				if strings.Contains(got, s) {
					t.Errorf("%v: %s shows %q:\n%s", a, text, s, got)
				}
			}
		}
	}
	if got := ask(slackTeam, "/dream-log"); !strings.Contains(got, "TEAMFACT") || !strings.Contains(got, mixed.c.Short) {
		t.Errorf("the team's /dream-log does not show the team's part of the latest commit it may read:\n%s", got)
	}
	if got := ask(slackTeam, "/dream-restore "+mixed.c.Short); !strings.HasPrefix(got, "Undid") || !strings.Contains(got, "MEMORY.md") || strings.Contains(got, "USER.md") {
		t.Errorf("a restore of the mixed commit from the team's channel = %q, want the team's MEMORY.md alone", got)
	}
	if got := ask(slackTeam, "/dream-restore "+anaC.c.Short); !strings.HasPrefix(got, "No memory change") {
		t.Errorf("a restore of Ana's commit from the team's channel = %q", got)
	}
	op := ask(operator, "/dream-log")
	if !strings.Contains(op, "K7Q2Z9") {
		t.Errorf("the operator's /dream-log does not show the latest commit:\n%s", op)
	}
	if got := ask(operator, "/dream-restore"); !strings.Contains(got, rootC.c.Short) || !strings.Contains(got, anaC.c.Short) {
		t.Errorf("the operator's list is not every commit:\n%s", got)
	}
}

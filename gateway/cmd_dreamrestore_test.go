package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
)

// choosingDreamer plans and restores one commit whose line a later change
// touched, recording the resolutions it was asked for.
type choosingDreamer struct {
	archiveDreamer
	mu    sync.Mutex
	asked []gitstore.Resolution
}

func (d *choosingDreamer) plan() gitstore.RestorePlan {
	text := func(s string) gitstore.FileText { return gitstore.FileText{Data: []byte(s), Exists: true} }
	_, f := gitstore.UndoLines(text("- office Harbour\n- tea\n"), text("- office Canal Road\n- tea\n- cats\n"), text("- office Dock\n- tea\n- cats\n"), gitstore.KeepLater)
	f.Path = "USER.md"
	return gitstore.RestorePlan{Target: gitstore.Commit{SHA: strings.Repeat("1a2b", 10), Short: "1a2b3c4d", Subject: "dream: A"},
		Files: []gitstore.FileUndo{f}}
}

func (d *choosingDreamer) PlanRestore(rev string, _ dream.Scopes) (dream.RestorePlan, error) {
	if !strings.HasPrefix("1a2b3c4d", rev) {
		return dream.RestorePlan{}, gitstore.ErrUnknownRevision
	}
	return dream.RestorePlan{RestorePlan: d.plan()}, nil
}

func (d *choosingDreamer) Restore(rev string, s dream.Scopes, opts dream.RestoreOptions) (dream.RestoreResult, error) {
	if _, err := d.PlanRestore(rev, s); err != nil {
		return dream.RestoreResult{}, err
	}
	d.mu.Lock()
	d.asked = append(d.asked, opts.Resolution)
	d.mu.Unlock()
	p := d.plan()
	p.Resolution = opts.Resolution
	return dream.RestoreResult{Target: p.Target, Revert: gitstore.Commit{Short: "99990000"}, Plan: p}, nil
}

// /dream-restore <sha> of a commit whose lines a later change touched
// changes nothing and shows the choice; "keep" and "all" then restore with
// that resolution; anything else after the sha is one sentence.
func TestDreamRestoreAsksWhereLaterChangesTouchedTheLines(t *testing.T) {
	d := &choosingDreamer{archiveDreamer: archiveDreamer{fc: &fakeConsolidator{done: make(chan string, 4)}}}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, func(_ *Config, deps *Deps) {
		deps.MemoryLog, deps.Dream = noCommits{}, d
	})
	env.g.admins["test:U1"] = true
	ask := func(text string) string {
		t.Helper()
		wait(t, mustSubmit(t, env, inbound("restore", text)))
		return env.ch.reply(t)
	}
	got := ask("/dream-restore 1a2b")
	for _, want := range []string{"needs your choice", "Nothing has been changed yet", "now:    - office Dock", "before: - office Harbour",
		"/dream-restore 1a2b3c4d keep", "/dream-restore 1a2b3c4d all", "-- cats"} {
		if !strings.Contains(got, want) {
			t.Errorf("/dream-restore 1a2b lacks %q:\n%s", want, got)
		}
	}
	if len(d.asked) != 0 {
		t.Fatalf("restored before the choice: %v", d.asked)
	}
	if got := ask("/dream-restore 1a2b keep"); !strings.Contains(got, "the later lines were kept") {
		t.Errorf("keep: %s", got)
	}
	if got := ask("/dream-restore 1a2b all"); !strings.Contains(got, "those were undone too") || !strings.Contains(got, "+- office Harbour") {
		t.Errorf("all: %s", got)
	}
	if got := ask("/dream-restore 1a2b please"); !strings.HasPrefix(got, "Use /dream-restore <sha>") {
		t.Errorf("a third word: %s", got)
	}
	if want := []gitstore.Resolution{gitstore.KeepLater, gitstore.UndoAll}; len(d.asked) != 2 || d.asked[0] != want[0] || d.asked[1] != want[1] {
		t.Errorf("resolutions asked = %v, want %v", d.asked, want)
	}
}

package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/recall"
	"github.com/dreamgate/dreamgate/workspace"
)

// The recall index reads the real session files through cmd's adapter
// while the gateway holds them: archived messages only, under their
// audience's scope (the default scope when memory is shared), set-aside
// conversations too, beside the archive and cold memory.
func TestRecallReadsTheSessionFiles(t *testing.T) {
	for _, shared := range []bool{false, true} {
		ws, state := t.TempDir(), t.TempDir()
		hist, sessions, dm := recallFixture(t, ws, state)

		cfg := Config{Workspace: ws, StateDir: state, Memory: MemoryConfig{Scoped: !shared}}
		a := &app{cfg: cfg, mem: memoryOf(cfg), logger: slog.New(slog.DiscardHandler), history: hist, sessions: sessions}
		idx := a.recallIndex()
		defer idx.Close()
		if _, err := idx.Update(context.Background()); err != nil {
			t.Fatal(err)
		}
		msgScope := dm.Home()
		if shared {
			msgScope = audience.Default
		}
		res, err := idx.Search(context.Background(), "k7q2z9", dm.Readable(), 10)
		if err != nil {
			t.Fatal(err)
		}
		res2, err := idx.Search(context.Background(), "k7q2z9", []audience.Scope{audience.Default}, 10)
		if err != nil {
			t.Fatal(err)
		}
		all := append(res.Matches, res2.Matches...)
		var msgs, others int
		for _, m := range all {
			switch {
			case m.Kind == recall.KindMessage && m.Scope == msgScope:
				msgs++
			case m.Kind != recall.KindMessage && m.Scope == dm.Home():
				others++
			default:
				t.Errorf("shared=%v: unexpected match %+v", shared, m)
			}
		}
		// Shared, no prompt reads a scope folder, nor does recall its
		// cold memory: the entry alone.
		wantOthers := 2
		if shared {
			wantOthers = 1
		}
		if msgs != 3 || others != wantOthers {
			t.Errorf("shared=%v: %d messages (want the 3 archived), %d entries and lines (want %d): %+v", shared, msgs, others, wantOthers, all)
		}
		if fi, err := os.Stat(recallDir(state)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("recall dir: %v %v", fi, err)
		}
		for _, m := range all {
			if m.Kind == recall.KindMessage && m.Index == 0 && m.Who != "Ana" {
				t.Errorf("the sender's name is not kept: %+v", m)
			}
		}
	}
}

// recallModel is MemoryModel, except that a chat message "recall <words>"
// calls the recall tool with them and its result is the answer.
func recallModel(r llmtest.Request) llmtest.Reply {
	if len(r.Tools) > 0 && len(r.Messages) > 0 {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == llm.RoleTool {
			return llmtest.Text("RESULT " + last.Content)
		}
		if q, ok := strings.CutPrefix(llmtest.Spoken(last.Content), "recall "); ok && slices.Contains(r.Tools, recall.ToolName) {
			return llmtest.ToolCall(recall.ToolName, `{"query":"`+q+`"}`)
		}
	}
	return llmtest.MemoryModel(r)
}

// Through the built binary: a one-shot chat opens no recall index; what a
// conversation archived (at /new) is found by the recall tool of a later
// conversation of the same audience, with when and where it was said.
func TestRecallThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(recallModel)
	if r := h.run("chat", "-m", "hi"); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	dir := recallDir(h.state)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a one-shot chat that did not recall made %s: %v", dir, err)
	}
	cmd := exec.Command(binPath, "--config", h.cfgPath, "chat", "--session", "vault")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdin = strings.NewReader("The vault code word is heron lantern.\n/new\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	r := h.run("chat", "--session", "later", "-m", "recall heron lantern")
	if r.code != 0 {
		t.Fatalf("recall chat: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"RESULT", "heron lantern", "archive entry", "in conversation terminal:vault (message 0)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the recall answer lacks %q:\n%s", want, r.stdout)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("recall dir after a search: %v %v", fi, err)
	}
}

// recallFixture is Ana's DM in the session files of state (two archived
// messages, a third set aside by /new and archived, one live), its archive
// entry and a line of cold memory in the workspace ws, each naming K7Q2Z9.
func recallFixture(t *testing.T, ws, state string) (*history.Store, *session.Store, audience.Audience) {
	t.Helper()
	hist, err := history.Open(filepath.Join(ws, workspace.MemoryDir), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := session.NewStore(filepath.Join(state, "sessions"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sessions.Close() })
	dm := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	s, err := sessions.Get("slack:DANA")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAudience(dm); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "my band is K7Q2Z9"}, session.Origin{Channel: "slack", SenderName: "Ana", Audience: dm}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: "Noted K7Q2Z9."}, llm.Message{Role: llm.RoleUser, Content: "live K7Q2Z9"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(2, ""); err != nil {
		t.Fatal(err)
	}
	old, _, err := sessions.Rotate("slack:DANA") // /new: the third message is set aside, then archived
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetLastConsolidated(3, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := hist.AppendIn(dm.Home(), "- Ana's band is K7Q2Z9", "slack:DANA"); err != nil {
		t.Fatal(err)
	}
	cold := filepath.Join(ws, dm.Home().Dir(), workspace.Cold)
	if err := os.MkdirAll(filepath.Dir(cold), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cold, []byte("- (2025-01-01) K7Q2Z9 was her first band\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return hist, sessions, dm
}

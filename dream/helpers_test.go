package dream

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// testHistory is the real history store of a test workspace, with the
// helpers the tests use to set it up and look at it.
type testHistory struct {
	*history.Store
	dir string // <workspace>/memory
}

func newTestHistory(t testing.TB, ws string) *testHistory {
	t.Helper()
	dir := filepath.Join(ws, "memory")
	s, err := history.Open(dir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &testHistory{Store: s, dir: dir}
}

func (h *testHistory) path() string { return h.Store.Path() }

// seed writes n entries with cursors from+1 .. from+n straight into the
// file, as another process appending would, with fixed timestamps.
func (h *testHistory) seed(t testing.TB, from, n int, content func(i int) string) {
	t.Helper()
	f, err := os.OpenFile(h.path(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := from + 1; i <= from+n; i++ {
		e := history.Entry{Cursor: i, Timestamp: fmt.Sprintf("2026-04-03 %02d:%02d", i/60%24, i%60), Content: content(i), SessionKey: "slack:C1:1712.55"}
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func (h *testHistory) cursor(t testing.TB) int {
	t.Helper()
	n, err := h.DreamCursor()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *testHistory) all(t testing.TB) []history.Entry {
	t.Helper()
	es, err := h.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// Initial memory files of a test workspace.
const (
	initSoul   = "# Soul\n\n- Answer briefly.\n"
	initUser   = "# User\n\n- Name: Ana.\n"
	initMemory = "# Memory\n\n- Project: dreamgate.\n"
)

// env is one test workspace with a real memory repository, a real history
// file, and the real llm client pointed at llmtest.
type env struct {
	t    testing.TB
	ws   string
	repo *gitstore.Store
	hist *testHistory
	srv  *llmtest.Server
	llm  *llm.Client
	logs *testkit.LogRecorder
	// now, when set, is the Dreamers' clock (else the real one).
	now func() time.Time
	// hot is the HotTokens of the Dreamers killedAt makes.
	hot int
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ws := t.TempDir()
	testkit.WriteFile(t, ws, "SOUL.md", initSoul)
	testkit.WriteFile(t, ws, "USER.md", initUser)
	testkit.WriteFile(t, ws, "memory/MEMORY.md", initMemory)
	testkit.WriteFile(t, ws, "AGENTS.md", "# Agents\n")
	repo, err := gitstore.Open(ws, gitstore.Options{Tracked: workspace.MemoryFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir})
	if err != nil {
		t.Fatalf("open memory repository: %v", err)
	}
	srv := llmtest.New(t)
	client := llm.New(llm.Config{
		BaseURL:   srv.URL(),
		Model:     "test-model",
		MaxTries:  1,
		BaseDelay: time.Millisecond,
		Timeout:   10 * time.Second,
	})
	return &env{t: t, ws: ws, repo: repo, hist: newTestHistory(t, ws), srv: srv, llm: client, logs: &testkit.LogRecorder{}}
}

func (e *env) dreamer(cfg Config) *Dreamer {
	e.t.Helper()
	cfg.Workspace = e.ws
	d, err := New(cfg, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs), Now: e.now})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// record is the ledger's record as on disk.
func (e *env) record() record {
	e.t.Helper()
	var r record
	if _, err := readJSON(filepath.Join(e.ws, "memory", ".dream_ledger"), "dream ledger", &r); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// writeRecord puts r on disk as the ledger's record.
func (e *env) writeRecord(r record) {
	e.t.Helper()
	r.Version = ledgerVersion
	if err := writeJSON(filepath.Join(e.ws, "memory", ".dream_ledger"), "dream ledger", r); err != nil {
		e.t.Fatal(err)
	}
}

// progress is the default scope's progress as the ledger reads it.
func (e *env) progress() progress {
	e.t.Helper()
	p, err := NewLedger(e.ws, e.hist, nil).progressOf(DefaultScope)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) read(rel string) string {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, filepath.FromSlash(rel)))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *env) log(n int) []gitstore.Commit {
	e.t.Helper()
	cs, err := e.repo.Log(n, "", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return cs
}

// checkWire asserts that every request the fake received was valid,
// including exactly one tool result per tool call (providers refuse a
// second result for one call with a 400).
func (e *env) checkWire() {
	e.t.Helper()
	for i, r := range e.srv.Requests() {
		if r.Problem != "" {
			e.t.Errorf("request %d refused by the fake: %s", i, r.Problem)
		}
		if err := r.CheckToolPairs(); err != nil {
			e.t.Errorf("request %d: %v", i, err)
		}
	}
}

// editCall is an edit_file tool call.
func editCall(path, oldText, newText string) llm.ToolCall {
	args, _ := json.Marshal(map[string]string{"path": path, "old_text": oldText, "new_text": newText})
	return llm.ToolCall{Name: "edit_file", Arguments: string(args)}
}

func calls(cs ...llm.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: cs} }

// factCount is the number of the text's memory lines that state fact,
// whatever their metadata comment.
func factCount(text, fact string) int {
	n := 0
	for _, it := range memline.ParseFile([]byte(text)).Items {
		if it.Fact && memline.Key(it.Line.Text) == memline.Key(fact) {
			n++
		}
	}
	return n
}

// plain is text with every memory line's metadata comment taken off.
func plain(text string) string {
	f := memline.ParseFile([]byte(text))
	for i, it := range f.Items {
		if it.Fact && it.Line.HasMeta() {
			l := it.Line
			l.Priority, l.Date, l.Sources = "", "", nil
			f.Items[i].SetLine(l)
		}
	}
	return string(f.Bytes())
}

// readOptional reads a workspace file, "" when it does not exist.
func readOptional(ws, rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
	if os.IsNotExist(err) {
		return "", nil
	}
	return string(b), err
}

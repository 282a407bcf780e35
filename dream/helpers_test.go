package dream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// fileHistory is a small History over the real on-disk format
// (memory/history.jsonl, memory/.dream_cursor as a bare integer). The tests
// may not import consolidator (DESIGN §1), so they carry their own.
type fileHistory struct {
	dir string // <workspace>/memory
	now func() time.Time

	mu sync.Mutex
}

type historyLine struct {
	Cursor     int    `json:"cursor"`
	Timestamp  string `json:"timestamp"`
	Content    string `json:"content"`
	SessionKey string `json:"session_key,omitempty"`
}

func newFileHistory(t testing.TB, workspace string) *fileHistory {
	t.Helper()
	dir := filepath.Join(workspace, "memory")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &fileHistory{dir: dir, now: time.Now}
}

func (h *fileHistory) path() string       { return filepath.Join(h.dir, "history.jsonl") }
func (h *fileHistory) cursorPath() string { return filepath.Join(h.dir, ".dream_cursor") }

func (h *fileHistory) readAll() ([]Entry, error) {
	f, err := os.Open(h.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l historyLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		out = append(out, Entry{Cursor: l.Cursor, Timestamp: l.Timestamp, Content: l.Content, SessionKey: l.SessionKey})
	}
	return out, sc.Err()
}

func (h *fileHistory) Since(cursor, limit int) ([]Entry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	all, err := h.readAll()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range all {
		if e.Cursor > cursor {
			out = append(out, e)
			if limit > 0 && len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

func (h *fileHistory) DreamCursor() (int, error) {
	b, err := os.ReadFile(h.cursorPath())
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func (h *fileHistory) SetDreamCursor(n int) error {
	return writeAtomic(h.cursorPath(), []byte(strconv.Itoa(n)), 0o644)
}

func (h *fileHistory) Append(content, sessionKey string) (Entry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	all, err := h.readAll()
	if err != nil {
		return Entry{}, err
	}
	next := 1
	if len(all) > 0 {
		next = all[len(all)-1].Cursor + 1
	}
	e := Entry{Cursor: next, Timestamp: h.now().Format("2006-01-02 15:04"), Content: content, SessionKey: sessionKey}
	f, err := os.OpenFile(h.path(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return Entry{}, err
	}
	if err := writeLine(f, e); err != nil {
		f.Close()
		return Entry{}, err
	}
	return e, f.Close()
}

func writeLine(w interface{ Write([]byte) (int, error) }, e Entry) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(historyLine{Cursor: e.Cursor, Timestamp: e.Timestamp, Content: e.Content, SessionKey: e.SessionKey}); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Compact keeps the newest maxEntries entries, but never drops one above
// the Dream cursor (nanobot's rule after #4055).
func (h *fileHistory) Compact(maxEntries int) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	all, err := h.readAll()
	if err != nil || len(all) <= maxEntries {
		return 0, err
	}
	cur, err := h.DreamCursor()
	if err != nil {
		return 0, err
	}
	keepFrom := len(all) - maxEntries
	for i, e := range all {
		if e.Cursor > cur {
			keepFrom = min(keepFrom, i)
			break
		}
	}
	if keepFrom == 0 {
		return 0, nil
	}
	var buf bytes.Buffer
	for _, e := range all[keepFrom:] {
		if err := writeLine(&buf, e); err != nil {
			return 0, err
		}
	}
	if err := writeAtomic(h.path(), buf.Bytes(), 0o644); err != nil {
		return 0, err
	}
	return keepFrom, nil
}

// seed writes n entries with cursors from+1 .. from+n.
func (h *fileHistory) seed(t testing.TB, from, n int, content func(i int) string) {
	t.Helper()
	f, err := os.OpenFile(h.path(), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for i := from + 1; i <= from+n; i++ {
		e := Entry{Cursor: i, Timestamp: fmt.Sprintf("2026-04-03 %02d:%02d", i/60%24, i%60), Content: content(i), SessionKey: "slack:C1:1712.55"}
		if err := writeLine(w, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func (h *fileHistory) cursor(t testing.TB) int {
	t.Helper()
	n, err := h.DreamCursor()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *fileHistory) all(t testing.TB) []Entry {
	t.Helper()
	es, err := h.readAll()
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
	hist *fileHistory
	srv  *llmtest.Server
	llm  *llm.Client
	logs *logRecorder
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ws := t.TempDir()
	writeFile(t, ws, "SOUL.md", initSoul)
	writeFile(t, ws, "USER.md", initUser)
	writeFile(t, ws, "memory/MEMORY.md", initMemory)
	writeFile(t, ws, "AGENTS.md", "# Agents\n")
	repo, err := gitstore.Open(ws, gitstore.Options{})
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
	return &env{t: t, ws: ws, repo: repo, hist: newFileHistory(t, ws), srv: srv, llm: client, logs: &logRecorder{}}
}

func (e *env) dreamer(cfg Config) *Dreamer {
	e.t.Helper()
	cfg.Workspace = e.ws
	d, err := New(cfg, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs)})
	if err != nil {
		e.t.Fatal(err)
	}
	return d
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
	cs, err := e.repo.Log(n, "")
	if err != nil {
		e.t.Fatal(err)
	}
	return cs
}

// checkWire asserts that every request the fake received was valid,
// including exactly one tool result per tool call (seed 003).
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

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// editCall is an edit_file tool call.
func editCall(path, oldText, newText string) llm.ToolCall {
	args, _ := json.Marshal(map[string]string{"path": path, "old_text": oldText, "new_text": newText})
	return llm.ToolCall{Name: "edit_file", Arguments: string(args)}
}

func calls(cs ...llm.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: cs} }

// logRecorder is a slog.Handler that keeps every record (all levels).
type logRecorder struct {
	mu      sync.Mutex
	records []logRecord
	notify  func(logRecord)
}

type logRecord struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, rec)
	notify := l.notify
	l.mu.Unlock()
	if notify != nil {
		notify(rec)
	}
	return nil
}

// find returns the records at level or above whose message contains msg.
func (l *logRecorder) find(level slog.Level, msg string) []logRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logRecord
	for _, r := range l.records {
		if r.Level >= level && strings.Contains(r.Msg, msg) {
			out = append(out, r)
		}
	}
	return out
}

package session

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

func TestAppendSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, err := st.Get("slack:C1:1712.55")
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "hi <b>&"}, llm.Message{Role: llm.RoleAssistant, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(1, "- said hi"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, _ := NewStore(dir, nil)
	s2, err := st2.Get("slack:C1:1712.55")
	if err != nil {
		t.Fatal(err)
	}
	if s2.ID() != id || s2.Len() != 2 || s2.LastConsolidated() != 1 || s2.LastSummary() != "- said hi" {
		t.Errorf("reloaded: id %s len %d lc %d summary %q", s2.ID(), s2.Len(), s2.LastConsolidated(), s2.LastSummary())
	}
	if got := s2.Messages()[0].Content; got != "hi <b>&" {
		t.Errorf("content = %q", got)
	}
	if s2.Messages()[0].Time.IsZero() {
		t.Error("appended messages must carry a time")
	}
	raw, _ := os.ReadFile(s2.prefix + ".jsonl")
	if !strings.Contains(string(raw), "hi <b>&") {
		t.Errorf("the file should hold readable UTF-8 without HTML escaping: %s", raw)
	}
}

func TestTornLineIsSkippedAndNotGluedTo(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, _ := st.Get("k")
	_ = s.Append(llm.Message{Role: llm.RoleUser, Content: "one"})
	st.Close()
	// A crash mid-write leaves half a line.
	f, _ := os.OpenFile(s.prefix+".jsonl", os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"role":"assistant","content":"tw`)
	f.Close()

	st2, _ := NewStore(dir, nil)
	s2, _ := st2.Get("k")
	if s2.Len() != 1 {
		t.Fatalf("len = %d, want 1 (torn line skipped)", s2.Len())
	}
	_ = s2.Append(llm.Message{Role: llm.RoleUser, Content: "two"})
	st2.Close()

	st3, _ := NewStore(dir, nil)
	s3, _ := st3.Get("k")
	if s3.Len() != 2 || s3.Messages()[1].Content != "two" {
		t.Errorf("after a torn line the next append must be readable: %+v", s3.Messages())
	}
}

// A last_consolidated beyond the messages is reset to 0 with a warning:
// clamping it to the length would hide the tail from the prompt and from
// the archive alike.
func TestLastConsolidatedBeyondTheMessagesIsResetToZero(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, _ := st.Get("k")
	_ = s.Append(llm.Message{Role: llm.RoleUser, Content: "one"}, llm.Message{Role: llm.RoleAssistant, Content: "ok"})
	st.Close()
	os.WriteFile(s.prefix+".meta.json", []byte(`{"key":"k","id":"x","last_consolidated":99}`), 0o600)
	var logs bytes.Buffer
	st2, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	s2, err := st2.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	if s2.LastConsolidated() != 0 {
		t.Errorf("last_consolidated = %d, want reset to 0", s2.LastConsolidated())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "value=99") {
		t.Errorf("no warning about the reset:\n%s", logs.String())
	}
	if err := s2.SetLastConsolidated(2, ""); err != nil {
		t.Errorf("archiving from 0 after the reset: %v", err)
	}
}

// failingDisk writes the first half of each write, then fails as a full
// disk does, leaving a torn fragment behind.
type failingDisk struct {
	w    io.Writer
	fail *bool
}

func (d failingDisk) Write(p []byte) (int, error) {
	if !*d.fail {
		return d.w.Write(p)
	}
	n, _ := d.w.Write(p[:len(p)/2])
	return n, syscall.ENOSPC
}

// A failed append leaves no fragment for the next append to be glued to:
// the message after it survives a reload.
func TestFailedAppendLeavesNoFragment(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	full := false
	st.WrapWrites(func(w io.Writer) io.Writer { return failingDisk{w: w, fail: &full} })
	s, _ := st.Get("k")
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "one"}, llm.Message{Role: llm.RoleAssistant, Content: "ok"}); err != nil {
		t.Fatal(err)
	}
	full = true
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "lost to a full disk"}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk = %v, want ENOSPC", err)
	}
	if s.Len() != 2 {
		t.Errorf("a failed append counted: len %d", s.Len())
	}
	full = false
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "two"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, _ := NewStore(dir, nil)
	s2, _ := st2.Get("k")
	var got []string
	for _, m := range s2.Messages() {
		got = append(got, m.Content)
	}
	if strings.Join(got, "|") != "one|ok|two" {
		t.Errorf("after reload: %q, want one, ok, two", got)
	}
	raw, _ := os.ReadFile(s.prefix + ".jsonl")
	if strings.Contains(string(raw), "lost to") {
		t.Errorf("the torn fragment is still in the file:\n%s", raw)
	}
}

func TestRotateKeepsTheOldConversation(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, _ := st.Get("terminal:default")
	_ = s.Append(llm.Message{Role: llm.RoleUser, Content: "old"})
	old, fresh, err := st.Rotate("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	if old != s || fresh.Len() != 0 || fresh.ID() == old.ID() {
		t.Fatalf("rotate: old %p/%p fresh len %d", old, s, fresh.Len())
	}
	// The old session still works on its renamed files (its tail gets archived).
	if err := old.SetLastConsolidated(1, "- old"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Errorf("want the old message file kept aside, got %v", files)
	}
	_ = fresh.Append(llm.Message{Role: llm.RoleUser, Content: "new"})
	st.Close()
	st2, _ := NewStore(dir, nil)
	again, _ := st2.Get("terminal:default")
	if again.Len() != 1 || again.Messages()[0].Content != "new" {
		t.Errorf("after restart the key holds %+v", again.Messages())
	}
}

func TestListOnDiskListsCurrentConversations(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	for _, k := range []string{"slack:C1:1712.55", "terminal:default"} {
		s, _ := st.Get(k)
		_ = s.Append(llm.Message{Role: llm.RoleUser, Content: "hi"})
	}
	_, _ = st.Get("discord:9") // never spoke: no file
	if _, _, err := st.Rotate("terminal:default"); err != nil {
		t.Fatal(err)
	}
	got, err := st.ListOnDisk()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Key != "slack:C1:1712.55" || got[0].Modified.IsZero() {
		t.Errorf("ListOnDisk = %+v, want the one current conversation with a file", got)
	}
	if !st.IsLoaded("slack:C1:1712.55") || st.IsLoaded("nope") {
		t.Error("IsLoaded")
	}
}

// A session that has messages but was never archived has no metadata yet:
// its ID lives in memory only until SaveID writes it.
func TestSaveIDKeepsTheIDAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, _ := st.Get("k")
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "one"}); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := s.SaveID(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, _ := NewStore(dir, nil)
	s2, _ := st2.Get("k")
	if s2.ID() != id || s2.Len() != 1 || s2.LastConsolidated() != 0 {
		t.Errorf("after a restart: id %q (want %q), len %d, lc %d", s2.ID(), id, s2.Len(), s2.LastConsolidated())
	}

	// Already on disk: SaveID does not write again (the atomic write would
	// replace the file, a new inode).
	before, err := os.Stat(s2.prefix + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.SaveID(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(s2.prefix + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("SaveID rewrote metadata that already held the ID")
	}

	// Metadata that does not hold this ID (unreadable, so the session
	// started over under a new one) is replaced.
	os.WriteFile(s2.prefix+".meta.json", []byte("{not json"), 0o600)
	st2.Close()
	st3, _ := NewStore(dir, nil)
	s3, _ := st3.Get("k")
	if err := s3.SaveID(); err != nil {
		t.Fatal(err)
	}
	st3.Close()
	st4, _ := NewStore(dir, nil)
	if s4, _ := st4.Get("k"); s4.ID() != s3.ID() {
		t.Errorf("id after replacing unreadable metadata = %q, want %q", s4.ID(), s3.ID())
	}
}

package session

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
)

// A message delivered again is looked for in the archived head of a long
// session only when it may be there: one the platform sent after the
// first held message was recorded was recorded after it, if at all. Each
// new message of a long session used to read the whole file.
func TestRedeliveryLooksInTheHeadOnlyWhenItMayBeThere(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	old := Origin{Channel: "slack", ChatID: "C1", MessageID: "1.0001"}
	sentOld := time.Now().Add(-time.Hour)
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "m0"}, old); err != nil {
		t.Fatal(err)
	}
	msgs := make([]llm.Message, 999)
	for i := range msgs {
		role := llm.RoleAssistant
		if i%2 == 1 {
			role = llm.RoleUser
		}
		msgs[i] = llm.Message{Role: role, Content: fmt.Sprint("m", i+1)}
	}
	if err := s.Append(msgs...); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(990, "- summary"); err != nil {
		t.Fatal(err)
	}
	prefix := s.prefix
	st.Close()

	load := func() (*Store, *Session, *bytes.Buffer) {
		var logs bytes.Buffer
		st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
		t.Cleanup(func() { st.Close() })
		s, err := st.Get("k")
		if err != nil {
			t.Fatal(err)
		}
		return st, s, &logs
	}
	// The old message is in the head: found, and answered (later turns
	// followed it).
	st1, s1, _ := load()
	if r := s1.Recorded(old, sentOld); !r.Held || r.Newest {
		t.Fatal("the archived message delivered again was not found")
	}
	st1.Close()

	// Once read, the head is not read again (its origins are known): a
	// read of the head spoiled meanwhile would warn about every line.
	clean, err := os.ReadFile(prefix + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	spoil := func() {
		raw := bytes.Clone(clean)
		end := bytes.Index(raw, []byte(`"content":"m974"`))
		end = bytes.LastIndexByte(raw[:end], '\n') + 1
		for i := range raw[:end] {
			if raw[i] != '\n' {
				raw[i] = 'x'
			}
		}
		if err := os.WriteFile(prefix+".jsonl", raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st3, s3, logs3 := load()
	if s3.Recorded(Origin{Channel: "slack", MessageID: "9.9997"}, sentOld).Held {
		t.Fatal("found a message never recorded")
	}
	spoil()
	if !s3.Recorded(old, sentOld).Held || s3.Recorded(Origin{Channel: "slack", MessageID: "9.9998"}, sentOld).Held || logs3.Len() > 0 {
		t.Fatalf("the head was read a second time:\n%s", logs3.String())
	}
	st3.Close()

	// A new message of a session whose head cannot be read (spoiled) is
	// found new without reading it.
	_, s2, logs := load()
	fresh := Origin{Channel: "slack", ChatID: "C1", MessageID: "9.9999"}
	if s2.Recorded(fresh, time.Now().Add(2*clockSkew)).Held {
		t.Fatal("a new message was taken for one the session holds")
	}
	if logs.Len() > 0 {
		t.Fatalf("a new message made the head be read:\n%s", logs.String())
	}
	// Sent before the held messages (or at an unknown time): the head is read.
	if s2.Recorded(fresh, sentOld).Held || logs.Len() == 0 {
		t.Fatalf("an old message did not make the head be read (logs %q)", logs.String())
	}
}

// A user message's sender comes back with it after a reload (from its
// origin line); the local terminal's user is not named.
func TestSenderSurvivesReload(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "tea"}, Origin{Channel: "discord", MessageID: "1", SenderID: "U1", SenderName: "ana"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "coffee"}, Origin{Channel: "discord", MessageID: "2", SenderID: "U2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "me"}, Origin{Channel: "terminal", SenderName: "root", Local: true}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Session, when string) {
		t.Helper()
		_, msgs := s.Tail()
		var got []string
		for _, m := range msgs {
			got = append(got, m.Sender)
		}
		if strings.Join(got, ",") != "ana,U2," {
			t.Errorf("%s: senders %q, want ana, U2 and none", when, got)
		}
	}
	check(s, "appended")
	st.Close()
	st2, _ := NewStore(dir, nil)
	defer st2.Close()
	s2, err := st2.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	check(s2, "reloaded")
}

// What a session holds of a message survives a reload: a message recorded
// again while it is the newest is not written twice, its reply is found
// after it, and a later turn makes it answered. An earlier version's
// answered mark is no message; the message after the last one is that
// version's pending message.
func TestRecordedSurvivesReload(t *testing.T) {
	dir := t.TempDir()
	var st *Store
	reload := func() *Session {
		t.Helper()
		if st != nil {
			st.Close()
		}
		st, _ = NewStore(dir, nil)
		s, err := st.Get("k")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	defer func() { st.Close() }()
	o := Origin{Channel: "test", ChatID: "c", MessageID: "m1", SenderID: "U1", SenderName: "ana"}
	msg := llm.Message{Role: llm.RoleUser, Content: "hi", Time: time.Now().UTC()}
	s := reload()
	for i, want := range []bool{true, false} {
		if wrote, err := s.AppendUser(msg, o); err != nil || wrote != want {
			t.Fatalf("AppendUser #%d = %v, %v; want %v", i, wrote, err, want)
		}
	}
	s = reload()
	if r := s.Recorded(o, msg.Time); !r.Held || !r.Newest || r.Reply != "" || s.Len() != 1 {
		t.Fatalf("after reload: %+v, %d messages", r, s.Len())
	}
	if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	raw := `{"answered":true,"timestamp":"2026-01-02T03:04:05Z"}` + "\n"
	appendRaw(t, s.path()+".jsonl", raw)
	s = reload()
	if r := s.Recorded(o, msg.Time); r.Reply != "hello" || s.Len() != 2 {
		t.Errorf("reply after reload: %+v, %d messages (a mark is no message)", r, s.Len())
	}
	if _, _, ok := s.LegacyPending(); ok {
		t.Error("a message an answered mark follows is pending")
	}
	next := Origin{Channel: "test", MessageID: "m2"}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "and?"}, next); err != nil {
		t.Fatal(err)
	}
	if r := s.Recorded(o, msg.Time); !r.Held || r.Newest {
		t.Errorf("a message a later turn followed: %+v, want held and not the newest", r)
	}
	if m, po, ok := s.LegacyPending(); !ok || po != next || m.Content != "and?" {
		t.Errorf("pending after the mark: %+v %+v %v", m, po, ok)
	}
}

func appendRaw(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

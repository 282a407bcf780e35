package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// longSession writes n messages (user and assistant in turn, message i
// saying "m<i>") under key k and archives all but the last tail. It
// returns the store's directory and the session's file prefix.
func longSession(t *testing.T, n, tail int) (dir, prefix string) {
	t.Helper()
	dir = t.TempDir()
	st, _ := NewStore(dir, nil)
	s, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]llm.Message, n)
	for i := range msgs {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		msgs[i] = llm.Message{Role: role, Content: fmt.Sprint("m", i)}
	}
	if err := s.Append(msgs...); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(n-tail, "- summary"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	return dir, s.prefix
}

// checkWhole fails unless s holds n messages "m0".."m<n-1>" in order, as
// Messages and Tail both see them, with the given last_consolidated.
func checkWhole(t *testing.T, s *Session, n, lc int) {
	t.Helper()
	if s.Len() != n || s.LastConsolidated() != lc {
		t.Fatalf("len %d lc %d, want %d %d", s.Len(), s.LastConsolidated(), n, lc)
	}
	all := s.Messages()
	if len(all) != n {
		t.Fatalf("Messages: %d, want %d", len(all), n)
	}
	for i, m := range all {
		if m.Content != fmt.Sprint("m", i) {
			t.Fatalf("message %d = %q", i, m.Content)
		}
	}
	base, held := s.Tail()
	for i, m := range held {
		if m.Content != fmt.Sprint("m", base+i) {
			t.Fatalf("Tail: message %d = %q", base+i, m.Content)
		}
	}
	if base+len(held) != n || base > lc {
		t.Fatalf("Tail holds [%d, %d) of %d with lc %d", base, base+len(held), n, lc)
	}
}

// A long, mostly archived session holds only its tail and a margin from a
// user turn, and a restart reads only that part of the file: the archived
// lines before the mark can be garbage without the load noticing.
func TestLoadReadsFromTheTailMark(t *testing.T) {
	dir, prefix := longSession(t, 1000, 10)
	raw, err := os.ReadFile(prefix + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var m meta
	mraw, _ := os.ReadFile(prefix + ".meta.json")
	if err := json.Unmarshal(mraw, &m); err != nil || m.Tail == nil {
		t.Fatalf("metadata without a tail mark: %s", mraw)
	}
	// The margin starts at the user message at or before 990-16.
	if m.Tail.Index != 974 || raw[m.Tail.Offset-1] != '\n' || !bytes.HasPrefix(raw[m.Tail.Offset:], []byte(`{"role":"user","content":"m974"`)) {
		t.Fatalf("mark %+v points at %.40q", *m.Tail, raw[m.Tail.Offset:])
	}
	// Blank out what lies before the mark, keeping the lines' lengths.
	head := raw[:m.Tail.Offset]
	for i, b := range head {
		if b != '\n' {
			head[i] = 'x'
		}
	}
	if err := os.WriteFile(prefix+".jsonl", raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	s, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	base, held := s.Tail()
	if base != 974 || len(held) != 26 || held[0].Content != "m974" || s.Len() != 1000 || s.LastConsolidated() != 990 {
		t.Fatalf("loaded: base %d, %d held, len %d, lc %d", base, len(held), s.Len(), s.LastConsolidated())
	}
	if logs.Len() > 0 {
		t.Errorf("the load read the part before the mark:\n%s", logs.String())
	}
}

// Across restarts, appends and further archives every message keeps its
// index, and the mark moves on with last_consolidated.
func TestTailSurvivesRestartsAndArchives(t *testing.T) {
	dir, _ := longSession(t, 1000, 10)
	n, lc := 1000, 990
	for round := range 3 {
		st, _ := NewStore(dir, nil)
		s, err := st.Get("k")
		if err != nil {
			t.Fatal(err)
		}
		checkWhole(t, s, n, lc)
		for range 50 {
			role := llm.RoleUser
			if n%2 == 1 {
				role = llm.RoleAssistant
			}
			if err := s.Append(llm.Message{Role: role, Content: fmt.Sprint("m", n)}); err != nil {
				t.Fatal(err)
			}
			n++
		}
		lc = n - 5 - round
		if err := s.SetLastConsolidated(lc, ""); err != nil {
			t.Fatal(err)
		}
		checkWhole(t, s, n, lc)
		if base, held := s.Tail(); len(held) > keepBefore+maxTurnBack+10 || base < lc-keepBefore-2 {
			t.Errorf("round %d: holds [%d, %d), lc %d: more than the tail and its margin", round, base, base+len(held), lc)
		}
		st.Close()
	}
}

// A mark that does not fit the file is never trusted: the file is read
// whole (and the margin cut from it), with a warning.
func TestInvalidTailMarkReadsTheWholeFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		// spoil changes the metadata's mark or the message file.
		spoil func(t *testing.T, m *tailMark, prefix string)
		// lc is last_consolidated after the load (reset when lines are lost).
		n, lc int
		want  string
	}{
		{"offset mid-line", func(t *testing.T, m *tailMark, _ string) { m.Offset += 3 }, 1000, 990, "does not start a line"},
		{"offset at another line", func(t *testing.T, m *tailMark, prefix string) {
			raw, _ := os.ReadFile(prefix + ".jsonl")
			m.Offset += int64(bytes.IndexByte(raw[m.Offset:], '\n') + 1)
		}, 1000, 990, "not the marked one"},
		{"index after last_consolidated", func(t *testing.T, m *tailMark, _ string) { m.Index = 995 }, 1000, 990, "outside the archived"},
		{"index zero", func(t *testing.T, m *tailMark, _ string) { m.Index = 0 }, 1000, 990, "outside the archived"},
		{"file replaced", func(t *testing.T, m *tailMark, prefix string) {
			// The same messages, each line one byte longer.
			raw, _ := os.ReadFile(prefix + ".jsonl")
			raw = bytes.ReplaceAll(raw, []byte(`"content":"m`), []byte(`"content":"mm`))
			raw = bytes.ReplaceAll(raw, []byte(`"content":"mm`), []byte(`"content":"m`))
			raw = bytes.ReplaceAll(raw, []byte(`"timestamp"`), []byte(`"timestamp" `))
			if err := os.WriteFile(prefix+".jsonl", raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 1000, 990, "does not start a line"},
		{"file rewritten in place", func(t *testing.T, m *tailMark, prefix string) {
			// The same bytes everywhere except the marked line's text.
			raw, _ := os.ReadFile(prefix + ".jsonl")
			i := int(m.Offset) + bytes.Index(raw[m.Offset:], []byte("m974"))
			copy(raw[i:], "m97X")
			if err := os.WriteFile(prefix+".jsonl", raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}, -1, 990, "not the marked one"},
		{"file shorter", func(t *testing.T, m *tailMark, prefix string) {
			if err := os.Truncate(prefix+".jsonl", m.Offset-5); err != nil {
				t.Fatal(err)
			}
		}, 973, 0, "shorter than the mark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, prefix := longSession(t, 1000, 10)
			var m meta
			mraw, _ := os.ReadFile(prefix + ".meta.json")
			if err := json.Unmarshal(mraw, &m); err != nil || m.Tail == nil {
				t.Fatalf("metadata: %s", mraw)
			}
			tc.spoil(t, m.Tail, prefix)
			mraw, _ = json.Marshal(m)
			if err := os.WriteFile(prefix+".meta.json", mraw, 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
			s, err := st.Get("k")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "tail mark does not match") || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("no warning naming %q:\n%s", tc.want, logs.String())
			}
			if tc.n < 0 {
				// The text changed, so only the count is checked.
				if s.Len() != 1000 || s.LastConsolidated() != tc.lc || s.Messages()[974].Content != "m97X" {
					t.Errorf("len %d lc %d", s.Len(), s.LastConsolidated())
				}
				return
			}
			checkWhole(t, s, tc.n, tc.lc)
			if base, held := s.Tail(); tc.lc > 0 && (base == 0 || len(held) > keepBefore+maxTurnBack+10) {
				t.Errorf("read whole, it still holds [%d, %d)", base, base+len(held))
			}
			if tc.lc > 0 {
				// The mark is repaired: one whole read, not one per load.
				st.Close()
				checkReadFromMark(t, dir, 974)
			}
		})
	}
}

// A torn last line after the mark (a crash mid-append) is skipped on a
// load from the mark, and the next append starts a line of its own.
func TestTornLineAfterTheMark(t *testing.T) {
	dir, prefix := longSession(t, 1000, 10)
	f, _ := os.OpenFile(prefix+".jsonl", os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"role":"user","content":"to`)
	f.Close()

	var logs bytes.Buffer
	st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	s, _ := st.Get("k")
	if base, _ := s.Tail(); base == 0 || strings.Contains(logs.String(), "tail mark") {
		t.Fatalf("not loaded from the mark (base %d):\n%s", base, logs.String())
	}
	checkWhole(t, s, 1000, 990)
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "m1000"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(1000, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, _ := NewStore(dir, nil)
	s2, _ := st2.Get("k")
	checkWhole(t, s2, 1001, 1000)
}

// A session from before the mark existed (or from nanobot) is read whole
// once, holds only its tail, and records its mark for the next load.
func TestLegacySessionWithoutMark(t *testing.T) {
	dir, prefix := longSession(t, 1000, 10)
	var m meta
	mraw, _ := os.ReadFile(prefix + ".meta.json")
	_ = json.Unmarshal(mraw, &m)
	m.Tail = nil
	mraw, _ = json.Marshal(m)
	os.WriteFile(prefix+".meta.json", mraw, 0o600)

	var logs bytes.Buffer
	st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	s, _ := st.Get("k")
	checkWhole(t, s, 1000, 990)
	if base, _ := s.Tail(); base != 974 {
		t.Errorf("base %d, want 974", base)
	}
	if strings.Contains(logs.String(), "WARN") || !strings.Contains(logs.String(), "recorded where") {
		t.Errorf("a session without a mark is no warning, and its mark is recorded:\n%s", logs.String())
	}
	st.Close()
	checkReadFromMark(t, dir, 974)
}

// checkReadFromMark fails unless the session "k" in dir loads from a mark at
// index want: what lies before it is not read.
func checkReadFromMark(t *testing.T, dir string, want int) {
	t.Helper()
	var m meta
	raw, _ := os.ReadFile(dir + "/aw.meta.json")
	if err := json.Unmarshal(raw, &m); err != nil || m.Tail == nil || m.Tail.Index != want {
		t.Fatalf("metadata: %s", raw)
	}
	msgs, _ := os.ReadFile(dir + "/aw.jsonl")
	for i := range msgs[:m.Tail.Offset] {
		if msgs[i] != '\n' {
			msgs[i] = 'x'
		}
	}
	os.WriteFile(dir+"/aw.jsonl", msgs, 0o600)
	var logs bytes.Buffer
	st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	defer st.Close()
	s, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	if base, _ := s.Tail(); base != want || logs.Len() > 0 {
		t.Errorf("the next load starts at %d, want %d:\n%s", base, want, logs.String())
	}
}

// A mark written by an earlier version (summed with CRC-32C, under
// "crc32c") is read as no mark: the file is read whole, without a warning
// (nothing is wrong with it), and a mark of the current kind is recorded,
// which the next load then uses.
func TestEarlierVersionsTailMarkIsReplaced(t *testing.T) {
	dir, prefix := longSession(t, 1000, 10)
	mraw, err := os.ReadFile(prefix + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(mraw, &doc); err != nil {
		t.Fatal(err)
	}
	tail := doc["tail"].(map[string]any)
	if _, ok := tail["crc32"]; !ok {
		t.Fatalf("mark without crc32: %s", mraw)
	}
	delete(tail, "crc32")
	tail["crc32c"] = 12345 // the old kind: whatever its value, it is not read
	tail["offset"] = 3     // and a stale offset, which a read of it would reject with a warning
	mraw, _ = json.Marshal(doc)
	if err := os.WriteFile(prefix+".meta.json", mraw, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	st, _ := NewStore(dir, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	s, err := st.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	checkWhole(t, s, 1000, 990)
	if logs.Len() > 0 {
		t.Errorf("an earlier version's mark was warned about:\n%s", logs.String())
	}
	st.Close()
	var m meta
	mraw, _ = os.ReadFile(prefix + ".meta.json")
	if err := json.Unmarshal(mraw, &m); err != nil || m.Tail == nil || m.Tail.OldSum != nil || m.Tail.Index != 974 {
		t.Fatalf("no new mark recorded: %s", mraw)
	}
}

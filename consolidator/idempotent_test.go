package consolidator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
)

var errKilled = errors.New("killed before the record was saved")

// killedSession records its first okSets SetLastConsolidated calls and
// fails the rest: the process died after appending the entry that the
// failing call would have recorded.
type killedSession struct {
	*fakeSession
	okSets, calls int
}

func (k *killedSession) SetLastConsolidated(n int, summary string) error {
	k.calls++
	if k.calls > k.okSets {
		return errKilled
	}
	return k.fakeSession.SetLastConsolidated(n, summary)
}

// restarted is the session as a restart loads it from disk: the same key,
// ID and messages, and what was recorded of it.
func restarted(s *fakeSession) *fakeSession {
	r := newSession(s.key, s.msgs...)
	r.id, r.lc, r.summary = s.id, s.lc, s.summary
	return r
}

// checkRanges fails when two history entries of one session generation
// hold the same message, and returns the messages covered per generation.
func checkRanges(t *testing.T, store *history.Store) map[string]int {
	t.Helper()
	entries, err := store.Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]map[int]int{}
	for _, e := range entries {
		src, ok := e.Source()
		if !ok {
			t.Errorf("entry %d has no source: %+v", e.Cursor, e)
			continue
		}
		if covered[src.SessionID] == nil {
			covered[src.SessionID] = map[int]int{}
		}
		for i := src.From; i < src.To; i++ {
			if prev, dup := covered[src.SessionID][i]; dup {
				t.Errorf("message %d of %s archived twice: entries %d and %d", i, src.SessionID, prev, e.Cursor)
			}
			covered[src.SessionID][i] = e.Cursor
		}
	}
	out := map[string]int{}
	for id, m := range covered {
		out[id] = len(m)
	}
	return out
}

// A crash between the history append and the session's record of it: the
// next process finds the range in history and moves LastConsolidated
// instead of archiving the same messages again. The same holds for the
// budget's archive (Before) and for the idle and /new archive (ArchiveTail).
func TestArchiveIsIdempotentAcrossACrash(t *testing.T) {
	paths := []struct {
		name string
		run  func(ctx context.Context, c *Consolidator, s Session) (Report, error)
	}{
		{"budget", func(ctx context.Context, c *Consolidator, s Session) (Report, error) { return before(c, ctx, s) }},
		{"tail", func(ctx context.Context, c *Consolidator, s Session) (Report, error) { return c.ArchiveTail(ctx, s) }},
	}
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) {
			dir := t.TempDir()
			first := newFakeModel(t)
			c1 := New(first, openTestStore(t, dir, nil), baseConfig, nil)
			s := outcomeSession()
			if _, err := path.run(t.Context(), c1, &killedSession{fakeSession: s}); !errors.Is(err, errKilled) {
				t.Fatalf("first run: err = %v, want the simulated kill", err)
			}
			if s.lc != 0 || len(first.Requests()) != 1 || s.saves == 0 {
				t.Fatalf("fixture: lc %d, %d archive calls, %d SaveID calls; want 0, 1, >0", s.lc, len(first.Requests()), s.saves)
			}

			// Restart: new store over the same file, new consolidator.
			store := openTestStore(t, dir, nil)
			written, _ := store.Since(0, 0)
			if len(written) != 1 {
				t.Fatalf("fixture: %d entries after the crash, want 1", len(written))
			}
			end := written[0].Range[1]
			rec := &testkit.LogRecorder{}
			second := newFakeModel(t)
			c2 := New(second, store, baseConfig, slog.New(rec))
			s2 := restarted(s)
			rep, err := path.run(t.Context(), c2, s2)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Recovered) != 1 || rep.Recovered[0] != written[0].Cursor {
				t.Errorf("Report.Recovered = %v, want [%d]", rep.Recovered, written[0].Cursor)
			}
			if len(s2.sets) == 0 || s2.sets[0] != end {
				t.Errorf("LastConsolidated moves %v, want first to %d (the entry's end)", s2.sets, end)
			}
			if s2.summary != written[0].Content {
				t.Errorf("last summary = %q, want the recovered entry's %q", s2.summary, written[0].Content)
			}
			for _, tr := range transcripts(second) {
				if strings.Contains(tr, "alpha hello") {
					t.Errorf("the recovered messages were sent to the model again:\n%.200s", tr)
				}
			}
			if rep.Archived != s2.lc {
				t.Errorf("Report.Archived = %d, LastConsolidated %d", rep.Archived, s2.lc)
			}
			checkRanges(t, store)
			if n := rec.Count(slog.LevelInfo, "messages already archived before a restart; recorded them instead of archiving them again"); n != 1 {
				t.Errorf("recovery logged %d times, want 1", n)
			}
		})
	}
}

// A slice cut into parts: the process dies after the second part's append.
// The restart keeps the first two parts, archives only the rest, and every
// message ends up in exactly one entry.
func TestCrashInsideASplitArchive(t *testing.T) {
	cfg := Config{ContextWindow: 4000, MaxTokens: 500}
	var msgs []llm.Message
	for i := range 6 {
		msgs = append(msgs, user(words(fmt.Sprintf("q%d", i), 200)), assistant(words(fmt.Sprintf("a%d", i), 200)))
	}
	dir := t.TempDir()
	first := newFakeModel(t)
	s := newSession("terminal:t", msgs...)
	if _, err := New(first, openTestStore(t, dir, nil), cfg, nil).ArchiveTail(t.Context(), &killedSession{fakeSession: s, okSets: 1}); !errors.Is(err, errKilled) {
		t.Fatalf("first run: err = %v", err)
	}
	if len(first.Requests()) != 2 || s.lc == 0 {
		t.Fatalf("fixture: %d archive calls, lc %d; want 2 calls and the first part recorded", len(first.Requests()), s.lc)
	}
	store := openTestStore(t, dir, nil)
	second := newFakeModel(t)
	s2 := restarted(s)
	rep, err := New(second, store, cfg, nil).ArchiveTail(t.Context(), s2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Recovered) != 1 || s2.lc != len(msgs) {
		t.Errorf("recovered %v, lc %d; want one entry recovered and everything archived", rep.Recovered, s2.lc)
	}
	if got := checkRanges(t, store); got[s.id] != len(msgs) {
		t.Errorf("entries cover %d messages, want all %d exactly once", got[s.id], len(msgs))
	}
	seen := map[string]int{}
	for _, tr := range append(transcripts(first), transcripts(second)...) {
		for i := range 6 {
			if strings.Contains(tr, fmt.Sprintf(": q%d hello", i)) {
				seen[fmt.Sprint(i)]++
			}
		}
	}
	for i := range 6 {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Errorf("turn q%d sent to the model %d times, want once", i, n)
		}
	}
}

// /new starts a new generation under the same key, its indexes from 0
// again: the old generation's ranges are not taken for its own.
func TestNewGenerationIsArchivedAfresh(t *testing.T) {
	m := newFakeModel(t)
	c, store := newTestConsolidator(t, m, baseConfig)
	old := outcomeSession()
	if _, err := c.ArchiveTail(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	fresh := outcomeSession()
	fresh.id = old.key + "#2"
	rep, err := c.ArchiveTail(t.Context(), fresh)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Recovered) != 0 || len(m.Requests()) != 2 || len(rep.Entries) != 1 {
		t.Errorf("recovered %v, %d calls, entries %v: the new generation must be archived", rep.Recovered, len(m.Requests()), rep.Entries)
	}
	if got := checkRanges(t, store); got[old.id] != len(old.msgs) || got[fresh.id] != len(fresh.msgs) {
		t.Errorf("coverage %v", got)
	}
}

// An entry that reaches past the session's messages (the session file lost
// some) is not trusted: the messages are archived again, with a warning.
func TestRecoveredRangeBeyondTheSessionIsArchived(t *testing.T) {
	m := newFakeModel(t)
	rec := &testkit.LogRecorder{}
	store := openTestStore(t, t.TempDir(), nil)
	c := New(m, store, baseConfig, slog.New(rec))
	s := outcomeSession()
	if _, err := store.AppendFrom(audience.Default, "- from the longer file", s.key, history.Source{SessionID: s.id, From: 0, To: 40}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.ArchiveTail(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Recovered) != 0 || len(m.Requests()) != 1 || s.lc != len(s.msgs) {
		t.Errorf("recovered %v, %d calls, lc %d", rep.Recovered, len(m.Requests()), s.lc)
	}
	if n := rec.Count(slog.LevelWarn, "history holds an archive of more messages than the session has; archiving them again"); n != 1 {
		t.Errorf("warned %d times, want 1", n)
	}
}

// The session's ID must be durable before an entry names it; when it
// cannot be saved, nothing is archived.
func TestUnsavedIDArchivesNothing(t *testing.T) {
	m := newFakeModel(t)
	c, store := newTestConsolidator(t, m, baseConfig)
	s := outcomeSession()
	s.saveErr = errors.New("disk full")
	_, err := c.ArchiveTail(t.Context(), s)
	if !errors.Is(err, ErrNotArchived) {
		t.Fatalf("err = %v, want ErrNotArchived", err)
	}
	if n, _ := store.Len(); n != 0 || s.lc != 0 {
		t.Errorf("%d entries, lc %d; want nothing archived", n, s.lc)
	}
}

package consolidator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// A session that holds only its tail (Session.Tail with base > 0, as a
// long gateway session does) is archived and replayed exactly as one that
// holds every message: same archive calls, same ranges in history (indexes
// of the whole session), same last_consolidated, same continuity window,
// same estimates; and the count cache follows the base instead of growing.
func TestTailOnlySessionBehavesAsAWholeOne(t *testing.T) {
	whole, trimmed := newSession("terminal:tail"), newSession("terminal:tail")
	trimmed.keepBefore = 16
	mw, mt := newFakeModel(t), newFakeModel(t)
	cw, hw := newTestConsolidator(t, mw, baseConfig)
	ct, ht := newTestConsolidator(t, mt, baseConfig)

	for i := range 60 {
		turn := []llm.Message{user(words(markerOf(i), 150))}
		if i%3 == 0 {
			// A tool chain inside the turn: never split, never a window start.
			id := fmt.Sprint("c", i)
			turn = append(turn, assistant("", call(id, "read_file", `{"path":"x"}`)), toolResult(id, "read_file", words("", 90)))
		}
		whole.append(turn...)
		trimmed.append(turn...)
		pw, rw, err := cw.Before(t.Context(), whole, Prompt{})
		if err != nil {
			t.Fatal(err)
		}
		pt, rt, err := ct.Before(t.Context(), trimmed, Prompt{})
		if err != nil {
			t.Fatal(err)
		}
		if pw.Kept != pt.Kept || rw.Before != rt.Before || rw.After != rt.After || whole.lc != trimmed.lc {
			t.Fatalf("turn %d before: kept %d/%d, estimate %d→%d / %d→%d, lc %d/%d",
				i, pw.Kept, pt.Kept, rw.Before, rw.After, rt.Before, rt.After, whole.lc, trimmed.lc)
		}
		reply := assistant(words("", 120))
		whole.append(reply)
		trimmed.append(reply)
		var s Sent
		if i%4 == 1 {
			// A provider count now and then: its observation must survive
			// the base moving on.
			s = sent(whole, 0)
			s.PromptTokens = rw.After + 200
		}
		aw, err := cw.After(t.Context(), whole, pw, s)
		if err != nil {
			t.Fatal(err)
		}
		at, err := ct.After(t.Context(), trimmed, pt, s)
		if err != nil {
			t.Fatal(err)
		}
		if aw.Before != at.Before || aw.After != at.After || whole.lc != trimmed.lc {
			t.Fatalf("turn %d after: estimate %d→%d / %d→%d, lc %d/%d", i, aw.Before, aw.After, at.Before, at.After, whole.lc, trimmed.lc)
		}
		if bw, bt := cw.Status(whole, Prompt{}), ct.Status(trimmed, Prompt{}); bw != bt {
			t.Fatalf("turn %d status: %+v / %+v", i, bw, bt)
		}
		if i%7 == 6 {
			// An idle archive: everything is archived, and the next
			// prompt's continuity window reaches furthest back.
			if _, err := cw.ArchiveTail(t.Context(), whole); err != nil {
				t.Fatal(err)
			}
			if _, err := ct.ArchiveTail(t.Context(), trimmed); err != nil {
				t.Fatal(err)
			}
		}
	}
	if trimmed.base == 0 || len(mt.Requests()) < 3 {
		t.Fatalf("fixture: base %d, %d archive calls; want the tail trimmed and several archives", trimmed.base, len(mt.Requests()))
	}
	if !slices.Equal(transcripts(mw), transcripts(mt)) || !slices.Equal(whole.sets, trimmed.sets) {
		t.Errorf("archives differ:\nwhole %v\ntrimmed %v", whole.sets, trimmed.sets)
	}
	ew, _ := hw.Unread("terminal:tail")
	et, _ := ht.Unread("terminal:tail")
	if len(ew) != len(et) {
		t.Fatalf("history entries: %d / %d", len(ew), len(et))
	}
	for i := range ew {
		if ew[i].Range != et[i].Range || ew[i].Content != et[i].Content {
			t.Errorf("entry %d: %v %q / %v %q", i, ew[i].Range, ew[i].Content, et[i].Range, et[i].Content)
		}
	}
	st := ct.state(trimmed.ID())
	if held := len(trimmed.msgs) - trimmed.base; st.n != held || len(st.ex) != held {
		t.Errorf("count cache holds %d messages (%d counts); the session holds %d", st.n, len(st.ex), held)
	}
}

func TestArchiveTailSplitsLargeTranscript(t *testing.T) {
	// Hard limit 2476; the instructions take ~1.5K of it, so a transcript
	// part holds about 900 tokens.
	cfg := Config{ContextWindow: 4000, MaxTokens: 500}
	m := newFakeModel(t)
	c, store := newTestConsolidator(t, m, cfg)
	var msgs []llm.Message
	for i := range 6 {
		msgs = append(msgs, user(words(fmt.Sprintf("q%d", i), 200)), assistant(words(fmt.Sprintf("a%d", i), 200)))
	}
	msgs = append(msgs, user(words("giant", 3000)))
	s := newSession("terminal:t", msgs...)
	rep, err := c.ArchiveTail(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	tr := transcripts(m)
	if len(tr) < 3 {
		t.Fatalf("%d archive calls; the tail does not fit in one", len(tr))
	}
	budget := c.inputBudget()
	seen := map[string]int{}
	for i, text := range tr {
		body := text[strings.Index(text, "\n\n")+2:]
		if n := c.counter.Count(body); n > budget {
			t.Errorf("part %d has %d tokens, budget %d", i, n, budget)
		}
		if !strings.Contains(text, fmt.Sprintf("piece %d of %d", i+1, len(tr))) {
			t.Errorf("part %d does not say which piece it is", i)
		}
		for _, marker := range []string{"q0", "q1", "q2", "q3", "q4", "q5", "a0", "a5", "giant"} {
			if strings.Contains(body, ": "+marker+" hello") {
				seen[marker]++
			}
		}
	}
	for _, marker := range []string{"q0", "q1", "q2", "q3", "q4", "q5", "a0", "a5", "giant"} {
		if seen[marker] != 1 {
			t.Errorf("message %s sent %d times, want exactly once", marker, seen[marker])
		}
	}
	if last := tr[len(tr)-1]; !strings.Contains(last, "more characters did not fit in one archive request)") {
		t.Error("the oversized message must be cut with a note, not silently")
	}
	entries, _ := store.Since(0, 0)
	if len(entries) != len(tr) || len(rep.Entries) != len(tr) || s.lc != len(msgs) || rep.Archived != len(msgs) {
		t.Errorf("entries %d, report %v, LastConsolidated %d: want one entry per part and everything archived", len(entries), rep.Entries, s.lc)
	}
	for i := 1; i < len(s.sets); i++ {
		if s.sets[i] <= s.sets[i-1] {
			t.Errorf("LastConsolidated moved %v", s.sets)
		}
	}
}

func TestArchiveTailStopsCallingAfterFailure(t *testing.T) {
	cfg := Config{ContextWindow: 4000, MaxTokens: 500}
	m := newFakeModel(t, step{err: errors.New("boom")})
	c, store := newTestConsolidator(t, m, cfg)
	var msgs []llm.Message
	for i := range 8 {
		msgs = append(msgs, user(words(fmt.Sprintf("q%d", i), 200)), assistant(words("", 200)))
	}
	s := newSession("terminal:t", msgs...)
	rep, err := c.ArchiveTail(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := store.Since(0, 0)
	if len(m.Requests()) != 1 || !rep.Raw || len(entries) < 2 || s.lc != len(msgs) {
		t.Fatalf("calls %d raw %v entries %d lc %d", len(m.Requests()), rep.Raw, len(entries), s.lc)
	}
	total := 0
	for _, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e.Content, "[RAW] %d messages", &n); err != nil {
			t.Fatalf("entry %q is not raw", e.Content[:30])
		}
		total += n
	}
	if total != len(msgs) {
		t.Errorf("raw entries cover %d messages, want %d", total, len(msgs))
	}
}

func TestArchiveTailNothingToDo(t *testing.T) {
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, baseConfig)
	s := newSession("k", user("hi"), assistant("hello"))
	s.lc = 2
	rep, err := c.ArchiveTail(t.Context(), s)
	if err != nil || rep.Rounds != 0 || len(m.Requests()) != 0 {
		t.Errorf("rep %+v err %v calls %d", rep, err, len(m.Requests()))
	}
}

package consolidator

import (
	"fmt"
	"slices"
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

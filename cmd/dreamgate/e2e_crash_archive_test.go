package main

import (
	"fmt"
	"strings"
	"testing"
)

// runKilling runs dreamgate as h.run does, with the test fault switch that
// SIGKILLs the process right after its first archive entry is appended.
// It reports whether the process died of that signal.
func (h *harness) runKilling(args ...string) (killed bool, stderr string) {
	h.t.Helper()
	killed, code, stderr := h.runChaos([]string{testKillEnv + "=history-append"}, args...)
	if !killed && code != 0 {
		h.t.Fatalf("dreamgate %v: exit %d: %s", args, code, stderr)
	}
	return killed, stderr
}

// A process killed between the history append and the session's record of
// it, again and again: every restart finds the range already archived and
// moves last_consolidated instead of archiving the same turns again. Each
// turn is sent to the archive model once, and no message is in two entries.
func TestKilledArchiveIsNotRepeated(t *testing.T) {
	h := newHarness(t)
	h.set("llm.contextWindow", 6000)
	h.set("llm.maxTokens", 256)
	model := &scriptedMemoryModel{}
	h.llm.SetResponder(model.respond)

	const turns = 14
	kills := 0
	for i := range turns {
		msg := fmt.Sprintf("Turn %02d: %s", i, strings.Repeat("I am telling you about my trip plans in detail. ", 12))
		killed, stderr := h.runKilling("chat", "--session", "crash", "-m", msg)
		if killed {
			kills++
		} else if strings.TrimSpace(stderr) != "" {
			t.Fatalf("turn %d: %s", i, stderr)
		}
	}
	// And once more without the switch, as a user would after a crash.
	if r := h.run("chat", "--session", "crash", "-m", "Turn 99: what do you remember?"); r.code != 0 {
		t.Fatalf("last turn: exit %d: %s", r.code, r.stderr)
	}
	if kills < 2 {
		t.Fatalf("the process was killed after %d archive appends, want several: the test did not aim", kills)
	}

	lines := readHistory(t, h.ws)
	if len(lines) < kills {
		t.Fatalf("%d history entries after %d kills after an append", len(lines), kills)
	}
	holder := map[string]map[int]int{} // session_id -> message -> cursor
	for _, l := range lines {
		if l.SessionKey != "terminal:crash" || l.SessionID == "" || len(l.Range) != 2 {
			t.Errorf("entry %d has no session source: %+v", l.Cursor, l)
			continue
		}
		if holder[l.SessionID] == nil {
			holder[l.SessionID] = map[int]int{}
		}
		for m := l.Range[0]; m < l.Range[1]; m++ {
			if prev, dup := holder[l.SessionID][m]; dup {
				t.Errorf("message %d archived twice: entries %d and %d", m, prev, l.Cursor)
			}
			holder[l.SessionID][m] = l.Cursor
		}
	}
	if len(holder) != 1 {
		t.Errorf("entries name %d session ids, want 1: the session's id must survive the kill", len(holder))
	}

	sent := map[int]int{}
	for _, r := range h.llm.Requests() {
		if !isArchiveCall(r) {
			continue
		}
		text := r.Messages[len(r.Messages)-1].Content
		for i := range turns {
			if strings.Contains(text, fmt.Sprintf("Turn %02d:", i)) {
				sent[i]++
			}
		}
	}
	if len(sent) == 0 {
		t.Fatal("no archive call named a turn")
	}
	for i, n := range sent {
		if n != 1 {
			t.Errorf("turn %d was sent to the archive model %d times, want once", i, n)
		}
	}
}

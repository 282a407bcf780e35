package consolidator

import (
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// chainSession is a conversation whose last 8 messages begin inside a tool
// chain, archived whole (as the idle archive does), then a new user turn:
//
//	0 u0  1 a  2 u1  3 a(calls c1 c2)  4 tool c1  5 tool c2  6 a  7 u2  8 a  9 u3  10 a | 11 now
//
// chain, u2 and u3 are the token sizes of the tool result c1 and of the
// user messages u2 and u3.
func chainSession(t *testing.T, c *Consolidator, chain, u2, u3 int) *fakeSession {
	t.Helper()
	s := newSession("terminal:chain",
		user(words("u0", 10)), assistant(words("", 10)),
		user(words("u1", 10)),
		assistant("", call("c1", "read_file", `{"path":"a"}`), call("c2", "read_file", `{"path":"b"}`)),
		toolResult("c1", "read_file", words("c1", chain)),
		toolResult("c2", "read_file", words("c2", 10)),
		assistant(words("done", 10)),
		user(words("u2", u2)), assistant(words("", 10)),
		user(words("u3", u3)), assistant(words("", 10)),
	)
	if _, err := c.ArchiveTail(t.Context(), s); err != nil || s.lc != 11 {
		t.Fatalf("archive tail: lc %d, %v", s.lc, err)
	}
	s.append(user("now"))
	return s
}

func TestContinuityWindow(t *testing.T) {
	tests := []struct {
		name          string
		cfg           Config
		chain, u2, u3 int
		wantStart     int // index of the first message replayed
	}{
		// The last 8 messages start at 4, a tool result: the window goes
		// back to u1, the user message opening that chain.
		{"fits: cut at the user turn before the chain", baseConfig, 10, 10, 10, 2},
		// With the chain it exceeds the trigger (5000): the window drops
		// that whole turn and starts at the next user message.
		{"shrinks by whole user turns", baseConfig, 4900, 10, 10, 7},
		{"shrinks by two turns", baseConfig, 10, 4900, 10, 9},
		{"nothing fits: nothing kept", baseConfig, 10, 10, 4990, 11},
		// No budget: nothing to fit, the window is whole.
		{"budget off", Config{}, 4900, 4900, 4990, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestConsolidator(t, newFakeModel(t), tt.cfg)
			s := chainSession(t, c, tt.chain, tt.u2, tt.u3)
			p, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED"})
			if err != nil || rep.Rounds != 0 {
				t.Fatal(rep, err)
			}
			start := s.lc - p.Kept
			if start != tt.wantStart {
				t.Fatalf("replay starts at %d (Kept %d), want %d", start, p.Kept, tt.wantStart)
			}
			if s.msgs[start].Role != llm.RoleUser {
				t.Errorf("the window starts at a %s message", s.msgs[start].Role)
			}
			if tt.cfg.ContextWindow > 0 && rep.After > c.trigger {
				t.Errorf("estimate %d with the window, over the trigger %d", rep.After, c.trigger)
			}
			hasNote := strings.Contains(p.System(), continuityNote)
			if hasNote != (p.Kept > 0) || !strings.HasPrefix(p.System(), "FIXED") {
				t.Errorf("Kept %d, system prompt %q", p.Kept, p.System())
			}
			// The window is in the estimate: /status and the next turn agree
			// with Before, and nothing is archived again.
			if tt.cfg.ContextWindow > 0 {
				// Before's may be the byte bound, never below the count.
				if b := c.Status(s, Prompt{Fixed: "FIXED"}); b.Estimate > rep.After+runtimeAllowance || b.Messages != len(s.msgs)-start {
					t.Errorf("Status %+v; Before's estimate %d, %d messages replayed", b, rep.After, len(s.msgs)-start)
				}
			}
			if rep, err := c.After(t.Context(), s, p, Sent{}); err != nil || rep.Rounds != 0 {
				t.Errorf("after the turn: %+v, %v", rep, err)
			}
		})
	}
}

// The exact path and the byte bound agree on the window; a window
// estimated over the bound must not be taken whole on the bound's word.
func TestContinuityWindowEstimate(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := chainSession(t, c, 10, 10, 10)
	p, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED"})
	if err != nil || p.Kept != 9 {
		t.Fatal(p.Kept, rep, err)
	}
	exact := New(nil, nil, baseConfig, nil) // a cold cache and tokenizer
	st := exact.state(s.ID())
	st.sync(0, s.msgs)
	want := int(st.exact(exact.counter, s.msgs, 2, p.counted()))
	if got := c.Status(s, Prompt{Fixed: "FIXED"}).Estimate - runtimeAllowance; got != want {
		t.Errorf("Status estimate %d, want %d: the window and its note counted once", got, want)
	}
	if rep.After < want {
		t.Errorf("Before's estimate %d below the exact count %d", rep.After, want)
	}
}

// The provider's count of a prompt that carried the window is compared
// with our count of that same prompt, window included: the floor ratio is
// the provider's, not inflated by the kept messages.
func TestFloorCountsTheWindow(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := chainSession(t, c, 1000, 10, 10)
	p, _, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED"})
	if err != nil || p.Kept != 9 {
		t.Fatal(p.Kept, err)
	}
	ours := c.Status(s, Prompt{Fixed: "FIXED"}).Estimate - runtimeAllowance
	s.append(assistant("ok"))
	if _, err := c.After(t.Context(), s, p, Sent{PromptTokens: ours * 13 / 10, Messages: len(s.msgs) - 1}); err != nil {
		t.Fatal(err)
	}
	st := c.state(s.ID())
	st.mu.Lock()
	st.resolve(c.counter, s.Messages())
	ratio := st.ratio
	st.mu.Unlock()
	if ratio < 1.29 || ratio > 1.31 {
		t.Errorf("floor ratio %.3f, want 1.3", ratio)
	}
}

// Budget archives across several turns: each round archives from
// LastConsolidated on, never the kept messages again, and the prompt after
// each keeps the last messages in view.
func TestBudgetRoundsNeverArchiveTheWindowAgain(t *testing.T) {
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, baseConfig)
	s := newSession("terminal:rounds")
	var kept []int
	for i := range 30 {
		s.append(user(words(markerOf(i), 400)))
		p, _, err := c.Before(t.Context(), s, Prompt{})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, p.Kept)
		if n := len(s.msgs) - (s.lc - p.Kept); n < min(len(s.msgs), 9) {
			t.Errorf("turn %d: the prompt replays %d messages", i, n)
		}
		s.append(assistant(words("", 400)))
		if _, err := c.After(t.Context(), s, p, Sent{}); err != nil {
			t.Fatal(err)
		}
	}
	tr := transcripts(m)
	if len(tr) < 3 || !slices.ContainsFunc(kept, func(k int) bool { return k > 0 }) {
		t.Fatalf("fixture: %d archive calls", len(tr))
	}
	for i := range s.lc / 2 {
		n := 0
		for _, x := range tr {
			n += strings.Count(x, markerOf(i)+" ")
		}
		if n != 1 {
			t.Errorf("%s archived %d times", markerOf(i), n)
		}
	}
	t.Logf("archive calls %d, last_consolidated %d, kept per turn %v", len(tr), s.lc, kept)
}

func markerOf(i int) string { return "M" + string(rune('A'+i/26)) + string(rune('a'+i%26)) }

package consolidator

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// After an archive the prompt's replay starts at the same message turn
// after turn, so that providers' prompt caches can serve it: the
// continuity window stays whole while the conversation after it is short,
// and goes at once when that part alone holds the last keepMessages
// messages.
func TestContinuityWindowStaysPutBetweenArchives(t *testing.T) {
	c, _ := newTestConsolidator(t, newFakeModel(t), baseConfig)
	s := chainSession(t, c, 10, 10, 10) // 11 messages archived, then "now"
	var starts []int
	for turn := range 6 {
		p, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "FIXED"})
		if err != nil || rep.Rounds != 0 {
			t.Fatal(rep, err)
		}
		starts = append(starts, s.lc-p.Kept)
		s.append(assistant(words("", 10)))
		if _, err := c.After(t.Context(), s, p, Sent{}); err != nil {
			t.Fatal(err)
		}
		s.append(user(words("next", 10+turn)))
	}
	// Turns 1–4 have 1, 3, 5 and 7 unarchived messages: the window from u1
	// (message 2) stays; turn 5 has 9, and the replay starts at lc.
	want := []int{2, 2, 2, 2, 11, 11}
	for i := range want {
		if starts[i] != want[i] {
			t.Fatalf("replay starts by turn %v, want %v", starts, want)
		}
	}
}

// The conversation budget archives a conversation when its messages pass
// it, whatever the window, down to about half of it; the system prompt
// (memory files, tools) does not count against it, and the window's hard
// limit still applies.
func TestConversationBudget(t *testing.T) {
	cfg := Config{ContextWindow: 128000, MaxTokens: 4096, Model: "archiver", ConversationTokens: 4000}
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, cfg)
	// Large memory files: 20,000 tokens outside the conversation.
	fixed := Prompt{Fixed: words("memory", 20000)}
	s := newSession("terminal:budget")
	conv := func() int {
		st := c.state(s.ID())
		st.mu.Lock()
		defer st.mu.Unlock()
		_, msgs, lc := held(s)
		n := 0
		for _, msg := range msgs[lc:] {
			n += c.counter.Message(msg)
		}
		return n
	}
	largest := 0
	for i := range 40 {
		s.append(user(words(markerOf(i), 150)))
		p, rep, err := c.Before(t.Context(), s, fixed)
		if err != nil || rep.OverLimit {
			t.Fatal(rep, err)
		}
		if rep.Rounds > 0 {
			if got := conv(); got > 2000 {
				t.Errorf("turn %d: archived down to %d conversation tokens, want at most half the budget (2000)", i, got)
			}
		}
		largest = max(largest, conv())
		s.append(assistant(words("", 150)))
		if _, err := c.After(t.Context(), s, p, Sent{}); err != nil {
			t.Fatal(err)
		}
	}
	calls := len(m.Requests())
	// 40 turns of about 310 tokens are 12,400 tokens: archived every 2,000
	// or so, about five times, never for the 20,000 of memory files.
	if calls < 3 || calls > 8 {
		t.Errorf("%d archive calls over 40 turns, want about one per 2,000 conversation tokens", calls)
	}
	if largest > 4000+320 {
		t.Errorf("the conversation reached %d tokens; the budget is 4000 (one turn over at most)", largest)
	}
	b := c.Status(s, fixed)
	if b.Trigger > 20000+4000+100 || b.Trigger < 24000 || b.Target > b.Trigger-1900 {
		t.Errorf("Status thresholds %+v, want about the fixed part plus the budget and plus half of it", b)
	}

	// 0 keeps the window's rule: 40 such turns fit in half of 128K.
	c0, _ := newTestConsolidator(t, newFakeModel(t), Config{ContextWindow: 128000, MaxTokens: 4096})
	s0 := newSession("terminal:nobudget")
	for i := range 40 {
		s0.append(user(words(markerOf(i), 150)), assistant(words("", 150)))
	}
	s0.append(user("now"))
	if _, rep, err := c0.Before(t.Context(), s0, fixed); err != nil || rep.Rounds != 0 {
		t.Errorf("without a conversation budget: %+v, %v", rep, err)
	}

	// A budget past the window: the window's ratio and hard limit decide.
	small := Config{ContextWindow: 10000, MaxTokens: 1000, ConversationTokens: 50000}
	c1, _ := newTestConsolidator(t, newFakeModel(t), small)
	if b := c1.Status(newSession("terminal:x", user("hi")), Prompt{}); b.Trigger != 5000 || b.Limit != 7976 {
		t.Errorf("budget past the window: %+v, want the window's trigger 5000 and limit 7976", b)
	}
}

// Under the conversation budget the prompt still carries the session's
// last keepMessages messages from a user message, with the note about kept
// messages exactly when it keeps archived ones.
func TestConversationBudgetKeepsContinuity(t *testing.T) {
	cfg := Config{ContextWindow: 128000, MaxTokens: 4096, ConversationTokens: 3000}
	c, _ := newTestConsolidator(t, newFakeModel(t), cfg)
	s := newSession("terminal:cont")
	for i := range 30 {
		s.append(user(words(markerOf(i), 100)))
		p, _, err := c.Before(t.Context(), s, Prompt{})
		if err != nil {
			t.Fatal(err)
		}
		replayed := s.msgs[s.lc-p.Kept:]
		if len(replayed) < min(len(s.msgs), keepMessages) || replayed[0].Role != llm.RoleUser {
			t.Fatalf("turn %d: %d messages replayed from a %s message", i, len(replayed), replayed[0].Role)
		}
		if strings.Contains(p.System(), continuityNote) != (p.Kept > 0) {
			t.Errorf("turn %d: note and Kept %d disagree", i, p.Kept)
		}
		s.append(assistant(words("", 100)))
		if _, err := c.After(t.Context(), s, p, Sent{}); err != nil {
			t.Fatal(err)
		}
	}
	if s.lc == 0 {
		t.Fatal("the budget never archived")
	}
}

// Archive calls of every conversation carry one cache key: they open with
// the same instructions, which a provider's prompt cache can then serve.
func TestArchiveCallsShareACacheKey(t *testing.T) {
	m := newFakeModel(t)
	c, _ := newTestConsolidator(t, m, baseConfig)
	for _, key := range []string{"slack:C1", "terminal:direct"} {
		s := newSession(key, user(words("u", 20)), assistant(words("", 20)))
		if _, err := c.ArchiveTail(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d archive calls", len(reqs))
	}
	for i, r := range reqs {
		if r.CacheKey != ArchiveCacheKey {
			t.Errorf("archive call %d: cache key %q, want %q", i, r.CacheKey, ArchiveCacheKey)
		}
	}
}

// A conversation of prose holding more bytes than its budget has tokens
// (12.6 KB under 12,000 tokens, about 3,000 of them) is settled by the
// bound alone (tokens.Bound): no archive and no vocabulary loaded, as a
// one-shot chat in it needs none.
func TestProseOverItsBudgetInBytesNeedsNoTokenizer(t *testing.T) {
	cfg := Config{ContextWindow: 128000, MaxTokens: 4096, Model: "archiver", ConversationTokens: 12000}
	c, _ := newTestConsolidator(t, newFakeModel(t), cfg)
	s := newSession("k")
	size := 0
	for size < 12600 {
		u, a := "Ana prefers tea over coffee, and she answers email only in the mornings.", "Noted: tea, not coffee, and email in the mornings only."
		s.append(user(u), assistant(a))
		size += len(u) + len(a)
	}
	_, rep, err := c.Before(t.Context(), s, Prompt{Fixed: "system prompt"})
	if err != nil || rep.Rounds != 0 {
		t.Fatalf("archived below budget: %+v, %v", rep, err)
	}
	if c.counter.Loaded() {
		t.Errorf("%d bytes of prose loaded the tokenizer under a budget of %d tokens", size, cfg.ConversationTokens)
	}
}

package gateway

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// continuityEnv is a gateway with a real consolidator over the workspace's
// history.jsonl, idle compaction after 15 minutes and a clock the test
// moves with advance. Archive calls get a summary listing the markers
// (M01, M02, …) of the messages they were given; chat calls an
// acknowledgement.
func continuityEnv(t *testing.T, window int) (env *testEnv, advance func(time.Duration)) {
	t.Helper()
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	markers := regexp.MustCompile(`M\d\d`)
	env = newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		if req.Purpose == llm.PurposeArchive {
			seen := slices.Compact(markers.FindAllString(last, -1))
			if len(seen) == 0 {
				return textReply("(nothing)"), nil
			}
			return textReply("- saw " + strings.Join(seen, " ")), nil
		}
		return textReply("noted"), nil
	}, func(c *Config, d *Deps) {
		c.IdleCompactAfter = 15 * time.Minute
		d.Now = clock
	})
	env.sessions.SetClock(clock)
	useRealConsolidator(t, env, window, 500)
	return env, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

// chatRequests returns the chat calls the model received, in order.
func chatRequests(env *testEnv) []llm.Request {
	var out []llm.Request
	for _, r := range env.model.Requests() {
		if r.Purpose != llm.PurposeArchive {
			out = append(out, r)
		}
	}
	return out
}

// contents lists msgs as "role:text", each text as said, without the
// runtime header and sender names (TestPromptPrefixStable pins those).
func contents(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role + ":" + llmtest.Spoken(m.Content)
	}
	return out
}

// After the idle archive the next turn still sees the conversation it
// continues, not only the archive's summary; the note about it is true.
func TestConversationSurvivesTheIdleArchive(t *testing.T) {
	env, advance := continuityEnv(t, 128000)
	for _, text := range []string{"M01 option A is cheap", "M02 option B is fast", "M03 I pick option B"} {
		if r := wait(t, must(env.g.Submit(t.Context(), inbound("coffee", text)))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	advance(20 * time.Minute)
	env.g.compactIdle() // queued in the session's worker, before the next turn
	if r := wait(t, must(env.g.Submit(t.Context(), inbound("coffee", "which option did I pick?")))); r.Err != nil {
		t.Fatal(r.Err)
	}

	sess, err := env.sessions.Get("test:coffee")
	if err != nil {
		t.Fatal(err)
	}
	if lc := sess.LastConsolidated(); lc != 6 {
		t.Fatalf("last_consolidated = %d, want 6: the idle archive did not run first", lc)
	}
	reqs := chatRequests(env)
	last := reqs[len(reqs)-1]
	want := []string{
		"user:M01 option A is cheap", "assistant:noted",
		"user:M02 option B is fast", "assistant:noted",
		"user:M03 I pick option B", "assistant:noted",
		"user:which option did I pick?",
	}
	if got := contents(last.Messages[1:]); !slices.Equal(got, want) {
		t.Errorf("the turn after the idle archive replayed\n%q\nwant\n%q", got, want)
	}
	sys := last.Messages[0].Content
	if !strings.Contains(sys, "- saw M01 M02 M03") || !strings.Contains(sys, "they are archived already") {
		t.Errorf("system prompt lacks the archive entry or the note on the kept messages:\n%s", sys)
	}

	// Kept in view is not archived again: with the conversation idle once
	// more, only the new turn is archived. The next turn runs after the
	// archive job, in the same worker.
	advance(20 * time.Minute)
	env.g.compactIdle()
	wait(t, must(env.g.Submit(t.Context(), inbound("coffee", "thanks"))))
	var transcripts []string
	for _, r := range env.model.Requests() {
		if r.Purpose == llm.PurposeArchive {
			transcripts = append(transcripts, r.Messages[len(r.Messages)-1].Content)
		}
	}
	if len(transcripts) != 2 || strings.Contains(transcripts[1], "M0") || !strings.Contains(transcripts[1], "which option") {
		t.Errorf("archive calls: %q", transcripts)
	}
}

// Archiving by budget, turn after turn: every prompt still carries the
// session's last messages (at least 8, from a user turn on), and every
// message reaches history.jsonl exactly once.
func TestBudgetArchiveKeepsTheLastMessagesAndArchivesEachOnce(t *testing.T) {
	env, _ := continuityEnv(t, 8000)
	const turns = 24
	for i := range turns {
		text := fmt.Sprintf("M%02d", i) + strings.Repeat(" hello", 300)
		if r := wait(t, must(env.g.Submit(t.Context(), inbound("busy", text)))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	sess, err := env.sessions.Get("test:busy")
	if err != nil {
		t.Fatal(err)
	}
	reqs := chatRequests(env)
	if len(reqs) != turns {
		t.Fatalf("%d chat calls, want %d", len(reqs), turns)
	}
	for i, r := range reqs {
		// Turn i sees 2i+1 messages in the session; the last 8 start at an
		// assistant reply, so their turn starts one earlier.
		if got, want := len(r.Messages)-1, min(2*i+1, 9); got < want {
			t.Errorf("turn %d replayed %d messages, want at least %d", i, got, want)
		}
		if r.Messages[1].Role != llm.RoleUser {
			t.Errorf("turn %d's replay starts with %s", i, r.Messages[1].Role)
		}
	}

	entries, err := openHistory(t, env).Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	lc := sess.LastConsolidated()
	if len(entries) < 3 || lc < 12 {
		t.Fatalf("fixture: %d entries, last_consolidated %d; want several archive rounds", len(entries), lc)
	}
	for i := range lc / 2 {
		m := fmt.Sprintf("M%02d", i)
		n := 0
		for _, e := range entries {
			n += strings.Count(e.Content, m)
		}
		if n != 1 {
			t.Errorf("%s is in %d history entries, want 1", m, n)
		}
	}
	for i := lc / 2; i < turns; i++ {
		for _, e := range entries {
			if m := fmt.Sprintf("M%02d", i); strings.Contains(e.Content, m) {
				t.Errorf("%s archived although after last_consolidated %d", m, lc)
			}
		}
	}
}

// /new starts from nothing: no continuity across conversations.
func TestNewStartsFromNothing(t *testing.T) {
	env, _ := continuityEnv(t, 128000)
	for _, text := range []string{"M01 the blue door", "M02 the red door", "/new", "hello again"} {
		if r := wait(t, must(env.g.Submit(t.Context(), inbound("fresh", text)))); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	reqs := chatRequests(env)
	if got := contents(reqs[len(reqs)-1].Messages[1:]); !slices.Equal(got, []string{"user:hello again"}) {
		t.Errorf("the first turn after /new replayed %q", got)
	}
	if sys := reqs[len(reqs)-1].Messages[0].Content; strings.Contains(sys, "they are archived already") {
		t.Errorf("the system prompt after /new speaks of kept messages:\n%s", sys)
	}
}

// longConversation is n turns: a question, every third one answered after
// a tool call, then the answer.
func longConversation(n int) []llm.Message {
	var msgs []llm.Message
	for i := range n {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprint("question ", i)})
		if i%3 == 0 {
			id := fmt.Sprint("call", i)
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"x"}`}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "read_file", Content: fmt.Sprint("file ", i)})
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprint("answer ", i)})
	}
	return msgs
}

// A long, mostly archived session, loaded again from disk (from its tail
// mark), gives the next turn the same prompt as the session that stayed in
// memory: the unarchived messages and the continuity window before them.
func TestLongSessionPromptSurvivesARestart(t *testing.T) {
	prompt := func(restart bool) []string {
		env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) {
			return textReply("ok"), nil
		}, nil)
		useRealConsolidator(t, env, 128000, 4096)
		sess, err := env.sessions.Get("test:long")
		if err != nil {
			t.Fatal(err)
		}
		msgs := longConversation(400)
		if err := sess.Append(msgs...); err != nil {
			t.Fatal(err)
		}
		// Three unarchived messages: the window reaches back before them.
		if err := sess.SetLastConsolidated(len(msgs)-3, "- earlier"); err != nil {
			t.Fatal(err)
		}
		if restart {
			if !env.sessions.Evict(sess) {
				t.Fatal("not evicted")
			}
			again, err := env.sessions.Get("test:long")
			if err != nil {
				t.Fatal(err)
			}
			if base, _ := again.Tail(); base == 0 || again.Len() != len(msgs) {
				t.Fatalf("reloaded: base %d, len %d", base, again.Len())
			}
		}
		if r := wait(t, must(env.g.Submit(t.Context(), inbound("long", "and now?")))); r.Err != nil {
			t.Fatal(r.Err)
		}
		reqs := chatRequests(env)
		return contents(reqs[len(reqs)-1].Messages[1:])
	}
	stayed, reloaded := prompt(false), prompt(true)
	if len(stayed) < 8 {
		t.Fatalf("fixture: the prompt replays %d messages, want the continuity window too:\n%q", len(stayed), stayed)
	}
	if !slices.Equal(stayed, reloaded) {
		t.Errorf("after a restart the turn replayed\n%q\nwithout one\n%q", reloaded, stayed)
	}
}

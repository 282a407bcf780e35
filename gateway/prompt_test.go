package gateway

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// TestSystemPromptLayout pins the prompt byte for byte: the system prompt
// is the fixed prefix (identity, then the workspace files in order) and the
// session's Recent history and last archive summary; the runtime header
// (time, channel, conversation, sender) opens the newest user message only
// and is not kept, so the earlier messages replay as they were said.
func TestSystemPromptLayout(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(_ *Config, d *Deps) { d.Now = func() time.Time { return now } })
	write := func(rel, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(env.ws, filepath.FromSlash(rel)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("AGENTS.md", "Be brief.\n")
	write("SOUL.md", "\nCalm and exact.\n")
	write("USER.md", "Ana runs the release.\n")
	write("memory/MEMORY.md", "The staging host is blue.\n")
	useRealConsolidator(t, env, 128000, 4096)
	store := openHistory(t, env)
	if _, err := store.Append("- Ana prefers tea", "test:layout"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append("- another chat's fact", "test:other"); err != nil {
		t.Fatal(err)
	}
	entries, err := store.Since(0, 0)
	if err != nil || len(entries) != 2 {
		t.Fatal(entries, err)
	}
	sess, err := env.sessions.Get("test:layout")
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.SetLastConsolidated(0, "- the last summary"); err != nil {
		t.Fatal(err)
	}

	prefix := identity +
		"\n\n# Instructions (AGENTS.md)\n\nBe brief." +
		"\n\n# Soul (SOUL.md)\n\nCalm and exact." +
		"\n\n# Users (USER.md)\n\nAna runs the release." +
		"\n\n# Long-term memory (memory/MEMORY.md)\n\nThe staging host is blue."
	history := "\n\n# Recent history\n\nNotes archived from earlier exchanges in this chat, not yet folded into long-term memory:\n\n" +
		"- [" + entries[0].Timestamp + "] - Ana prefers tea" +
		"\n\n# Last archive summary of this conversation\n\n- the last summary"
	header := "[Now: Tuesday 2026-11-24 09:30 UTC. Channel: test. Conversation: test:layout. Sender: alice (U1).]\n\n"

	for i, text := range []string{"first", "second"} {
		r := wait(t, must(env.g.Submit(t.Context(), inbound("layout", text))))
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		reqs := env.model.Requests()
		msgs := reqs[len(reqs)-1].Messages
		sys := msgs[0]
		if sys.Role != llm.RoleSystem {
			t.Fatalf("turn %d: first message is %s", i, sys.Role)
		}
		if want := prefix + history; sys.Content != want {
			t.Errorf("turn %d: system prompt\n%s\nwant\n%s", i, sys.Content, want)
		}
		want := []string{"user:" + header + "[alice] first"}
		if i == 1 {
			want = []string{"user:[alice] first", "assistant:ok", "user:" + header + "[alice] second"}
		}
		var got []string
		for _, m := range msgs[1:] {
			got = append(got, m.Role+":"+m.Content)
		}
		if !slices.Equal(got, want) {
			t.Errorf("turn %d: messages\n%q\nwant\n%q", i, got, want)
		}
	}

	// A summary already shown in the Recent history is not repeated.
	if err := sess.SetLastConsolidated(sess.LastConsolidated(), "- Ana prefers tea"); err != nil {
		t.Fatal(err)
	}
	wait(t, must(env.g.Submit(t.Context(), inbound("layout", "third"))))
	reqs := env.model.Requests()
	if got := reqs[len(reqs)-1].Messages[0].Content; strings.Contains(got, "# Last archive summary") ||
		!strings.HasPrefix(got, prefix+"\n\n# Recent history\n\n") || !strings.HasSuffix(got, "- Ana prefers tea") {
		t.Errorf("summary inside the Recent history repeated or moved:\n%s", got)
	}
}

// useRealConsolidator wires env's gateway with a consolidator over the
// workspace's history.jsonl and the given budget.
func useRealConsolidator(t testing.TB, env *testEnv, window, maxTokens int) *consolidator.Consolidator {
	t.Helper()
	cons := consolidator.New(env.model, openHistory(t, env), consolidator.Config{ContextWindow: window, MaxTokens: maxTokens}, nil)
	env.g.deps.Consolidator = cons
	return cons
}

// openHistory opens the workspace's history store (several stores on one
// file are fine: they share the file lock, and each re-reads what changed).
func openHistory(t testing.TB, env *testEnv) *history.Store {
	t.Helper()
	store, err := history.Open(filepath.Join(env.ws, "memory"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func TestReplayKeepsTheWireValid(t *testing.T) {
	st, err := session.NewStore(filepath.Join(t.TempDir(), "s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _ := st.Get("k")
	msgs := []llm.Message{
		{Role: llm.RoleTool, ToolCallID: "orphan", Content: "left from an archived turn"},
		{Role: llm.RoleAssistant, Content: "before any user"},
		{Role: llm.RoleUser, Content: "u1"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "read_file"}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "ok"},
		{Role: llm.RoleAssistant, Content: "partial", ToolCalls: []llm.ToolCall{{ID: "crashed", Name: "read_file"}}},
		{Role: llm.RoleUser, Content: "u2"},
	}
	if err := s.Append(msgs...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range replay(s, s.LastConsolidated()) {
		tag := m.Role + ":" + m.Content
		if len(m.ToolCalls) > 0 {
			tag += "+calls"
		}
		got = append(got, tag)
	}
	want := "user:u1,assistant:+calls,tool:ok,assistant:partial,user:u2"
	if strings.Join(got, ",") != want {
		t.Errorf("replay = %s\nwant     %s", strings.Join(got, ","), want)
	}
}

// An image sent with a message reaches the model, through the real client,
// as an image_url part on that turn's user message only; the session file
// keeps a marker naming it and not its bytes, and the next turn's replay
// carries the marker (which says the image is no longer visible), not the
// image.
func TestImagesShownForTheirTurnOnly(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR chart pixels")
	srv := llmtest.New(t)
	srv.Push(llmtest.Text("A bar chart."), llmtest.Text("Sales went up."))
	client := llm.New(llm.Config{BaseURL: srv.URL(), Model: "vision", Timeout: 10 * time.Second})
	dir := filepath.Join(t.TempDir(), "sessions")
	store, err := session.NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	env := newTestEnv(t, nil, func(_ *Config, d *Deps) { d.Model, d.Sessions = client, store })

	in := inbound("s1", "what is this?")
	in.Images = []channels.Image{{Name: "chart.png", MIME: "image/png", Data: png}}
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, done); r.Err != nil || r.Reply != "A bar chart." {
		t.Fatalf("turn 1: %+v", r)
	}
	done, err = env.g.Submit(t.Context(), inbound("s1", "and the trend?"))
	if err != nil {
		t.Fatal(err)
	}
	if r := wait(t, done); r.Err != nil {
		t.Fatalf("turn 2: %+v", r)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.Problem != "" {
			t.Fatalf("request %d refused by the fake: %s", i, r.Problem)
		}
	}
	const marker = "[image chart.png (PNG, 29 bytes): attached to this message; visible only while answering it, not kept]"
	first := reqs[0].Messages[len(reqs[0].Messages)-1]
	if first.Role != llm.RoleUser || len(first.Images) != 1 || !bytes.Equal(first.Images[0].Data, png) || first.Images[0].MIME != "image/png" {
		t.Errorf("turn 1's user message: role %s, images %+v", first.Role, first.Images)
	}
	if llmtest.Spoken(first.Content) != "what is this?\n\n"+marker {
		t.Errorf("turn 1's user message text = %q", first.Content)
	}
	var replayed bool
	for _, m := range reqs[1].Messages {
		if len(m.Images) > 0 {
			t.Errorf("turn 2 still sends an image on a %s message %q", m.Role, m.Content)
		}
		replayed = replayed || strings.Contains(m.Content, marker)
	}
	if !replayed {
		t.Error("turn 2's replay lacks the marker naming the image")
	}

	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no session file")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("IHDR")) || bytes.Contains(raw, []byte("iVBOR")) {
			t.Errorf("%s holds the image bytes", filepath.Base(f))
		}
		if !bytes.Contains(raw, []byte("chart.png")) {
			t.Errorf("%s does not name the image", filepath.Base(f))
		}
	}
}

// A message that is saved without being answered (cut for its length)
// names its images as never shown.
func TestImagesOfAnUnansweredMessageAreNamed(t *testing.T) {
	env := newTestEnv(t, nil, func(c *Config, _ *Deps) { c.MaxMessageBytes = 8 })
	in := inbound("s1", "far too long for the limit")
	in.Images = []channels.Image{{Name: "a.png", MIME: "image/png", Data: []byte("x")}}
	done, err := env.g.Submit(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	sess, err := env.sessions.Get("test:s1")
	if err != nil {
		t.Fatal(err)
	}
	if msgs := sess.Messages(); len(msgs) == 0 || !strings.HasSuffix(msgs[0].Content, "\n\n[image a.png: sent with this message, never shown to the assistant]") {
		t.Errorf("saved messages = %+v", msgs)
	}
}

// At a human pace — a minute between turns, two people taking turns and
// then a third joining — every chat request repeats the one before it byte
// for byte up to that request's newest message: the same tools, the same
// system prompt, every earlier message rendered as before (a person's name
// does not appear on earlier messages once someone else speaks). Only the
// newest message changes, losing its runtime header. A provider's prompt
// cache serves all of it.
func TestPromptPrefixStable(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC)
	var mu sync.Mutex
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(_ *Config, d *Deps) {
			d.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		})
	useRealConsolidator(t, env, 128000, 4096)
	speakers := [][2]string{{"U1", "Ana"}, {"U1", "Ana"}, {"U2", "Bob"}, {"U1", "Ana"}, {"U2", "Bob"}, {"U3", "Cy"}, {"U1", "Ana"}}
	for i, who := range speakers {
		in := inbound("team", fmt.Sprintf("message %d from %s", i, who[1]))
		in.SenderID, in.SenderName = who[0], who[1]
		if r := wait(t, must(env.g.Submit(t.Context(), in))); r.Err != nil {
			t.Fatal(r.Err)
		}
		mu.Lock()
		now = now.Add(time.Minute)
		mu.Unlock()
	}
	reqs := env.model.Requests()
	if len(reqs) != len(speakers) {
		t.Fatalf("%d requests for %d turns", len(reqs), len(speakers))
	}
	for i := 1; i < len(reqs); i++ {
		prev, cur := reqs[i-1], reqs[i]
		if !reflect.DeepEqual(prev.Tools, cur.Tools) {
			t.Errorf("turn %d: the tools changed", i)
		}
		n := len(prev.Messages) - 1
		if len(cur.Messages) != n+3 {
			t.Fatalf("turn %d: %d messages after %d", i, len(cur.Messages), len(prev.Messages))
		}
		for j := range n {
			if cur.Messages[j].Role != prev.Messages[j].Role || cur.Messages[j].Content != prev.Messages[j].Content {
				t.Errorf("turn %d: message %d changed:\n%q\nwas\n%q", i, j, cur.Messages[j].Content, prev.Messages[j].Content)
			}
		}
		header, said, ok := strings.Cut(prev.Messages[n].Content, "]\n\n")
		if !ok || !strings.HasPrefix(header, "[Now: ") || cur.Messages[n].Content != said {
			t.Errorf("turn %d: the last turn's message replays as\n%q\nwas sent as\n%q", i, cur.Messages[n].Content, prev.Messages[n].Content)
		}
		who := speakers[i]
		wantHeader := fmt.Sprintf("[Now: Tuesday 2026-11-24 09:%02d UTC. Channel: test. Conversation: test:team. Sender: %s (%s).]\n\n[%s] message %d from %s",
			30+i, who[1], who[0], who[1], i, who[1])
		if got := cur.Messages[len(cur.Messages)-1].Content; got != wantHeader {
			t.Errorf("turn %d: newest message\n%q\nwant\n%q", i, got, wantHeader)
		}
	}
}

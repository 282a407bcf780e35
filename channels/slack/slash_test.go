package slack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

var testCommands = []channels.Command{
	{Name: "help"}, {Name: "new"}, {Name: "status"}, {Name: "stop"},
	{Name: "dream"}, {Name: "dream-log", Arg: "sha"}, {Name: "dream-restore", Arg: "sha", Admin: true},
}

// A slash command (under the configured prefix) is acked, reaches the
// gateway as "/name args" from the Slack user, and its answer goes back
// through the response_url, ephemeral; it has no message to react to or
// stream into.
func TestSlashCommandAnsweredThroughResponseURL(t *testing.T) {
	h := startHarness(t, harnessOpts{
		cfg:  func(c *Config) { c.CommandPrefix = "dg-"; c.Commands = testCommands },
		sink: echoReplies(t),
	})
	env, trig, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/dg-dream-log", Text: "1a2b", User: "U1", Channel: "C1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitAcked(h.ctx(), env); err != nil {
		t.Fatal(err)
	}
	in := h.sink.next(t)
	if in.Text != "/dream-log 1a2b" || in.SenderID != "U1" || in.ChatID != "C1" || in.SessionKey != "slack:C1" || in.ThreadID != "" {
		t.Errorf("inbound = %+v", in)
	}
	resps, err := h.fake.WaitResponses(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := resps[0]; r.TriggerID != trig || r.Text != "re: /dream-log 1a2b" || r.ResponseType != "ephemeral" {
		t.Errorf("response = %+v", r)
	}
	if len(h.fake.Posts()) != 0 {
		t.Errorf("a slash command's answer was posted to the channel: %+v", h.fake.Posts())
	}
	if h.a.StartStream(in) != nil {
		t.Error("a slash command got a stream")
	}
	h.a.StartTyping(t.Context(), in)()
	if n := h.fake.CallCount("reactions.add"); n != 0 {
		t.Errorf("reactions.add called %d times for a slash command", n)
	}
}

// A long /dream: progress lines take at most their share of the
// response_url's five uses, the answer the rest, and what no longer fits
// goes by chat.postEphemeral.
func TestSlashCommandProgressAndLongAnswer(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	_, _, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/dream", User: "U1", Channel: "D1"})
	if err != nil {
		t.Fatal(err)
	}
	in := h.sink.next(t)
	ctx := h.ctx()
	for _, p := range []string{"Archiving…", "Dreaming…", "Editing…", "One too many…"} {
		if err := h.a.Send(ctx, channels.ReplyTo(in, channels.KindProgress, p)); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("a line of the report\n", 8000) // about 5 parts
	if err := h.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, long)); err != nil {
		t.Fatal(err)
	}
	resps := h.fake.Responses()
	if len(resps) != fakeslack.ResponseURLUses || resps[0].Text != "Archiving…" || resps[2].Text != "Editing…" {
		t.Fatalf("responses = %d, first %+v", len(resps), resps[0])
	}
	eph := h.fake.Ephemerals()
	if len(eph) == 0 || eph[0].User != "U1" || eph[0].Channel != "D1" {
		t.Fatalf("ephemerals = %+v, want the rest of the answer for U1", eph)
	}
	got := 0
	for _, r := range resps[3:] {
		got += strings.Count(r.Text, "a line of the report")
	}
	for _, e := range eph {
		got += strings.Count(e.Text, "a line of the report")
	}
	if got != 8000 {
		t.Errorf("the answer arrived with %d of 8000 lines", got)
	}
}

// Slash commands obey allowFrom; a retried envelope runs once; a command
// without the prefix the config asks for still maps by name.
func TestSlashCommandFilters(t *testing.T) {
	h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.AllowFrom = []string{"U1"} }})
	if _, _, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/status", User: "U2", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	resps, err := h.fake.WaitResponses(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if resps[0].Text != channels.NotAllowedNotice {
		t.Errorf("refusal = %q", resps[0].Text)
	}
	for range 2 {
		if _, _, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/new", User: "U1", Channel: "C1", TriggerID: "t-same"}); err != nil {
			t.Fatal(err)
		}
	}
	// A name that is no command word (only the prefix) never reaches the
	// gateway as chat.
	if _, _, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/", Text: "hello model", User: "U1", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	resps, err = h.fake.WaitResponses(h.ctx(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resps[1].Text, "I don't know the command /.") {
		t.Errorf("odd command answered %q", resps[1].Text)
	}
	if got := h.sentinel("U1"); len(got) != 1 || got[0].Text != "/new" {
		t.Errorf("delivered %+v, want one /new", got)
	}
}

// /help's form on Slack: the declared slash command, under the prefix;
// Slack's own /status only after a mention unless prefixed.
func TestCommandForm(t *testing.T) {
	tests := []struct {
		prefix, name, want string
	}{
		{"", "/dream", "/dream"},
		{"", "/status", "@dreambot /status"},
		{"dg-", "/status", "/dg-status"},
		{"dg-", "/dream-log", "/dg-dream-log"},
		{"", "/undeclared", "@dreambot /undeclared"},
	}
	for _, tt := range tests {
		t.Run(tt.prefix+tt.name, func(t *testing.T) {
			h := startHarness(t, harnessOpts{cfg: func(c *Config) { c.CommandPrefix = tt.prefix; c.Commands = testCommands }})
			if got := h.a.CommandForm(tt.name); got != tt.want {
				t.Errorf("CommandForm(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	if !strings.Contains((&Adapter{}).CommandNote(), "/new") {
		t.Error("the note does not show the mention form")
	}
}

// A slash command's answer that falls back to chat.postEphemeral (its
// response_url spent) waits out a rate limit there, as a reply does,
// instead of being lost.
func TestSlashAnswerEphemeralWaitsOutARateLimit(t *testing.T) {
	h := startHarness(t, harnessOpts{})
	_, _, err := h.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/dream", User: "U1", Channel: "D1"})
	if err != nil {
		t.Fatal(err)
	}
	in := h.sink.next(t)
	ctx := h.ctx()
	for i := range fakeslack.ResponseURLUses {
		if err := h.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, strings.Repeat("x", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	h.fake.RateLimitNextEphemeral(time.Second)
	if err := h.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, "the last part")); err != nil {
		t.Fatalf("send after the rate limit: %v", err)
	}
	eph := h.fake.Ephemerals()
	if len(eph) != 1 || eph[0].Text != "the last part" || eph[0].User != "U1" {
		t.Fatalf("ephemerals = %+v", eph)
	}
	if n := h.fake.CallCount("chat.postEphemeral"); n != 2 {
		t.Errorf("chat.postEphemeral called %d times, want 2 (the 429, then the post)", n)
	}
}

// A slash command accepted before a restart is answered after it through
// its response_url, ephemeral, as it would have been: the response_url is
// kept in the reply handles (here shared as the store shares them between
// a process and its restart, or another process), and its uses are
// counted across both, so the restarted process keeps within Slack's five.
func TestSlashCommandAnsweredAfterARestart(t *testing.T) {
	handles := &channels.MemoryReplyHandles{}
	withHandles := func(c *Config) { c.Handles = handles }
	before := startHarness(t, harnessOpts{cfg: withHandles})
	_, trig, err := before.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/dream", User: "U1", Channel: "C1"})
	if err != nil {
		t.Fatal(err)
	}
	in := before.sink.next(t)
	ctx := before.ctx()
	for _, p := range []string{"Archiving…", "Dreaming…"} {
		if err := before.a.Send(ctx, channels.ReplyTo(in, channels.KindProgress, p)); err != nil {
			t.Fatal(err)
		}
	}
	before.cancel()
	if err := before.result(); err != nil {
		t.Fatal(err)
	}

	after := startHarness(t, harnessOpts{cfg: withHandles, server: before.fake})
	if err := after.a.Send(ctx, channels.ReplyTo(in, channels.KindProgress, "Editing…")); err != nil {
		t.Fatal(err)
	}
	if err := after.a.Send(ctx, channels.ReplyTo(in, channels.KindProgress, "One too many…")); err != nil {
		t.Fatal(err)
	}
	if err := after.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, "Dream: 1 change to MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	resps := after.fake.Responses()
	var texts []string
	for _, r := range resps {
		if r.TriggerID != trig || r.ResponseType != "ephemeral" {
			t.Errorf("response %+v, want trigger %s, ephemeral", r, trig)
		}
		texts = append(texts, r.Text)
	}
	if want := []string{"Archiving…", "Dreaming…", "Editing…", "Dream: 1 change to MEMORY.md"}; !slices.Equal(texts, want) {
		t.Errorf("responses %q, want %q (progress within its three uses across the restart)", texts, want)
	}
	if posts, eph := after.fake.Posts(), after.fake.Ephemerals(); len(posts) != 0 || len(eph) != 0 {
		t.Errorf("the answer after the restart went elsewhere: posts %+v, ephemerals %+v", posts, eph)
	}
}

// Within Slack's limits: a restart past a response_url's 30 minutes
// answers by chat.postEphemeral, to its sender alone, rather than through
// the response_url Slack no longer takes (and never in the channel).
func TestSlashCommandAnsweredAfterARestartPastItsResponseURL(t *testing.T) {
	handles := &channels.MemoryReplyHandles{}
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	o := harnessOpts{cfg: func(c *Config) { c.Handles = handles }, adapter: func(a *Adapter) { a.now = clock.Now }}
	before := startHarness(t, o)
	if _, _, err := before.fake.InjectSlashCommand(fakeslack.SlashCommand{Command: "/dream", User: "U1", Channel: "C1"}); err != nil {
		t.Fatal(err)
	}
	in := before.sink.next(t)
	ctx := before.ctx()
	if err := before.a.Send(ctx, channels.ReplyTo(in, channels.KindProgress, "Dreaming…")); err != nil {
		t.Fatal(err)
	}
	before.cancel()
	if err := before.result(); err != nil {
		t.Fatal(err)
	}

	clock.Advance(responseURLTTL + time.Minute)
	o.server = before.fake
	after := startHarness(t, o)
	if err := after.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, "Dream: 1 change to MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	if r := after.fake.Responses(); len(r) != 1 || r[0].Text != "Dreaming…" {
		t.Errorf("responses %+v, want only the progress line before the restart", r)
	}
	eph := after.fake.Ephemerals()
	if len(eph) != 1 || eph[0] != (fakeslack.Ephemeral{Channel: "C1", User: "U1", Text: "Dream: 1 change to MEMORY.md", At: eph[0].At}) {
		t.Errorf("ephemerals %+v, want the answer to U1 in C1", eph)
	}
	if posts := after.fake.Posts(); len(posts) != 0 {
		t.Errorf("the answer was posted in the channel: %+v", posts)
	}
}

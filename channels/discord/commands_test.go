package discord

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// testCommands mirrors the gateway's table (gateway.Commands).
var testCommands = []channels.Command{
	{Name: "help", Description: "list the commands"},
	{Name: "new", Description: "start a new conversation"},
	{Name: "stop", Description: "stop the answer being worked on"},
	{Name: "status", Description: "model, tokens and Dream"},
	{Name: "dream", Description: "run Dream now"},
	{Name: "dream-log", Description: "the latest Dream commit, or the one named", Arg: "sha"},
	{Name: "dream-restore", Description: "list Dream commits, or undo one", Arg: "sha", Admin: true},
}

var testCommits = []DreamCommit{
	{SHA: "ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12", Subject: "dream: 2 changes to MEMORY.md"},
	{SHA: "ff00ee11dd22cc33bb44aa5566778899aabbccdd", Subject: "dream: learned the user's timezone"},
	{SHA: "abffffff00000000000000000000000000000000", Subject: "init: memory store"},
}

func commandOpts() harnessOpts {
	return harnessOpts{cfg: Config{
		Commands: testCommands,
		DreamLog: func(ctx context.Context, asker audience.Audience, limit int) ([]DreamCommit, error) {
			// The commits are the public channels' of G1: another
			// audience may see none of them.
			if asker != (audience.Audience{Kind: audience.Team, Platform: Name, Team: "G1"}) {
				return nil, nil
			}
			return testCommits[:min(limit, len(testCommits))], nil
		},
	}}
}

// runAnother runs a second adapter against the same fake until it has
// connected, then stops it.
func runAnother(t *testing.T, h *harness, cfg Config) {
	t.Helper()
	cfg.Token, cfg.APIURL = h.fake.Token(), h.fake.URL()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.tune = testTuning
	before := h.fake.Stats().Identifies + h.fake.Stats().Resumes
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, newRecSink()) }()
	if err := h.fake.WaitSessions(h.ctx(), before+1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The gateway's commands are declared as slash commands on start, with a
// sha option that autocompletes, and declared again only when the set
// changed.
func TestSlashCommandsRegisteredWhenChanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, commandOpts())
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	got := h.fake.Commands("")
	if len(got) != len(testCommands) {
		t.Fatalf("registered %d commands, want %d", len(got), len(testCommands))
	}
	for i, c := range got {
		if c.Name != testCommands[i].Name || c.Description == "" {
			t.Fatalf("command %d = %+v", i, c)
		}
		if testCommands[i].Arg == "sha" {
			if len(c.Options) != 1 || c.Options[0].Name != "sha" || !c.Options[0].Autocomplete || c.Options[0].Required || c.Options[0].Type != 3 {
				t.Fatalf("%s options = %+v", c.Name, c.Options)
			}
		} else if len(c.Options) != 0 {
			t.Fatalf("%s options = %+v", c.Name, c.Options)
		}
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}

	// Same set: listed, not declared again.
	runAnother(t, h, commandOpts().cfg)
	if n := h.fake.CommandPuts(); n != 1 {
		t.Fatalf("%d bulk overwrites for an unchanged set, want 1", n)
	}
	// A changed set is declared again; per guild when configured.
	changed := commandOpts().cfg
	changed.Commands = append(append([]channels.Command(nil), testCommands...), channels.Command{Name: "status", Description: "model and session size"})
	runAnother(t, h, changed)
	if n := h.fake.CommandPuts(); n != 2 {
		t.Fatalf("%d bulk overwrites after a change, want 2", n)
	}
	changed.CommandGuilds = []string{"G1"}
	runAnother(t, h, changed)
	if got := h.fake.Commands("G1"); len(got) != len(testCommands)+1 {
		t.Fatalf("guild G1 has %d commands", len(got))
	}
}

// A slash command is deferred at once, reaches the gateway as "/name arg"
// in the channel's session, and its answer replaces the deferred response,
// split at 2000 characters with the rest as follow-ups.
func TestSlashCommandAnsweredThroughInteraction(t *testing.T) {
	t.Parallel()
	h := newHarness(t, commandOpts())
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	id, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "T1", User: fakediscord.User{ID: "U1", Username: "alice"},
		Command: "dream-log", Options: map[string]string{"sha": "ab12cd34"}})
	if err != nil {
		t.Fatal(err)
	}
	in := h.next()
	if in.Text != "/dream-log ab12cd34" || in.SessionKey != "discord:C1:thread:T1" || in.SenderID != "U1" || in.MessageID != "interaction:"+id {
		t.Fatalf("inbound = %+v", in)
	}
	cbs, err := h.fake.WaitCallbacks(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if cbs[0].Type != fakediscord.CallbackDeferred || cbs[0].InteractionID != id {
		t.Fatalf("callback = %+v, want a deferral", cbs[0])
	}
	if h.a.StartStream(in) != nil {
		t.Fatal("a slash command answer is streamed")
	}
	long := strings.Repeat("diff line\n", 250) // 2500 characters
	h.send(channels.ReplyTo(in, channels.KindReply, long))
	fus, err := h.fake.WaitFollowups(h.ctx(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !fus[0].Original || fus[1].Original || fus[0].Content+fus[1].Content != strings.Join(channels.SplitMessage(long, MaxMessageLen), "") {
		t.Fatalf("follow-ups = %+v", fus)
	}
	if len(h.fake.Sent()) != 0 {
		t.Fatalf("answer also posted to the channel: %+v", h.fake.Sent())
	}

	// In a DM; a second Send (after a progress line) follows up.
	id, err = h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "D1", User: fakediscord.User{ID: "U1"}, Command: "dream"})
	if err != nil {
		t.Fatal(err)
	}
	in = h.next()
	if in.Text != "/dream" || in.SessionKey != "discord:D1" {
		t.Fatalf("inbound = %+v", in)
	}
	h.send(channels.ReplyTo(in, channels.KindProgress, "Dreaming…"))
	h.send(channels.ReplyTo(in, channels.KindReply, "Dream: nothing new to read"))
	fus, err = h.fake.WaitFollowups(h.ctx(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if !fus[2].Original || fus[2].Content != "Dreaming…" || fus[3].Original || fus[3].Content != "Dream: nothing new to read" || fus[3].InteractionID != id {
		t.Fatalf("follow-ups = %+v", fus[2:])
	}
}

// Typing the sha offers recent Dream commits matching the prefix or the
// subject, of those the asker's audience may see (here: G1's public
// channels, not a DM).
func TestSlashCommandShaAutocomplete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, commandOpts())
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		typed   string
		want    []string
		channel string
	}{
		{"", []string{testCommits[0].SHA, testCommits[1].SHA, testCommits[2].SHA}, ""},
		{"ab", []string{testCommits[0].SHA, testCommits[2].SHA}, ""},
		{"TIMEZONE", []string{testCommits[1].SHA}, ""},
		{"", nil, "D1"},
	} {
		if tt.channel == "" {
			tt.channel = "C1"
		}
		n := len(h.fake.Callbacks())
		_, err := h.fake.InjectInteraction(fakediscord.Interaction{Type: fakediscord.InteractionAutocomplete, ChannelID: tt.channel,
			User: fakediscord.User{ID: "U1"}, Command: "dream-restore", Options: map[string]string{"sha": tt.typed}, Focused: "sha"})
		if err != nil {
			t.Fatal(err)
		}
		cbs, err := h.fake.WaitCallbacks(h.ctx(), n+1)
		if err != nil {
			t.Fatal(err)
		}
		cb := cbs[n]
		var got []string
		for _, c := range cb.Choices {
			got = append(got, c.Value)
			if !strings.HasPrefix(c.Name, c.Value[:8]+" ") {
				t.Fatalf("choice name %q", c.Name)
			}
		}
		if cb.Type != fakediscord.CallbackAutocomplete || strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Fatalf("typed %q: callback %+v, want %v", tt.typed, cb, tt.want)
		}
	}
	select {
	case in := <-h.sink.ch:
		t.Fatalf("autocomplete reached the gateway: %+v", in)
	default:
	}
}

// A slash command from someone not on the allow list is answered (the
// deferred response must not spin forever) and never delivered.
func TestSlashCommandRefusedByAllowList(t *testing.T) {
	t.Parallel()
	o := commandOpts()
	o.cfg.AllowFrom = []string{"U1"}
	h := newHarness(t, o)
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "C1", User: fakediscord.User{ID: "U9"}, Command: "help"}); err != nil {
		t.Fatal(err)
	}
	fus, err := h.fake.WaitFollowups(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// Seen by the person refused only, not posted for the channel.
	if !fus[0].Original || fus[0].Content != channels.NotAllowedNotice || !fus[0].Ephemeral {
		t.Fatalf("follow-up = %+v; want the refusal, ephemeral", fus[0])
	}
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> hi"})
	h.expectNext(id) // the refused command was not delivered before it
}

// /help and /status are answered to the person who ran them only (the
// deferral carries the ephemeral flag, so the answer replacing it is
// ephemeral, its follow-ups too); other commands are answered for the
// channel. A command allowChannels refuses is refused privately.
func TestSlashCommandEphemeralAnswers(t *testing.T) {
	t.Parallel()
	o := commandOpts()
	o.cfg.AllowChannels = []string{"C1"}
	h := newHarness(t, o)
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("help line\n", 250) // two messages
	for _, tc := range []struct {
		command   string
		answer    string
		parts     int
		ephemeral bool
	}{
		{"help", long, 2, true},
		{"status", "Tokens used: 12", 1, true},
		{"dream-log", "No Dream has run yet.", 1, false},
	} {
		n := len(h.fake.Followups())
		id, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "C1", User: fakediscord.User{ID: "U1"}, Command: tc.command})
		if err != nil {
			t.Fatal(err)
		}
		in := h.next()
		h.send(channels.ReplyTo(in, channels.KindReply, tc.answer))
		fus, err := h.fake.WaitFollowups(h.ctx(), n+tc.parts)
		if err != nil {
			t.Fatal(err)
		}
		for _, fu := range fus[n:] {
			if fu.InteractionID != id || fu.Ephemeral != tc.ephemeral {
				t.Errorf("/%s: follow-up %+v; want ephemeral %v", tc.command, fu, tc.ephemeral)
			}
		}
		cb := h.fake.Callbacks()[len(h.fake.Callbacks())-1]
		if cb.InteractionID != id || cb.Type != fakediscord.CallbackDeferred || (cb.Flags&fakediscord.FlagEphemeral != 0) != tc.ephemeral {
			t.Errorf("/%s: callback %+v", tc.command, cb)
		}
	}

	n := len(h.fake.Followups())
	if _, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "C2", User: fakediscord.User{ID: "U1"}, Command: "dream"}); err != nil {
		t.Fatal(err)
	}
	fus, err := h.fake.WaitFollowups(h.ctx(), n+1)
	if err != nil {
		t.Fatal(err)
	}
	if fu := fus[n]; fu.Content != "I don't answer in this channel." || !fu.Ephemeral {
		t.Errorf("refusal in a channel not allowed: %+v; want it ephemeral", fu)
	}
}

func TestShardConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Token: "x", ShardID: 2, ShardCount: 2},
		{Token: "x", ShardID: 1},
		{Token: "x", ShardCount: -2},
		{Token: "x", ShardID: -1, ShardCount: 2},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(shard %d of %d) = %v", cfg.ShardID, cfg.ShardCount, err)
		}
	}
}

func TestCommandNote(t *testing.T) {
	t.Parallel()
	h := newHarness(t, commandOpts())
	if got := h.a.CommandNote(); !strings.Contains(got, "type / and pick") || !strings.Contains(got, "<@BOT1> /dream-log") {
		t.Fatalf("hint = %q", got)
	}
	plain := newHarness(t, harnessOpts{})
	if got := plain.a.CommandNote(); strings.Contains(got, "type /") || !strings.Contains(got, "<@BOT1> /dream-log") {
		t.Fatalf("hint without slash commands = %q", got)
	}
}

// /stop is answered at once: when it stops a turn, the turn answers under
// its own message and nothing else would end the interaction's "thinking…".
func TestSlashStopAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, commandOpts())
	if err := h.fake.WaitRequest(h.ctx(), "PUT", "/api/v9/applications/BOT1/commands"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "C1", User: fakediscord.User{ID: "U1"}, Command: "stop"}); err != nil {
		t.Fatal(err)
	}
	in := h.next()
	cbs, err := h.fake.WaitCallbacks(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if in.Text != "/stop" || cbs[0].Type != fakediscord.CallbackMessage || cbs[0].Content != "Stopping…" {
		t.Fatalf("inbound %q, callback %+v", in.Text, cbs[0])
	}
	h.send(channels.ReplyTo(in, channels.KindReply, "Nothing is running here."))
	fus, err := h.fake.WaitFollowups(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !fus[0].Original || fus[0].Content != "Nothing is running here." {
		t.Fatalf("follow-up %+v", fus[0])
	}
}

// A slash command deferred before a restart is answered after it through
// its interaction, as it would have been: the "thinking…" edited into the
// answer, privately where the command is answered privately, and nothing
// posted to the channel. The interaction's token is kept in the reply
// handles (here shared as the store shares them between a process and its
// restart, or another process), which also count the parts sent: a
// process that takes over after the first part follows it up.
func TestSlashCommandAnsweredAfterARestart(t *testing.T) {
	t.Parallel()
	handles := &channels.MemoryReplyHandles{}
	opts := commandOpts()
	opts.cfg.Handles = handles
	before := newHarness(t, opts)
	ask := func(h *harness, channel, command string) (string, channels.Inbound) {
		t.Helper()
		n := len(h.fake.Callbacks())
		id, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: channel, User: fakediscord.User{ID: "U1"}, Command: command})
		if err != nil {
			t.Fatal(err)
		}
		in := h.next()
		if _, err := h.fake.WaitCallbacks(h.ctx(), n+1); err != nil {
			t.Fatal(err)
		}
		return id, in
	}
	dreamID, dream := ask(before, "C1", "dream")
	helpID, help := ask(before, "C1", "help")
	before.send(channels.ReplyTo(dream, channels.KindProgress, "Dreaming…"))
	if _, err := before.fake.WaitFollowups(before.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if err := before.stop(); err != nil {
		t.Fatal(err)
	}

	opts.server = before.fake
	after := newHarness(t, opts)
	after.send(channels.ReplyTo(help, channels.KindReply, "Commands: …"))
	after.send(channels.ReplyTo(dream, channels.KindReply, "Dream: 1 change to MEMORY.md"))
	fus, err := after.fake.WaitFollowups(after.ctx(), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []fakediscord.Followup{
		{InteractionID: dreamID, Original: true, Content: "Dreaming…"},
		{InteractionID: helpID, Original: true, Content: "Commands: …", Ephemeral: true},
		{InteractionID: dreamID, Content: "Dream: 1 change to MEMORY.md"},
	}
	if !slices.Equal(fus, want) {
		t.Errorf("answers after the restart:\n%+v\nwant\n%+v", fus, want)
	}
	if sent := after.fake.Sent(); len(sent) != 0 {
		t.Errorf("an answer after the restart was posted to the channel: %+v", sent)
	}
}

// Within Discord's limits: a restart past an interaction token's 15
// minutes does not answer through the token Discord no longer takes; the
// answer is posted in the channel, as an expired command's always is.
func TestSlashCommandAnsweredAfterARestartPastItsToken(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	opts := commandOpts()
	opts.cfg.Handles = &channels.MemoryReplyHandles{}
	opts.noStart = true
	before := newHarness(t, opts)
	before.a.tune.now = clock.Now
	before.start()
	if err := before.fake.WaitSessions(before.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := before.fake.InjectInteraction(fakediscord.Interaction{ChannelID: "C1", User: fakediscord.User{ID: "U1"}, Command: "dream"}); err != nil {
		t.Fatal(err)
	}
	dream := before.next()
	if _, err := before.fake.WaitCallbacks(before.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	if err := before.stop(); err != nil {
		t.Fatal(err)
	}

	clock.Advance(interactionTTL + time.Minute)
	opts.server = before.fake
	after := newHarness(t, opts)
	after.a.tune.now = clock.Now
	after.start()
	after.send(channels.ReplyTo(dream, channels.KindReply, "Dream: 1 change to MEMORY.md"))
	if fus := after.fake.Followups(); len(fus) != 0 {
		t.Errorf("answered through the expired token: %+v", fus)
	}
	if sent := after.fake.Sent(); len(sent) != 1 || sent[0].ChannelID != "C1" || sent[0].Content != "Dream: 1 change to MEMORY.md" {
		t.Errorf("posted %+v, want the answer in C1", sent)
	}
}

package discord

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

func TestDirectMessageGetsReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.inject(fakediscord.Message{ChannelID: "D1", Content: "  hello there  "})
	in := h.expectNext(id)
	want := channels.Inbound{Channel: "discord", ChatID: "D1", SessionKey: "discord:D1", SenderID: "U1",
		SenderName: "alice", MessageID: id, Text: "hello there",
		Audience: audience.Audience{Kind: audience.Person, Platform: "discord", Person: "U1"}}
	in.Time = time.Time{}
	if !reflect.DeepEqual(in, want) {
		t.Fatalf("inbound = %+v\nwant      %+v", in, want)
	}
	h.send(channels.ReplyTo(in, channels.KindReply, "hi alice"))
	sent, err := h.fake.WaitSent(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	got := sent[0]
	if got.ChannelID != "D1" || got.Content != "hi alice" || got.ReplyTo != id || got.Authorization != "Bot "+h.fake.Token() {
		t.Fatalf("sent = %+v", got)
	}
	if got.RepliedUser == nil || *got.RepliedUser {
		t.Fatalf("replied_user = %v, want false", got.RepliedUser)
	}
	if strings.Join(got.AllowedParse, ",") != "users" {
		t.Fatalf("allowed_mentions.parse = %v, want [users]", got.AllowedParse)
	}
	if st := h.fake.Stats(); st.Intents != 37377 {
		t.Fatalf("IDENTIFY intents = %d, want 37377 (GUILDS|GUILD_MESSAGES|DIRECT_MESSAGES|MESSAGE_CONTENT)", st.Intents)
	}
}

func TestGuildMentionIsStripped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	tests := []struct {
		name, content, want string
	}{
		{"mention then command", "<@BOT1> /dream-log", "/dream-log"},
		{"nickname form", "<@!BOT1>   /dream-log abc1", "/dream-log abc1"},
		{"mention in the middle", "hey <@BOT1> what's new", "hey what's new"},
		{"mention at the end", "thanks <@BOT1>", "thanks"},
		{"mention on its own line", "<@BOT1>\nfirst line\nsecond", "first line\nsecond"},
		{"other user kept", "<@BOT1> ask <@U9> too", "ask <@U9> too"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := h.inject(fakediscord.Message{ChannelID: "C1", Content: tt.content})
			in := h.expectNext(id)
			if in.Text != tt.want {
				t.Fatalf("text = %q, want %q", in.Text, tt.want)
			}
			if in.SessionKey != "discord:C1" || in.ChatID != "C1" || in.ThreadID != "" {
				t.Fatalf("session = %q chat = %q thread = %q", in.SessionKey, in.ChatID, in.ThreadID)
			}
		})
	}
}

// Discord's autocomplete offers the bot's own role beside the bot; picking
// it must work as a mention, and only that role: the fake's GUILD_CREATE
// carries the managed role and the bot's member holding it, as Discord's
// does.
func TestBotRoleMention(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	role := h.fake.BotRoleID("G1")
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@&G1> everyone role, not the bot"})
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@&ROTHER> some other role"})
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@&" + role + "> /dream-log"})
	if in := h.expectNext(id); in.Text != "/dream-log" {
		t.Fatalf("text = %q, want the command without the role mention", in.Text)
	}
}

func TestMentionPolicy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})

	// A reply to the bot's own message counts as a mention, even without a ping.
	h.send(channels.Outbound{ChatID: "C1", Text: "an earlier answer"})
	sent, err := h.fake.WaitSent(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	other := h.inject(fakediscord.Message{ChannelID: "C1", Content: "something", Author: fakediscord.User{ID: "U2"}})

	h.inject(fakediscord.Message{ChannelID: "C1", Content: "no mention here"})
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "replying to someone else", ReplyTo: other})
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "hi <@U2>"})
	reply := h.inject(fakediscord.Message{ChannelID: "C1", Content: "and what about this?", ReplyTo: sent[0].ID})
	in := h.expectNext(reply)
	if in.Text != "and what about this?" {
		t.Fatalf("text = %q", in.Text)
	}
	// A mention in the mentions array alone (as a reply with ping) counts too.
	pinged := h.inject(fakediscord.Message{ChannelID: "C1", Content: "ping", Mentions: []string{"BOT1"}})
	h.expectNext(pinged)
}

func TestOpenPolicyAnswersEverything(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	id := h.inject(fakediscord.Message{ChannelID: "C2", Content: "no mention"})
	h.expectNext(id)
}

func TestOwnMessagesIgnoredOtherBotsAccepted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	// Discord echoes what the bot posts; that echo must not come back in.
	h.send(channels.Outbound{ChatID: "C1", Text: "I said this"})
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "me again", Author: fakediscord.User{ID: "BOT1", Bot: true}})
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "hello from another bot", Author: fakediscord.User{ID: "B2", Username: "otherbot", Bot: true}})
	in := h.expectNext(id)
	if in.SenderID != "B2" {
		t.Fatalf("sender = %q", in.SenderID)
	}
}

func TestSystemMessagesAndDuplicatesIgnored(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "joined", Type: fakediscord.MessageGuildMemberJoin})
	first := h.inject(fakediscord.Message{ChannelID: "C1", Content: "once"})
	h.expectNext(first)
	if err := h.fake.Redeliver(first); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Redeliver(first); err != nil {
		t.Fatal(err)
	}
	second := h.inject(fakediscord.Message{ChannelID: "C1", Content: "twice?"})
	h.expectNext(second)
}

func TestAllowFrom(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{AllowFrom: []string{"U1"}}})
	stranger := fakediscord.User{ID: "U2", Username: "mallory"}
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> hi", Author: stranger})
	dm := h.inject(fakediscord.Message{ChannelID: "D2", Content: "let me in", Author: stranger})
	h.inject(fakediscord.Message{ChannelID: "D2", Content: "please", Author: stranger})
	ok := h.inject(fakediscord.Message{ChannelID: "D1", Content: "it's me"})
	h.expectNext(ok)
	if _, err := h.fake.WaitSent(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	// Run waits for the notices it sends, so after it returns the count is
	// final: the second DM got none.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	notices := h.fake.Sent()
	if len(notices) != 1 {
		t.Fatalf("sent %d messages, want one notice: %+v", len(notices), notices)
	}
	if n := notices[0]; n.ChannelID != "D2" || n.Content != channels.NotAllowedNotice || n.ReplyTo != dm {
		t.Fatalf("notice = %+v", n)
	}
}

func TestAllowChannelsAndThreads(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen, AllowChannels: []string{"C1"}}})
	// T2 is announced with THREAD_CREATE under C2; T3 (under C1) is known to
	// REST only, so the adapter has to look it up.
	h.fake.CreateThread(fakediscord.Channel{ID: "T2", ParentID: "C2", Name: "t2"})
	h.fake.AddChannel(fakediscord.Channel{ID: "T3", GuildID: "G1", ParentID: "C1", Type: fakediscord.ChannelPrivateThread})

	h.inject(fakediscord.Message{ChannelID: "C2", Content: "not here"})
	h.inject(fakediscord.Message{ChannelID: "T2", Content: "nor here"})
	tests := []struct {
		channel, key, chat, thread string
	}{
		{"T1", "discord:C1:thread:T1", "C1", "T1"},
		{"T3", "discord:C1:thread:T3", "C1", "T3"},
		{"C1", "discord:C1", "C1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.channel, func(t *testing.T) {
			id := h.inject(fakediscord.Message{ChannelID: tt.channel, Content: "hello " + tt.channel})
			in := h.expectNext(id)
			if in.SessionKey != tt.key || in.ChatID != tt.chat || in.ThreadID != tt.thread {
				t.Fatalf("session = %q chat = %q thread = %q, want %q %q %q", in.SessionKey, in.ChatID, in.ThreadID, tt.key, tt.chat, tt.thread)
			}
		})
	}
	if err := h.fake.WaitRequest(h.ctx(), http.MethodGet, "/api/v9/channels/T3"); err != nil {
		t.Fatal(err)
	}
}

func TestThreadIsItsOwnSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.fake.CreateThread(fakediscord.Channel{ID: "T9", ParentID: "C2", Name: "planning"})
	id := h.inject(fakediscord.Message{ChannelID: "T9", Content: "<@BOT1> summarize"})
	in := h.expectNext(id)
	if in.SessionKey != "discord:C2:thread:T9" || in.ChatID != "C2" || in.ThreadID != "T9" {
		t.Fatalf("inbound = %+v", in)
	}
	h.send(channels.ReplyTo(in, channels.KindReply, "summary"))
	sent, err := h.fake.WaitSent(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].ChannelID != "T9" || sent[0].ReplyTo != id {
		t.Fatalf("reply went to %s (reply to %q), want the thread T9", sent[0].ChannelID, sent[0].ReplyTo)
	}
}

func TestLongAnswerIsSplitWithBalancedFences(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	var b strings.Builder
	for b.Len() < 1500 {
		b.WriteString("Some prose before the code, explaining what it does. ")
	}
	b.WriteString("\n```go\n")
	for i := 0; b.Len() < 4200; i++ {
		fmt.Fprintf(&b, "fmt.Println(\"line %d of the program\")\n", i)
	}
	b.WriteString("```\n")
	for b.Len() < 5000 {
		b.WriteString("And a closing remark. ")
	}
	text := b.String()

	h.send(channels.Outbound{ChatID: "C1", ReplyTo: "ORIG", Text: text})
	sent := h.fake.Sent()
	if len(sent) != 3 {
		t.Fatalf("sent %d messages, want 3", len(sent))
	}
	for i, s := range sent {
		if n := utf8.RuneCountInString(s.Content); n > MaxMessageLen {
			t.Errorf("part %d has %d chars", i+1, n)
		}
		if n := strings.Count(s.Content, "```"); n%2 != 0 {
			t.Errorf("part %d has %d fences (unbalanced):\n%s", i+1, n, s.Content)
		}
		if s.ChannelID != "C1" {
			t.Errorf("part %d went to %s", i+1, s.ChannelID)
		}
	}
	if !strings.Contains(sent[1].Content, "```go") {
		t.Errorf("part 2 does not reopen the go block")
	}
	// The reference to a message the fake does not know is dropped
	// (fail_if_not_exists=false) instead of failing the send.
	if sent[0].RepliedUser == nil || *sent[0].RepliedUser {
		t.Errorf("first part replied_user = %v, want false", sent[0].RepliedUser)
	}
}

func TestReplyReferencesOnlyFirstPart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	id := h.inject(fakediscord.Message{ChannelID: "D1", Content: "tell me a lot"})
	in := h.expectNext(id)
	h.send(channels.ReplyTo(in, channels.KindReply, strings.Repeat("word ", 900)))
	sent := h.fake.Sent()
	if len(sent) != 3 {
		t.Fatalf("sent %d parts, want 3", len(sent))
	}
	if sent[0].ReplyTo != id || sent[1].ReplyTo != "" || sent[2].ReplyTo != "" {
		t.Fatalf("references = %q %q %q, want only the first", sent[0].ReplyTo, sent[1].ReplyTo, sent[2].ReplyTo)
	}
}

func TestTypingIndicator(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	in := channels.Inbound{Channel: "discord", ChatID: "C1", ThreadID: "T1"}
	stop := h.a.StartTyping(h.ctx(), in)
	typing, err := h.fake.WaitTyping(h.ctx(), 3) // at once, then every tick
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // safe twice
	for _, ty := range typing {
		if ty.ChannelID != "T1" || ty.Authorization != "Bot "+h.fake.Token() {
			t.Fatalf("typing = %+v", ty)
		}
	}
	after := len(h.fake.Typing())
	// Stop waits for the loop to end, so no request starts after it; one
	// that was in flight (and cancelled) may still have been recorded.
	h.send(channels.Outbound{ChatID: "C1", Text: "done"})
	h.send(channels.Outbound{ChatID: "C1", Text: "done again"})
	if n := len(h.fake.Typing()); n > after+1 {
		t.Fatalf("typing went on after stop: %d -> %d", after, n)
	}
}

func TestReconnectAfterDrop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	h.expectState(channels.StateConnected)
	answer := func(in channels.Inbound) {
		h.send(channels.ReplyTo(in, channels.KindReply, "re: "+in.Text))
	}

	m1 := h.inject(fakediscord.Message{ChannelID: "C1", Content: "first"})
	answer(h.expectNext(m1))
	if _, err := h.fake.WaitSent(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}

	// Discord may replay events the client already had; the adapter must
	// not answer them twice.
	h.fake.ReplayOverlap(2)
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	m2 := h.inject(fakediscord.Message{ChannelID: "C1", Content: "posted while the bot was away"})
	h.expectState(channels.StateReconnecting)
	h.expectState(channels.StateConnected)
	answer(h.expectNext(m2))

	m3 := h.inject(fakediscord.Message{ChannelID: "C2", Content: "after the reconnect"})
	answer(h.expectNext(m3))

	sent, err := h.fake.WaitSent(h.ctx(), 3)
	if err != nil {
		t.Fatal(err)
	}
	replied := map[string]int{}
	for _, s := range sent {
		replied[s.ReplyTo]++
	}
	if len(sent) != 3 || replied[m1] != 1 || replied[m2] != 1 || replied[m3] != 1 {
		t.Fatalf("replies = %v (%d sent), want one each to %s %s %s", replied, len(sent), m1, m2, m3)
	}
	if st := h.fake.Stats(); st.Resumes != 1 || st.Identifies != 1 {
		t.Fatalf("stats = %+v, want 1 identify and 1 resume", st)
	}
}

func TestReconnectRequestedByGateway(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	h.expectState(channels.StateConnected)
	if err := h.fake.RequestReconnect(); err != nil {
		t.Fatal(err)
	}
	h.expectState(channels.StateReconnecting)
	h.expectState(channels.StateConnected)
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "still there?"})
	h.expectNext(id)
	if st := h.fake.Stats(); st.Resumes != 1 {
		t.Fatalf("stats = %+v, want a resume", st)
	}
}

func TestInvalidSessionIdentifiesAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	h.expectState(channels.StateConnected)
	h.fake.InvalidateSession()
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitSessions(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	id := h.inject(fakediscord.Message{ChannelID: "C1", Content: "new session"})
	h.expectNext(id)
	if st := h.fake.Stats(); st.InvalidSessions != 1 || st.Identifies != 2 || st.Resumes != 0 {
		t.Fatalf("stats = %+v, want one invalid session then a second IDENTIFY", st)
	}
}

func TestRateLimitedSendIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	const retryAfter = 300 * time.Millisecond
	h.fake.Inject429(retryAfter, false)
	h.send(channels.Outbound{ChatID: "C1", Text: "patience"})

	att := h.fake.Attempts()
	if len(att) != 2 || att[0].Status != http.StatusTooManyRequests || att[1].Status != http.StatusOK {
		t.Fatalf("attempts = %+v, want a 429 then a 200", att)
	}
	if gap := att[1].At.Sub(att[0].At); gap < retryAfter {
		t.Fatalf("retried after %v, before retry_after %v", gap, retryAfter)
	}
	if att[0].Nonce == "" || att[0].Nonce != att[1].Nonce {
		t.Fatalf("nonces %q, %q: a retry must repeat the part's nonce", att[0].Nonce, att[1].Nonce)
	}
	if sent := h.fake.Sent(); len(sent) != 1 || sent[0].Content != "patience" {
		t.Fatalf("sent = %+v, want exactly one message", sent)
	}
}

func TestGlobalRateLimitIsWaitedOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.fake.Inject429(200*time.Millisecond, true)
	h.fake.Inject429(100*time.Millisecond, false)
	h.send(channels.Outbound{ChatID: "C1", Text: "twice limited"})
	if att := h.fake.Attempts(); len(att) != 3 {
		t.Fatalf("attempts = %+v, want 429, 429, 200", att)
	}
	if sent := h.fake.Sent(); len(sent) != 1 {
		t.Fatalf("sent %d messages, want 1", len(sent))
	}
}

func TestSendFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		script    func(*fakediscord.Server)
		chat      string
		wantErr   error // nil: Send succeeds
		wantSent  int
		wantTries int
	}{
		{
			name:   "lost response is not posted twice",
			script: func(f *fakediscord.Server) { f.InjectSendError(http.StatusInternalServerError, true) },
			chat:   "C1", wantSent: 1, wantTries: 2,
		},
		{
			name: "two bad gateways then success",
			script: func(f *fakediscord.Server) {
				f.InjectSendError(http.StatusBadGateway, false)
				f.InjectSendError(http.StatusServiceUnavailable, false)
			},
			chat: "C1", wantSent: 1, wantTries: 3,
		},
		{
			name: "three server errors: the fourth try goes through",
			script: func(f *fakediscord.Server) {
				for range 3 {
					f.InjectSendError(http.StatusInternalServerError, false)
				}
			},
			chat: "C1", wantSent: 1, wantTries: 4,
		},
		{
			name:   "forbidden is not retried",
			script: func(f *fakediscord.Server) { f.InjectSendError(http.StatusForbidden, false) },
			chat:   "C1", wantErr: ErrRejected, wantSent: 0, wantTries: 1,
		},
		{
			name:   "unknown channel is not retried",
			script: func(*fakediscord.Server) {},
			chat:   "NOPE", wantErr: ErrRejected, wantSent: 0, wantTries: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOpts{noStart: true})
			tt.script(h.fake)
			err := h.a.Send(h.ctx(), channels.Outbound{ChatID: tt.chat, SessionKey: "discord:" + tt.chat, Text: "hello"})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Send: %v", err)
			case tt.wantErr != nil && err == nil:
				t.Fatal("Send succeeded, want an error")
			case tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Send error %v, want %v", err, tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), "part 1/1") || err != nil && !strings.Contains(err.Error(), tt.chat):
				t.Fatalf("error %q does not name the part and channel", err)
			}
			if n := len(h.fake.Sent()); n != tt.wantSent {
				t.Fatalf("sent %d, want %d", n, tt.wantSent)
			}
			if n := len(h.fake.Attempts()); n != tt.wantTries {
				t.Fatalf("attempts %d, want %d", n, tt.wantTries)
			}
		})
	}
}

// errAny marks a test case that expects some error.
var errAny = errors.New("any error")

func TestSendRefusesEmptyAndTargetless(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{noStart: true})
	if err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C1", Text: " \n "}); !errors.Is(err, ErrEmptyMessage) {
		t.Fatalf("empty: %v", err)
	}
	if err := h.a.Send(h.ctx(), channels.Outbound{Text: "hi"}); !errors.Is(err, ErrNoTarget) {
		t.Fatalf("no target: %v", err)
	}
	if n := len(h.fake.Attempts()); n != 0 {
		t.Fatalf("%d requests made", n)
	}
}

func TestBusySessionGetsOneNotice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	h.sink.setAnswer(func(in channels.Inbound) error {
		if in.Text == "one more" {
			return channels.ErrBusy
		}
		return nil
	})
	busy := h.inject(fakediscord.Message{ChannelID: "C1", Content: "one more"})
	sent, err := h.fake.WaitSent(h.ctx(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Content != channels.BusyNotice || sent[0].ReplyTo != busy || sent[0].ChannelID != "C1" {
		t.Fatalf("notice = %+v", sent[0])
	}
	next := h.inject(fakediscord.Message{ChannelID: "C1", Content: "later"})
	h.expectNext(next)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(h.fake.Sent()); n != 1 {
		t.Fatalf("sent %d notices, want 1", n)
	}
}

func TestClosedSinkStopsRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GroupPolicy: PolicyOpen}})
	h.sink.setAnswer(func(channels.Inbound) error { return channels.ErrClosed })
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "anyone?"})
	select {
	case err := <-h.done:
		close(h.done)
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-h.ctx().Done():
		t.Fatal("Run kept going after ErrClosed")
	}
	if st := h.a.Health().State; st != channels.StateStopped {
		t.Fatalf("health = %q", st)
	}
}

func TestHealthTransitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{noStart: true})
	if hl := h.a.Health(); hl.State != channels.StateStopped {
		t.Fatalf("before Run: %+v", hl)
	}
	h.start()
	h.expectState(channels.StateConnecting)
	h.expectState(channels.StateConnected)
	// discordgo heartbeats on its own; the fake acknowledges.
	if err := h.fake.WaitHeartbeats(h.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.DropConnection(); err != nil {
		t.Fatal(err)
	}
	h.expectState(channels.StateReconnecting)
	h.expectState(channels.StateConnected)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.expectState(channels.StateStopped)
}

func TestUnrecoverableGatewayErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts harnessOpts
		want error
	}{
		{"wrong token", harnessOpts{cfg: Config{Token: "not-the-token"}, noWait: true}, ErrInvalidAuth},
		{"message content intent not enabled", harnessOpts{fake: fakediscord.Config{DisallowMessageContent: true}, noWait: true}, ErrDisallowedIntents},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.opts)
			var err error
			select {
			case err = <-h.done:
				close(h.done)
			case <-h.ctx().Done():
				t.Fatal("Run did not give up")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Run = %v, want %v", err, tt.want)
			}
			hl := h.a.Health()
			if hl.State != channels.StateFailed || hl.Detail == "" {
				t.Fatalf("health = %+v, want failed with a reason", hl)
			}
		})
	}
}

func TestRunTwiceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	if err := h.a.Run(h.ctx(), h.sink); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second Run = %v", err)
	}
}

// Text-like attachments are read into the turn as fenced text with the
// file name, up to maxFileBytes; images, binaries and larger files are named
// with a clear marker; a message with only a file gets delivered (and so
// answered).
func TestAttachments(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{MaxFileBytes: 64}})
	notes := fakediscord.File{Name: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("buy milk\ncall bob\n")}
	code := fakediscord.File{Name: "main.go", Data: []byte("package main\n// ```odd```\n")}
	tests := []struct {
		name    string
		content string
		files   []fakediscord.File
		want    string
	}{
		{"text and file", "<@BOT1> see attached", []fakediscord.File{notes},
			"see attached\n\nFile notes.txt:\n```\nbuy milk\ncall bob\n```"},
		{"file only, code by extension, fence outlasts its backticks", "<@BOT1>", []fakediscord.File{code},
			"File main.go:\n````go\npackage main\n// ```odd```\n````"},
		{"image and binary named", "<@BOT1>", []fakediscord.File{
			{Name: "a.png", ContentType: "image/png", Data: []byte("\x89PNG")},
			{Name: "b.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.7")},
		}, "[image: a.png (not shown: this assistant cannot see images)]\n[file: b.pdf (8 bytes, binary; not read)]"},
		{"over the cap", "<@BOT1> big", []fakediscord.File{{Name: "big.log", ContentType: "text/plain", Data: make([]byte, 65)}},
			"big\n\n[file: big.log (65 bytes; not read: larger than the 64 bytes limit)]"},
		{"claims small, is large", "<@BOT1>", []fakediscord.File{{Name: "liar.txt", ContentType: "text/plain", Data: []byte(strings.Repeat("x", 100)), Size: 10}},
			"[file: liar.txt (not read: larger than the 64 bytes limit)]"},
		{"text type but binary bytes", "<@BOT1>", []fakediscord.File{{Name: "x.txt", ContentType: "text/plain", Data: []byte{0, 1, 2}}},
			"[file: x.txt (3 bytes, binary; not read)]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := h.inject(fakediscord.Message{ChannelID: "C1", Content: tt.content, Attachments: tt.files})
			if in := h.expectNext(id); in.Text != tt.want {
				t.Fatalf("text = %q\nwant   %q", in.Text, tt.want)
			}
		})
	}
	// A bare mention with nothing else is not delivered.
	h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1>"})
	last := h.inject(fakediscord.Message{ChannelID: "C1", Content: "<@BOT1> ok"})
	h.expectNext(last)
	// Every download found its file.
	for _, r := range h.fake.Requests() {
		if strings.HasPrefix(r.Path, "/attachments/") && r.Status != 200 {
			t.Errorf("download %s answered %d", r.Path, r.Status)
		}
	}
}

func TestUnreachableAPIKeepsTrying(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	a, err := New(Config{Token: "abc", APIURL: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	a.tune = testTuning
	h := &harness{t: t, a: a, sink: newRecSink(), health: make(chan channels.Health, 64)}
	a.health.Watch(func(hl channels.Health) {
		select {
		case h.health <- hl:
		default:
		}
	})
	h.start()
	h.expectHealth(channels.StateConnecting, "cannot reach the Discord API")
	if err := h.stop(); err != nil {
		t.Fatalf("Run = %v, want nil: a network failure is not fatal", err)
	}
	h.expectState(channels.StateStopped)
}

func TestStalledGateway(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{noStart: true})
	h.a.tune.openTimeout = 300 * time.Millisecond
	h.fake.StallGateway(true)
	h.start()
	// The handshake is abandoned after openTimeout and tried again.
	h.expectHealth(channels.StateConnecting, "gateway connection failed")
	h.fake.StallGateway(false)
	h.expectState(channels.StateConnected)
	id := h.inject(fakediscord.Message{ChannelID: "D1", Content: "finally"})
	h.expectNext(id)
}

func TestShutdownDuringStalledHandshake(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{noStart: true})
	h.a.tune.openTimeout = time.Hour
	h.fake.StallGateway(true)
	h.start()
	if err := h.fake.WaitConnections(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	// Run must not hang in discordgo's Open, which has no context.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

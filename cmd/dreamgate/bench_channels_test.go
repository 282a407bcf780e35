package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// timed wraps a channel to see when the gateway accepted each message and
// when it sent the answer: the gateway's own share of the latency.
type timed struct {
	channels.Channel
	mu       sync.Mutex
	accepted map[string]time.Time
	gateway  []time.Duration
}

type timedSink struct {
	t    *timed
	sink channels.Sink
}

func (s timedSink) Deliver(ctx context.Context, in channels.Inbound) error {
	s.t.mu.Lock()
	s.t.accepted[in.MessageID] = time.Now()
	s.t.mu.Unlock()
	return s.sink.Deliver(ctx, in)
}

func (t *timed) Run(ctx context.Context, sink channels.Sink) error {
	return t.Channel.Run(ctx, timedSink{t: t, sink: sink})
}

func (t *timed) Send(ctx context.Context, out channels.Outbound) error {
	t.mu.Lock()
	if at, ok := t.accepted[out.ReplyTo]; ok {
		t.gateway = append(t.gateway, time.Since(at))
		delete(t.accepted, out.ReplyTo)
	}
	t.mu.Unlock()
	return t.Channel.Send(ctx, out)
}

func (t *timed) StartTyping(ctx context.Context, in channels.Inbound) func() {
	if ty, ok := t.Channel.(channels.Typer); ok {
		return ty.StartTyping(ctx, in)
	}
	return func() {}
}

func (t *timed) Health() channels.Health {
	return t.Channel.(channels.HealthReporter).Health()
}

// BenchmarkChannelsBurst sends 500 messages over 50 channels at once (250
// through Slack, 250 through Discord) into a gateway wired as `dreamgate
// gateway` wires it, with a model that answers at once. Every message must
// be answered exactly once. It reports the end-to-end latency (the fake
// platform sending the event to it receiving the reply) and the gateway's
// own share (accepted from the adapter to handed back to it, model call
// included).
func BenchmarkChannelsBurst(b *testing.B) {
	const perPlatform, chans = 250, 25
	sl, dc, ts, td := channelsBench(b, chans)
	wctx := waitCtx(b)

	var e2e []time.Duration
	b.ResetTimer()
	for range b.N {
		slackBase, discordBase := len(sl.Posts()), len(dc.Sent())
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range perPlatform {
				if _, err := sl.InjectPost(fakeslack.Event{Channel: fmt.Sprint("C", i%chans), User: "U1", Text: fmt.Sprintf("<@UBOT> s%d", i)}); err != nil {
					b.Error(err)
				}
			}
		})
		wg.Go(func() {
			for i := range perPlatform {
				if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: fmt.Sprint("D", i%chans), Author: fakediscord.User{ID: "U1"}, Content: fmt.Sprintf("<@%s> d%d", dc.BotID(), i)}); err != nil {
					b.Error(err)
				}
			}
		})
		wg.Wait()
		posts, err := sl.WaitPosts(wctx, slackBase+perPlatform)
		if err != nil {
			b.Fatal(err)
		}
		sent, err := dc.WaitSent(wctx, discordBase+perPlatform)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range posts[slackBase:] {
			e2e = append(e2e, p.At.Sub(start))
		}
		for _, s := range sent[discordBase:] {
			e2e = append(e2e, s.At.Sub(start))
		}
		if len(posts) != slackBase+perPlatform || len(dc.Sent()) != discordBase+perPlatform {
			b.Fatalf("answers: slack %d, discord %d; want exactly %d each", len(posts)-slackBase, len(dc.Sent())-discordBase, perPlatform)
		}
	}
	b.StopTimer()
	reportChannels(b, ts, td, e2e, "burst")
}

// BenchmarkChannelsOneAtATime is the same path with one message in flight:
// the gateway's added latency without queueing behind other messages.
func BenchmarkChannelsOneAtATime(b *testing.B) {
	const chans = 25
	sl, dc, ts, td := channelsBench(b, chans)
	wctx := waitCtx(b)
	var e2e []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if i%2 == 0 {
			n := len(sl.Posts())
			if _, err := sl.InjectPost(fakeslack.Event{Channel: fmt.Sprint("C", i%chans), User: "U1", Text: fmt.Sprintf("<@UBOT> s%d", i)}); err != nil {
				b.Fatal(err)
			}
			posts, err := sl.WaitPosts(wctx, n+1)
			if err != nil {
				b.Fatal(err)
			}
			e2e = append(e2e, posts[n].At.Sub(start))
		} else {
			n := len(dc.Sent())
			if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: fmt.Sprint("D", i%chans), Author: fakediscord.User{ID: "U1"}, Content: fmt.Sprintf("<@%s> d%d", dc.BotID(), i)}); err != nil {
				b.Fatal(err)
			}
			sent, err := dc.WaitSent(wctx, n+1)
			if err != nil {
				b.Fatal(err)
			}
			e2e = append(e2e, sent[n].At.Sub(start))
		}
	}
	b.StopTimer()
	reportChannels(b, ts, td, e2e, "e2e")
}

func reportChannels(b *testing.B, ts, td *timed, e2e []time.Duration, name string) {
	ts.mu.Lock()
	td.mu.Lock()
	gw := append(append([]time.Duration(nil), ts.gateway...), td.gateway...)
	td.mu.Unlock()
	ts.mu.Unlock()
	b.ReportMetric(float64(percentile(gw, 50).Microseconds())/1000, "gw-p50-ms")
	b.ReportMetric(float64(percentile(gw, 99).Microseconds())/1000, "gw-p99-ms")
	b.ReportMetric(float64(percentile(e2e, 50).Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(percentile(e2e, 99).Microseconds())/1000, name+"-p99-ms")
}

// channelsBench wires a gateway as `dreamgate gateway` does, with Slack and
// Discord adapters (wrapped to time the gateway's share) against the fakes
// and a model that answers at once.
func channelsBench(b *testing.B, chans int) (*fakeslack.Server, *fakediscord.Server, *timed, *timed) {
	h := newHarness(b)
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("ok " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content))
	})
	a := h.app()
	g, _ := a.gateway(false)

	sl, dc := benchFakes(b)
	var dchans []fakediscord.Channel
	for i := range chans {
		dchans = append(dchans, fakediscord.Channel{ID: fmt.Sprint("D", i), GuildID: "G1", Type: 0})
	}
	dc.AddGuild("G1", dchans...)
	sa, err := slack.New(slack.Config{BotToken: sl.BotToken(), AppToken: sl.AppToken(), APIURL: sl.APIURL(), GroupPolicy: "mention", ReplyInThread: true})
	if err != nil {
		b.Fatal(err)
	}
	da, err := discord.New(discord.Config{Token: dc.Token(), APIURL: dc.URL(), GroupPolicy: "mention"})
	if err != nil {
		b.Fatal(err)
	}
	ts := &timed{Channel: sa, accepted: map[string]time.Time{}}
	td := &timed{Channel: da, accepted: map[string]time.Time{}}
	g.AddChannel(ts)
	g.AddChannel(td)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = g.Run(ctx); close(ran) }()
	b.Cleanup(func() {
		sctx, c2 := context.WithTimeout(context.Background(), 10*time.Second)
		_ = g.Shutdown(sctx)
		c2()
		cancel()
		<-ran
	})
	wctx := waitCtx(b)
	if err := sl.WaitConnections(wctx, 1); err != nil {
		b.Fatal(err)
	}
	if err := dc.WaitSessions(wctx, 1); err != nil {
		b.Fatal(err)
	}

	return sl, dc, ts, td
}

// BenchmarkChannelsBurstCPU is BenchmarkChannelsBurst's burst (500
// messages over 50 channels, half Slack, half Discord, every one answered
// exactly once) sent to the built binary's `dreamgate gateway`, whose CPU
// time (user + system, from /proc) over the burst is all the adapters' and
// the gateway's own: the fakes and the model run in this process. Every
// burst goes to 50 conversations of its own (new Slack threads, new
// Discord channels), so each costs the same however many ran before: 500
// turns, 50 of them opening a session file. fds-after is the most
// descriptors the process held 200 ms after a burst.
func BenchmarkChannelsBurstCPU(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	const perPlatform, chans = 250, 25
	h := newHarness(b)
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Text("ok " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content))
	})
	sl, dc := benchFakes(b)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
		"groupPolicy": "mention", "replyInThread": true,
	})
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL(), "groupPolicy": "mention"})
	h.set("dream.cron", "0 0 1 1 *")
	p := h.startGateway(b)
	if !waitUp(b, p, "slack", "discord") {
		b.Fatalf("gateway exited; log:\n%s", p.stderr.String())
	}
	pid := p.cmd.Process.Pid
	wctx := waitCtx(b)
	var total time.Duration
	openFDs := 0
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		guild := fmt.Sprint("G", round)
		var dchans []fakediscord.Channel
		for i := range chans {
			dchans = append(dchans, fakediscord.Channel{ID: fmt.Sprintf("D%d-%d", round, i), Type: 0})
		}
		dc.AddGuild(guild, dchans...)
		time.Sleep(50 * time.Millisecond) // the bot takes in the new server
		slackBase, discordBase := len(sl.Posts()), len(dc.Sent())
		before := procCPU(b, pid)
		b.StartTimer()
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range perPlatform {
				// A top-level post: a thread, and a conversation, of its own.
				if _, err := sl.InjectPost(fakeslack.Event{Channel: fmt.Sprint("C", i%chans), User: "U1", Text: fmt.Sprintf("<@UBOT> r%d s%d", round, i)}); err != nil {
					b.Error(err)
				}
			}
		})
		wg.Go(func() {
			for i := range perPlatform {
				if _, err := dc.InjectMessage(fakediscord.Message{ChannelID: fmt.Sprintf("D%d-%d", round, i%chans), Author: fakediscord.User{ID: "U1"}, Content: fmt.Sprintf("<@%s> r%d d%d", dc.BotID(), round, i)}); err != nil {
					b.Error(err)
				}
			}
		})
		wg.Wait()
		if _, err := sl.WaitPosts(wctx, slackBase+perPlatform); err != nil {
			b.Fatal(err)
		}
		if _, err := dc.WaitSent(wctx, discordBase+perPlatform); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		// Whatever the last answers set off (a 👀 removed, a typing
		// indicator stopped) belongs to the burst too.
		time.Sleep(200 * time.Millisecond)
		total += procCPU(b, pid) - before
		// Descriptors held after the burst: the conversations' own are let
		// go of as each is answered.
		if fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd"); err == nil {
			openFDs = max(openFDs, len(fds))
		}
		if n, m := len(sl.Posts())-slackBase, len(dc.Sent())-discordBase; n != perPlatform || m != perPlatform {
			b.Fatalf("answers: slack %d, discord %d; want exactly %d each", n, m, perPlatform)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/1000/float64(2*perPlatform*b.N), "cpu-ms/msg")
	b.ReportMetric(float64(openFDs), "fds-after")
}

// benchFakes starts the Slack and Discord fakes, stopped when b ends.
func benchFakes(b *testing.B) (*fakeslack.Server, *fakediscord.Server) {
	sl := fakeslack.New(fakeslack.Config{})
	b.Cleanup(sl.Close)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(dc.Close)
	return sl, dc
}

// procCPU is the user and system CPU time process pid has used so far,
// its exited threads included, from /proc/<pid>/stat (in clock ticks of
// 10 ms, which Linux fixes at 100 per second for this file).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted from after its closing one.
	rest := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	// utime and stime are fields 14 and 15, so 11 and 12 after ")".
	var ticks int64
	for _, f := range rest[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("parse %s: %v", raw, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

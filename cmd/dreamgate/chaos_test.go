package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The chaos suite drives the built binary against the fakes, injects faults
// (kill -9 right after each named write, model faults, socket drops) and
// checks the invariants after every one. `make chaos` runs it in full
// (CHAOS=full); otherwise, as in make test and CI, it runs a bounded part.

// rssBoundKB bounds the gateway's resident memory through the whole run.
const rssBoundKB = 256 << 10

// chaosModel answers chat turns with "ack <token>" (the q-number of the
// last user message), so each reply names the message it answers, and
// every other call of the memory pipeline as llmtest.MemoryModel does.
// While held, chat turns wait a minute first.
type chaosModel struct{ hold atomic.Bool }

var tokenRe = regexp.MustCompile(`\bq\d{3,}\b`)

func (m *chaosModel) respond(r llmtest.Request) llmtest.Reply {
	last := ""
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			last = r.Messages[i].Content
			break
		}
	}
	if len(r.Tools) == 0 || strings.HasPrefix(last, "## Findings to apply") {
		return llmtest.MemoryModel(r)
	}
	reply := llmtest.Text("ack " + tokenRe.FindString(last))
	if m.hold.Load() {
		return llmtest.Slow(time.Minute, reply)
	}
	return reply
}

// chaosHarness is a harness with Slack and Discord through their fakes.
func chaosHarness(t *testing.T) (*harness, *fakeslack.Server, *fakediscord.Server, *chaosModel) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"U1": "Ana"}})
	t.Cleanup(sl.Close)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddChannel(fakediscord.Channel{ID: "DM1", Type: 1})
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(),
	})
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL()})
	h.set("dream.cron", "0 0 1 1 *") // Dream runs only when the suite runs it
	m := &chaosModel{}
	h.llm.SetResponder(m.respond)
	return h, sl, dc, m
}

// waitUp waits until the gateway's channels are connected; false when the
// process died first (a kill point can be hit while it answers what the
// last one left).
func waitUp(t testing.TB, p *gatewayProc, names ...string) bool {
	t.Helper()
	return p.connected(t, 60*time.Second, names...)
}

// The crash: messages in flight in seven Slack threads (recorded,
// 👀 on each, the model still thinking) when the process is killed. After
// the restart each is answered exactly once: the five recent ones by a
// turn, the two sent an hour ago by a note asking to send them again; and
// no 👀 stays.
func TestChaosInFlightAnsweredAfterRestart(t *testing.T) {
	h, sl, _, m := chaosHarness(t)
	h.set("channels.discord.enabled", false)
	h.set("llm.timeoutSeconds", 120)
	m.hold.Store(true)
	p := h.startProc(t)
	if !waitUp(t, p, "slack") {
		t.Fatalf("gateway exited; log:\n%s", p.stderr.String())
	}
	ctx := waitCtx(t)
	old := time.Now().Add(-time.Hour).Unix()
	threads := map[string]string{} // thread ts -> token
	for i := range 7 {
		ev := fakeslack.Event{Channel: "C1", User: "U1", Text: fmt.Sprintf("<@UBOT> q%03d: what is the plan for today", i)}
		if i >= 5 {
			ev.TS = fmt.Sprintf("%d.%06d", old, i)
		}
		ds, err := sl.InjectPost(ev)
		if err != nil {
			t.Fatal(err)
		}
		threads[ds[0].Event.TS] = fmt.Sprintf("q%03d", i)
	}
	if _, err := h.llm.WaitRequests(ctx, 7); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.stderr.String())
	}
	if _, err := sl.WaitReactions(ctx, 7); err != nil {
		t.Fatal(err)
	}
	p.kill()
	if len(sl.Posts()) != 0 {
		t.Fatalf("posts before the restart: %+v", sl.Posts())
	}

	m.hold.Store(false)
	p = h.startProc(t)
	if _, err := sl.WaitPosts(ctx, 7); err != nil {
		t.Fatalf("%v; log:\n%s", err, p.stderr.String())
	}
	// Seven adds before the kill, seven removes after the restart (a
	// turn's remove goes out after its reply).
	if _, err := sl.WaitReactions(ctx, 14); err != nil {
		t.Errorf("%v: %+v", err, sl.Reactions())
	}
	if !p.stop(20 * time.Second) {
		t.Errorf("gateway did not stop within 20s of SIGTERM")
	}
	per := map[string]int{}
	for _, post := range sl.Posts() {
		per[post.ThreadTS]++
		token, ok := threads[post.ThreadTS]
		n, _ := strconv.Atoi(strings.TrimPrefix(token, "q"))
		switch {
		case !ok:
			t.Errorf("post outside the seven threads: %+v", post)
		case n < 5 && post.Text != "ack "+token:
			t.Errorf("recent message %s answered %q, want a turn's answer", token, post.Text)
		case n >= 5 && !strings.Contains(post.Text, "send it again"):
			t.Errorf("hour-old message %s answered %q, want a request to send it again", token, post.Text)
		}
	}
	for ts, token := range threads {
		if per[ts] != 1 {
			t.Errorf("message %s answered %d times, want once", token, per[ts])
		}
	}
	on := map[string]bool{}
	for _, r := range sl.Reactions() {
		on[r.Channel+"|"+r.Timestamp+"|"+r.Name] = r.Op == "add"
	}
	for k, set := range on {
		if set {
			t.Errorf("reaction %s still on after the restart", k)
		}
	}
}

// TestChaos is one machine through every fault, its files carried over
// from fault to fault: kills at each write of a Dream step (a batch's
// edits, its commit, its files, the ledger; a deep Dream's copy, commit
// and the gap between its files) and of a chat turn, random kills, model
// faults and socket drops, with the invariants checked after each.
func TestChaos(t *testing.T) {
	c := newChaosRig(t)
	// Each kill point, at its 1st, 2nd and 3rd write in a process.
	perPoint, random := 2, 4
	if os.Getenv("CHAOS") == "full" && !testing.Short() {
		perPoint, random = 30, 30
	}
	// Dream first, while the history holds only the facts fed to it.
	c.dreamPhase(perPoint)
	c.deepPhase(perPoint)
	c.turnPhase(perPoint)
	c.randomPhase(random)
	c.gatewayFaults(perPoint)
	c.settle()
	c.report(perPoint, random)
}

// SIGTERM while a /dream from chat waits on the model: the gateway does not
// hold the signal for Dream's half hour. The Dream is cancelled, its batch
// kept (the Dream cursor does not move), and the next run reads it.
func TestChaosShutdownCancelsDream(t *testing.T) {
	h, sl, _, m := chaosHarness(t)
	h.set("channels.discord.enabled", false)
	h.set("llm.timeoutSeconds", 600)
	var hang atomic.Bool
	hang.Store(true)
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		if hang.Load() && len(r.Tools) == 0 && strings.Contains(r.Messages[len(r.Messages)-1].Content, "## Archive entries") {
			return llmtest.Slow(10*time.Minute, llmtest.Text("[SKIP]"))
		}
		return m.respond(r)
	})
	c := &chaosRig{t: t, h: h}
	// The public channel's /dream reads its team's entries.
	c.feedHistoryIn("team-slack-t0fake", 3)
	p := h.startProc(t)
	if !waitUp(t, p, "slack") {
		t.Fatalf("gateway exited; log:\n%s", p.stderr.String())
	}
	ctx := waitCtx(t)
	if _, err := sl.InjectPost(fakeslack.Event{Channel: "C1", User: "U1", Text: "<@UBOT> /dream"}); err != nil {
		t.Fatal(err)
	}
	for {
		reqs, err := h.llm.WaitRequests(ctx, len(h.llm.Requests())+1)
		if err != nil {
			t.Fatalf("Dream never asked the model: %v; log:\n%s", err, p.stderr.String())
		}
		if last := reqs[len(reqs)-1]; len(last.Tools) == 0 && strings.Contains(last.Messages[len(last.Messages)-1].Content, "## Archive entries") {
			break
		}
	}
	// The shutdown budget for turns is 30 s; a Dream waiting on the model
	// must not add its own 30 minutes to it.
	if !p.stop(25 * time.Second) {
		t.Fatalf("the gateway did not stop within 25s of SIGTERM during a /dream; log:\n%s", p.stderr.String())
	}
	if dc := readInt(filepath.Join(h.ws, "memory", ".dream_cursor")); dc != 0 {
		t.Errorf("the cancelled Dream moved the cursor to %d", dc)
	}
	found := false
	for _, post := range sl.Posts() {
		found = found || strings.Contains(post.Text, "cancelled")
	}
	if !found {
		t.Errorf("no post says the Dream was cancelled: %+v", sl.Posts())
	}
	hang.Store(false)
	if killed, code, out := h.runChaos(nil, "dream", "run"); killed || code != 0 {
		t.Fatalf("dream run after the cancelled one: exit %d: %s", code, out)
	}
	if consumed, bad := checkMemory(h.ws); consumed != 3 || len(bad) > 0 {
		t.Errorf("after the next run: %d facts consumed, %v", consumed, bad)
	}
}

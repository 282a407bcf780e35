package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The chaos suite's rig: one machine whose files carry over from fault to
// fault, the messages it was sent, and the phases of TestChaos that talk
// to the gateway.

// chaosRig is the suite's state: one machine whose files carry over from
// fault to fault.
type chaosRig struct {
	t     *testing.T
	h     *harness
	sl    *fakeslack.Server
	dc    *fakediscord.Server
	model *chaosModel
	ft    *faultTable
	rng   *rand.Rand

	seq        int    // q-number of the last message sent
	lastLog    string // stderr of the last process that died
	deliveries []fakeslack.Delivery
	slackSent  int // messages sent to the Slack DM
	discordOut int // messages sent to the Discord DM
	facts      int // chaosfact entries fed to the history
	maxRSS     int64
	memHead    map[string]string // the memory repository's branch and lines at the last check
	consumed   int               // facts Dream read, at the end
	fillers    int               // lines written by hand into the memory
}

// filler makes a message big enough that archiving runs every few turns;
// its sentences are too short to be facts.
var filler = strings.Repeat("Just some filler. ", 90)

// sendSlack sends the next message to the Slack DM; false when the fake
// has no connection to send it on (the process is dying, or reconnecting),
// or the connection broke as it wrote (the process died meanwhile: the
// message never reached it).
func (c *chaosRig) sendSlack() bool {
	text := fmt.Sprintf("q%03d: I keep a note about topic%03d in the blue notebook. %s", c.seq+1, c.seq+1, filler)
	ds, err := c.sl.InjectPost(fakeslack.Event{Channel: "D1", User: "U1", Text: text})
	if errors.Is(err, fakeslack.ErrNotConnected) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return false
	}
	if err != nil {
		c.t.Fatalf("inject: %v", err)
	}
	c.seq++
	c.deliveries = append(c.deliveries, ds...)
	c.slackSent++
	return true
}

// send sends the next Slack message through p, waiting for a new
// connection when the socket is down; false when p died first.
func (c *chaosRig) send(p *gatewayProc) bool {
	for {
		conns := c.sl.Connections()
		if c.sendSlack() {
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		go func() {
			select {
			case <-p.exited:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := c.sl.WaitConnections(ctx, conns+1)
		cancel()
		select {
		case <-p.exited:
			return false
		default:
		}
		if err != nil {
			c.t.Fatalf("no Slack connection to send on: %v; log:\n%s", err, p.stderr.String())
		}
	}
}

// redeliver does what Slack does for an envelope that a killed process
// never acked: it sends it again. An acked one is the gateway's to answer.
func (c *chaosRig) redeliver() {
	for i, d := range c.deliveries {
		if c.sl.Acked(d.EnvelopeID) {
			continue
		}
		nd, err := c.sl.Retry(d)
		if err != nil {
			c.t.Fatalf("redeliver: %v", err)
		}
		c.deliveries[i] = nd
		c.ft.faults["slack redelivery of an unacked envelope"]++
	}
}

// waitAnswered waits until every Slack message sent has an answer; false
// when p died first.
func (c *chaosRig) waitAnswered(p *gatewayProc) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := c.sl.WaitPosts(ctx, c.slackSent)
	c.sampleRSS(p)
	if err == nil {
		return true
	}
	select {
	case <-p.exited:
		return false
	default:
		c.t.Fatalf("messages not answered within 60s (%d sent, %d posts); %s\nprevious process:\n%s\nthis process:\n%s", c.slackSent, len(c.sl.Posts()), c.diagnose(), c.lastLog, p.stderr.String())
		return false
	}
}

func (c *chaosRig) sampleRSS(p *gatewayProc) {
	if kb := p.rssKB(); kb > c.maxRSS {
		c.maxRSS = kb
	}
}

// checkFiles runs the invariants on the files.
func (c *chaosRig) checkFiles() {
	c.ft.check("session files parse", checkSessions(c.h.state))
	c.ft.check("history cursors and ranges", checkHistory(c.h.ws))
	c.ft.check("git fsck --full clean", checkFsck(c.h.ws))
	var bad []string
	c.memHead, bad = checkBranch(c.h.ws, c.memHead)
	c.ft.check("memory history whole", bad)
}

// gatewayKill runs the gateway with a kill point armed and talks to it
// until it dies there (or maxMessages went by without the point being
// hit).
func (c *chaosRig) gatewayKill(point string, count int) {
	const maxMessages = 8
	fault := "kill -9 after " + point
	p := c.h.startProc(c.t, testKillEnv+"="+point+","+strconv.Itoa(count))
	alive := waitUp(c.t, p, "slack", "discord")
	if alive {
		c.forgetUnaccepted() // before redeliver: a redelivered envelope is acked at once
		c.redeliver()
	}
	for i := 0; alive && i < maxMessages; i++ {
		if alive = c.waitAnswered(p) && c.send(p); alive {
			alive = c.waitAnswered(p)
		}
	}
	if alive {
		c.ft.notReached[fault]++
		if !p.stop(40 * time.Second) {
			c.ft.check("bounded shutdown", []string{"no exit within 40s of SIGTERM"})
		}
		return
	}
	c.ft.faults[fault]++
	c.lastLog = p.stderr.String()
	c.ft.check("every message answered exactly once", c.answeredOnce(false))
	if !p.killedBySignal() {
		c.ft.check("died only by the kill", []string{fmt.Sprintf("exited with %v; log:\n%s", p.cmd.ProcessState, p.stderr.String())})
	}
	c.checkFiles()
}

// modelFault sends one message with the model's next answers scripted to
// fail, and waits for its one answer.
func (c *chaosRig) modelFault(p *gatewayProc, name string, replies ...llmtest.Reply) {
	c.h.llm.Push(replies...)
	if !c.send(p) || !c.waitAnswered(p) {
		c.t.Fatalf("gateway died under %s; log:\n%s", name, p.stderr.String())
	}
	c.ft.faults[name]++
	c.ft.check("every message answered exactly once", c.answeredOnce(false))
	c.checkFiles()
}

// forgetUnaccepted finds messages whose envelope a killed process acked
// but which never reached the gateway: the Slack adapter acks a message's
// envelope once the gateway has recorded it, but at the latest after 2 s
// (Slack wants the ack within 3 s), so a kill after that deadline and
// before the gateway took the message loses it, and Slack does not
// deliver an acked envelope again. Such a message is in no session and
// not in the inbox (a new start has taken over the inbox by now). It was
// never accepted, so it is counted apart and no answer is awaited.
func (c *chaosRig) forgetUnaccepted() {
	answered := map[string]bool{}
	for _, p := range c.sl.Posts() {
		answered[tokenRe.FindString(p.Text)] = true
	}
	var held strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.h.state, "sessions", "*.jsonl"))
	for _, f := range append(files, filepath.Join(c.h.state, "inbox.jsonl")) {
		data, _ := os.ReadFile(f)
		held.Write(data)
	}
	kept := c.deliveries[:0]
	for _, d := range c.deliveries {
		tok := tokenRe.FindString(d.Event.Text)
		if c.sl.Acked(d.EnvelopeID) && !answered[tok] && !strings.Contains(held.String(), tok+":") {
			c.ft.faults["acked by the adapter, killed before the gateway took it"]++
			c.slackSent--
			continue
		}
		kept = append(kept, d)
	}
	c.deliveries = kept
}

// diagnose says which messages have no answer, whether their envelopes
// were acked, and how the Slack DM's session file ends.
func (c *chaosRig) diagnose() string {
	var b strings.Builder
	answered := map[string]bool{}
	for _, p := range c.sl.Posts() {
		answered[tokenRe.FindString(p.Text)] = true
	}
	for _, d := range c.deliveries {
		tok := tokenRe.FindString(d.Event.Text)
		fmt.Fprintf(&b, "%s %s acked=%v answered=%v\n", tok, d.EnvelopeID, c.sl.Acked(d.EnvelopeID), answered[tok])
	}
	files, _ := filepath.Glob(filepath.Join(c.h.state, "sessions", "*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		for _, l := range lines[max(0, len(lines)-6):] {
			fmt.Fprintf(&b, "  %s: %.160s\n", filepath.Base(f), l)
		}
	}
	inbox, _ := os.ReadFile(filepath.Join(c.h.state, "inbox.jsonl"))
	fmt.Fprintf(&b, "inbox: %.400s\n", inbox)
	return b.String()
}

// answeredOnce: no message's token is answered twice, nor are there more
// answers than messages; when final (every message has had its chance),
// the Slack DM got exactly one answer per message sent, and likewise the
// Discord DM.
func (c *chaosRig) answeredOnce(final bool) []string {
	var bad []string
	seen := map[string]int{}
	posts := 0
	for _, p := range c.sl.Posts() {
		if p.Channel != "D1" {
			continue
		}
		posts++
		if tok := tokenRe.FindString(p.Text); tok != "" && strings.HasPrefix(p.Text, "ack ") {
			seen[tok]++
		}
	}
	if posts > c.slackSent || final && posts != c.slackSent {
		var other []string
		for _, p := range c.sl.Posts() {
			if p.Channel == "D1" && !strings.HasPrefix(p.Text, "ack q") {
				other = append(other, fmt.Sprintf("%.100q", p.Text))
			}
		}
		bad = append(bad, fmt.Sprintf("%d Slack messages sent, %d answers; answers that name no message: %v", c.slackSent, posts, other))
	}
	for tok, n := range seen {
		if n > 1 {
			bad = append(bad, fmt.Sprintf("Slack message %s answered %d times", tok, n))
		}
	}
	if len(bad) > 0 && os.Getenv("CHAOS_DEBUG") != "" {
		for _, p := range c.sl.Posts() {
			fmt.Printf("POST %s %s %q\n", p.Channel, p.TS, p.Text)
		}
	}
	if n := len(c.dc.Sent()); n > c.discordOut || final && n != c.discordOut {
		bad = append(bad, fmt.Sprintf("%d Discord messages sent, %d answers", c.discordOut, n))
	}
	return bad
}

// The kill points of a chat turn.
var turnPoints = []string{"session-append", "session-meta", "history-append", "history-cursor"}

// newChaosRig is the machine of TestChaos: Slack and Discord through their
// fakes, a small window (archives every few turns, a memory budget a few
// dozen facts fill), small Dream batches.
func newChaosRig(t *testing.T) *chaosRig {
	h, sl, dc, m := chaosHarness(t)
	h.set("llm.contextWindow", 6000)
	h.set("llm.maxTokens", 256)
	h.set("llm.timeoutSeconds", 2)
	h.set("dream.maxBatchSize", 3)
	// Every message the gateway accepted is answered by a turn however
	// slow the machine (a loaded one makes the full suite last past the
	// default 10 minutes, and its oldest messages would be asked for
	// again instead); TestChaosInFlightAnsweredAfterRestart covers that.
	h.set("gateway.answerPendingMinutes", 24*60)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("chaos seed %d (CHAOS_SEED repeats it)", seed)
	return &chaosRig{t: t, h: h, sl: sl, dc: dc, model: m, ft: newFaultTable(), rng: rand.New(rand.NewPCG(seed, seed))}
}

// turnPhase kills the gateway after each write of a chat turn, at its
// 1st, 2nd and 3rd write in a process, until each was hit perPoint times.
func (c *chaosRig) turnPhase(perPoint int) {
	for _, point := range turnPoints {
		for i := 0; c.ft.faults["kill -9 after "+point] < perPoint && i < 4*perPoint; i++ {
			c.gatewayKill(point, 1+i%3)
		}
	}
}

// randomPhase makes random kills, tried until random of them reached
// their point: a gateway may answer its few messages before it archives,
// and the gitstore points are reached only by a Dream's commit.
func (c *chaosRig) randomPhase(random int) {
	all := append(slices.Clone(turnPoints), dreamPoints...)
	for reached, i := 0, 0; reached < random && i < 3*random; i++ {
		point := all[c.rng.IntN(len(all))]
		before := c.ft.faults["kill -9 after "+point]
		if slices.Contains(dreamPoints, point) {
			c.dreamKill(point, 1)
		} else {
			c.gatewayKill(point, 1+c.rng.IntN(3))
		}
		if c.ft.faults["kill -9 after "+point] > before {
			reached++
		}
	}
}

// gatewayFaults plays model faults and socket drops against one gateway,
// and stops it.
func (c *chaosRig) gatewayFaults(perPoint int) {
	t := c.t
	p := c.h.startProc(t)
	if !waitUp(t, p, "slack", "discord") {
		t.Fatalf("gateway exited; log:\n%s", p.stderr.String())
	}
	c.redeliver()
	if !c.waitAnswered(p) {
		t.Fatal("gateway died")
	}
	c.modelFault(p, "model 5xx storm", llmtest.Status(503, ""), llmtest.Status(502, ""))
	c.modelFault(p, "model 429 with Retry-After", llmtest.Status(429, "1"))
	c.modelFault(p, "model hang past the timeout", llmtest.Slow(30*time.Second, llmtest.Text("too late")))
	c.modelFault(p, "model malformed body", llmtest.Malformed())
	drops := 1
	if perPoint > 2 {
		drops = 5
	}
	for range drops {
		c.dropSlack(p)
		c.dropDiscord(p)
	}
	c.sampleRSS(p)
	if !p.stop(40 * time.Second) {
		c.ft.check("bounded shutdown", []string{"no exit within 40s of SIGTERM"})
	} else {
		c.ft.check("bounded shutdown", nil)
	}
}

// dropSlack drops the Slack socket and talks through the new one.
func (c *chaosRig) dropSlack(p *gatewayProc) {
	t := c.t
	ctx := waitCtx(t)
	conns := c.sl.Connections()
	if err := c.sl.DropConnection(); err != nil {
		t.Fatal(err)
	}
	if err := c.sl.WaitConnections(ctx, conns+1); err != nil {
		t.Fatalf("slack did not reconnect: %v", err)
	}
	waitUp(t, p, "slack")
	if !c.send(p) || !c.waitAnswered(p) {
		t.Fatal("gateway died")
	}
	c.ft.faults["slack socket drop"]++
	c.checkFiles()
}

// dropDiscord drops the Discord socket and talks through the new one.
func (c *chaosRig) dropDiscord(p *gatewayProc) {
	t := c.t
	ctx := waitCtx(t)
	dconns := c.dc.Stats().Connections
	if err := c.dc.DropConnection(); err != nil {
		t.Fatal(err)
	}
	if err := c.dc.WaitConnections(ctx, dconns+1); err != nil {
		t.Fatalf("discord did not reconnect: %v", err)
	}
	waitUp(t, p, "discord")
	c.seq++
	if _, err := c.dc.InjectMessage(fakediscord.Message{ChannelID: "DM1", Author: fakediscord.User{ID: "U7"}, Content: fmt.Sprintf("q%03d: hello after the drop", c.seq)}); err != nil {
		t.Fatal(err)
	}
	c.discordOut++
	if _, err := c.dc.WaitSent(ctx, c.discordOut); err != nil {
		t.Fatalf("discord message not answered: %v", err)
	}
	c.ft.faults["discord socket drop"]++
}

// settle has Dream read what is left; then the memory must hold every
// fact it read exactly once, and every message have its one answer.
func (c *chaosRig) settle() {
	c.drain()
	consumed, bad := checkMemory(c.h.ws)
	if consumed == 0 {
		bad = append(bad, "Dream consumed no fact: the check did not aim")
	}
	c.consumed = consumed
	c.ft.check("every fact once, in one tier", bad)
	c.checkFiles()
	c.ft.check("every message answered exactly once", c.answeredOnce(true))
	var rss []string
	if c.maxRSS > rssBoundKB {
		rss = append(rss, fmt.Sprintf("RSS reached %d KiB, bound %d KiB", c.maxRSS, rssBoundKB))
	}
	c.ft.check("RSS under bound", rss)
}

// report prints the fault table and fails on a violation or on a kill
// point not reached often enough.
func (c *chaosRig) report(perPoint, random int) {
	t := c.t
	var sb strings.Builder
	c.ft.print(&sb)
	fmt.Fprintf(&sb, "chaos: peak RSS %d KiB (bound %d), %d Slack and %d Discord messages, %d facts fed to Dream (%d consumed)\n",
		c.maxRSS, rssBoundKB, c.slackSent, c.discordOut, c.facts, c.consumed)
	if _, err := exec.LookPath("git"); err != nil {
		sb.WriteString("chaos: git not found, git fsck not run\n")
	}
	fmt.Print(sb.String())
	for _, v := range c.ft.violations {
		t.Error(v)
	}
	kills := 0
	for k, n := range c.ft.faults {
		if strings.HasPrefix(k, "kill -9") {
			kills += n
		}
	}
	var aimed []string
	for _, point := range append(slices.Clone(turnPoints), dreamPoints...) {
		aimed = append(aimed, "kill -9 after "+point)
	}
	for _, point := range deepPoints {
		aimed = append(aimed, "kill -9 after "+point.name+" (deep Dream)")
	}
	for _, fault := range aimed {
		if n := c.ft.faults[fault]; n < perPoint {
			t.Errorf("%d kills: %s, want at least %d: the suite did not aim", n, fault, perPoint)
		}
	}
	if kills < len(aimed)*perPoint+random/2 {
		t.Errorf("only %d kills reached their point", kills)
	}
}

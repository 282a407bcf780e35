package main

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// The Slack side of the scenarios: one Slack app (the fake, which sends
// each event to one of the app's live Socket Mode connections at random
// and sends again what no connection acknowledged, as Slack does), people
// talking in its channels, and checks of what the bot posted.

// slackTalk is what a scenario said on Slack: each message of `slack
// converse` by its text ("c07 m003": conversation 7's fourth message).
type slackTalk struct {
	mu   sync.Mutex
	sent map[string]talkMessage
	// running is the end of a converse-start's messages.
	running chan error
}

type talkMessage struct {
	conv, k int
	ts      string
}

// replyRE reads a post of a scenario model's answer.
var replyRE = regexp.MustCompile(`^(\w+): (c\d+ m\d+) \(saw (\d+)\)$`)

// talkReply is one post answering a conversation's message.
type talkReply struct {
	proc, msg string
	saw       int
	channel   string
}

func (s *scenario) replies() []talkReply { return repliesIn(s.slack.Posts()) }

// repliesIn reads the answers among posts.
func repliesIn(posts []fakeslack.Post) []talkReply {
	var out []talkReply
	for _, p := range posts {
		if m := replyRE.FindStringSubmatch(p.Text); m != nil {
			saw, _ := strconv.Atoi(m[3])
			out = append(out, talkReply{proc: m[1], msg: m[2], saw: saw, channel: p.Channel})
		}
	}
	return out
}

// slack start | slack connections N | slack converse N M [FROM]
// slack say CHANNEL TEXT... | slack answered N | slack check
// slack share PCT NAME...
//
// slack posts CHANNEL N | slack converse-start N M [FROM] | slack converse-wait
//
// start runs the fake Slack (gateways started later connect to it);
// connections waits for N live Socket Mode connections; converse says N
// messages over M conversations (the DMs D00… of people U00…), message i
// the (i/M)-th of conversation i%M, starting at FROM, each after the
// conversation's previous one was acknowledged and recorded (converse-start says them
// in the background, converse-wait waits for the last); say posts one message,
// mentioning the bot in a channel, or in a DM (D…); posts waits until the
// bot posted N messages in CHANNEL and writes them to stdout, one a line;
// answered waits until
// N messages of converse have an answer; check checks that every message
// said has exactly one answer, that each conversation's answers come in
// the order of its messages, and that each turn was shown every earlier
// one; share checks that each named process wrote at least PCT percent of
// the answers so far.
func cmdScenarioSlack(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: slack start|connections|converse|say|answered|check|share ...")
	}
	s := scenarioOf(ts)
	if args[0] != "start" && s.slack == nil {
		ts.Fatalf("slack: start the fake first")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	switch args[0] {
	case "start":
		s.startSlack()
	case "connections":
		n := argInt(ts, args, 1)
		ts.Check(s.slack.WaitLiveConnections(ctx, n))
	case "converse":
		s.converse(ctx, ts, argInt(ts, args, 1), argInt(ts, args, 2), optInt(ts, args, 3))
	case "converse-start":
		n, m, from := argInt(ts, args, 1), argInt(ts, args, 2), optInt(ts, args, 3)
		done := make(chan error, 1)
		s.talk.running = done
		go func() {
			bctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			done <- s.converseErr(bctx, n, m, from)
		}()
	case "converse-wait":
		if s.talk.running == nil {
			ts.Fatalf("slack converse-wait: no converse-start")
		}
		ts.Check(<-s.talk.running)
		s.talk.running = nil
	case "say":
		if len(args) < 3 {
			ts.Fatalf("usage: slack say CHANNEL TEXT...")
		}
		s.say(ctx, ts, args[1], strings.Join(args[2:], " "))
	case "answered":
		s.waitAnswered(ctx, ts, argInt(ts, args, 1))
	case "posts":
		s.waitPosts(ctx, ts, args[1], argInt(ts, args, 2))
	case "check":
		s.checkAnswers(ts)
	case "share":
		s.checkShare(ts, argInt(ts, args, 1), args[2:])
	default:
		ts.Fatalf("slack: unknown action %q", args[0])
	}
}

// startSlack runs the fake Slack: an app subscribed to mentions and DMs,
// people U00…U99 and Ana (U1), and envelopes not acknowledged within two
// seconds sent again.
func (s *scenario) startSlack() {
	users := map[string]string{"U1": "Ana"}
	for c := range 100 {
		users[fmt.Sprintf("U%02d", c)] = fmt.Sprintf("Person %02d", c)
	}
	s.slack = fakeslack.New(fakeslack.Config{
		Users:        users,
		RetryUnacked: 2 * time.Second,
		Events:       []string{"app_mention", "message.im"},
	})
	s.talk = &slackTalk{sent: map[string]talkMessage{}}
}

func argInt(ts *testscript.TestScript, args []string, i int) int {
	if len(args) <= i {
		ts.Fatalf("missing a number after %q", strings.Join(args, " "))
	}
	n, err := strconv.Atoi(args[i])
	ts.Check(err)
	return n
}

func optInt(ts *testscript.TestScript, args []string, i int) int {
	if len(args) <= i {
		return 0
	}
	return argInt(ts, args, i)
}

// converse says messages from..from+n-1 over m conversations, each
// conversation's in order (the next once the previous was acknowledged
// and recorded by a gateway, as a person sees it sent), the
// conversations at once.
func (s *scenario) converse(ctx context.Context, ts scriptT, n, m, from int) {
	if err := s.converseErr(ctx, n, m, from); err != nil {
		ts.Fatalf("slack converse: %v", err)
	}
}

func (s *scenario) converseErr(ctx context.Context, n, m, from int) error {
	byConv := map[int][]int{}
	for i := from; i < from+n; i++ {
		byConv[i%m] = append(byConv[i%m], i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, m)
	for c, is := range byConv {
		wg.Go(func() {
			for _, i := range is {
				text := fmt.Sprintf("c%02d m%03d", c, i/m)
				d, err := s.slack.Inject(fakeslack.Event{Type: "message", ChannelType: "im", Channel: fmt.Sprintf("D%02d", c), User: fmt.Sprintf("U%02d", c), Text: text})
				if err == nil {
					err = s.slack.WaitEventAcked(ctx, d.EventID)
				}
				if err == nil {
					err = s.waitRecorded(ctx, d.Event.TS)
				}
				if err != nil {
					errs <- fmt.Errorf("%s: %w", text, err)
					return
				}
				s.talk.mu.Lock()
				s.talk.sent[text] = talkMessage{conv: c, k: i / m, ts: d.Event.TS}
				s.talk.mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// say posts text in channel as Ana, mentioning the bot outside a DM, and
// waits for its acknowledgement.
func (s *scenario) say(ctx context.Context, ts *testscript.TestScript, channel, text string) {
	ev := fakeslack.Event{Type: "app_mention", Channel: channel, User: "U1", Text: "<@UBOT> " + text}
	if strings.HasPrefix(channel, "D") {
		ev = fakeslack.Event{Type: "message", ChannelType: "im", Channel: channel, User: "U1", Text: text}
	}
	d, err := s.slack.Inject(ev)
	ts.Check(err)
	ts.Check(s.slack.WaitEventAcked(ctx, d.EventID))
}

// waitAnswered waits until n messages of converse have an answer.
func (s *scenario) waitAnswered(ctx context.Context, ts scriptT, n int) {
	start := time.Now()
	answered := map[string]bool{}
	err := waitSlackPosts(ctx, s.slack, func(posts []fakeslack.Post) bool {
		clear(answered)
		for _, r := range repliesIn(posts) {
			answered[r.msg] = true
		}
		return len(answered) >= n
	})
	if err != nil {
		s.mu.Lock()
		logs := ""
		for name, g := range s.gateways {
			logs += "\n--- " + name + ":\n" + logTail(g.log.String(), 40)
		}
		s.mu.Unlock()
		ts.Fatalf("%d of %d messages answered: %v%s%s", len(answered), n, err, s.unansweredReport(answered), logs)
	}
	ts.Logf("%d messages answered (%s)", len(answered), time.Since(start).Round(time.Millisecond))
}

// waitPosts waits until the bot posted n messages in channel and writes
// them to stdout.
func (s *scenario) waitPosts(ctx context.Context, ts *testscript.TestScript, channel string, n int) {
	var got []string
	err := waitSlackPosts(ctx, s.slack, func(posts []fakeslack.Post) bool {
		got = got[:0]
		for _, p := range posts {
			if p.Channel == channel {
				got = append(got, p.Text)
			}
		}
		return len(got) >= n
	})
	if err != nil {
		ts.Fatalf("%d posts in %s, want %d: %v", len(got), channel, n, err)
	}
	for _, g := range got {
		fmt.Fprintln(ts.Stdout(), g)
	}
}

// postSource is what waiting for posts asks of the Slack fake.
type postSource interface {
	Posts() []fakeslack.Post
	WaitPosts(ctx context.Context, n int) ([]fakeslack.Post, error)
}

// waitSlackPosts waits until done holds of the posts so far. Each check
// and the wait after it count the same posts: counted apart, a post that
// came between them was waited for again, and the last ones never came.
func waitSlackPosts(ctx context.Context, src postSource, done func([]fakeslack.Post) bool) error {
	posts := src.Posts()
	for !done(posts) {
		var err error
		if posts, err = src.WaitPosts(ctx, len(posts)+1); err != nil {
			return err
		}
	}
	return nil
}

func logTail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// checkAnswers: each message said has exactly one answer, in its
// conversation's order, and each turn was shown the conversation's
// earlier ones.
func (s *scenario) checkAnswers(ts *testscript.TestScript) {
	s.talk.mu.Lock()
	sent := make(map[string]talkMessage, len(s.talk.sent))
	for k, v := range s.talk.sent {
		sent[k] = v
	}
	s.talk.mu.Unlock()
	count := map[string]int{}
	last := map[int]int{} // conversation -> the last message index answered
	bad := 0
	fail := func(format string, a ...any) {
		if bad++; bad <= 10 {
			ts.Logf("check: "+format, a...)
		}
	}
	for _, r := range s.replies() {
		msg, ok := sent[r.msg]
		if !ok {
			fail("an answer to %q, which was not said", r.msg)
			continue
		}
		count[r.msg]++
		if prev, ok := last[msg.conv]; ok && msg.k <= prev {
			fail("conversation %d: the answer to message %d came after the one to message %d", msg.conv, msg.k, prev)
		}
		last[msg.conv] = msg.k
		if r.saw != msg.k+1 {
			fail("%s was answered by %s having seen %d of the conversation's messages, want %d", r.msg, r.proc, r.saw, msg.k+1)
		}
	}
	for text := range sent {
		if count[text] != 1 {
			fail("%s answered %d times", text, count[text])
		}
	}
	if bad > 0 {
		ts.Fatalf("%d problems among the answers to %d messages", bad, len(sent))
	}
	ts.Logf("%d messages, each answered once, in order, with its conversation's past", len(sent))
}

// checkShare: each named process wrote at least pct percent of the
// answers so far.
func (s *scenario) checkShare(ts *testscript.TestScript, pct int, names []string) {
	by := map[string]int{}
	total := 0
	for _, r := range s.replies() {
		by[r.proc]++
		total++
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, by[n]))
	}
	sort.Strings(parts)
	ts.Logf("answers by process of %d: %s", total, strings.Join(parts, ", "))
	for _, n := range names {
		if total == 0 || by[n]*100 < pct*total {
			ts.Fatalf("%s wrote %d of %d answers, under %d%%", n, by[n], total, pct)
		}
	}
}

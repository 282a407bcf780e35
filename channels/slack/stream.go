package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/channels"
)

// Streaming: a long answer appears while the model writes it. The first
// message is posted once the answer has been coming for streamDelay (a
// short answer is posted once, as before), then edited with chat.update at
// most once per streamInterval: chat.update is a Tier 3 method (about 50
// a minute per workspace), and edits closer together would not be read
// anyway. A 429 pauses the edits for its Retry-After. The final Send
// writes exactly the final text into the message (split as always: later
// parts are posted after it).
//
// Slack's chat.startStream/appendStream/stopStream (slack-go v0.35.0 has
// them: StartStreamContext, …) are not used: they only append, so a
// stream cannot end as exactly the final text when that differs from what
// was streamed (leaked reasoning stripped, a step cut off by a tool call);
// they take at most 12,000 characters a call, need the recipient's user
// and team ids in channels, and are meant for apps with Slack's AI
// features. chat.update works in every workspace, DM and thread.

var _ channels.Streamer = (*Adapter)(nil)

const (
	streamDelay    = time.Second
	streamInterval = time.Second
	// streamIdle ends a stream whose turn never finished (no write and no
	// final Send for this long); its final Send then posts anew.
	streamIdle = 30 * time.Minute
	// streamCallTimeout bounds one edit; the final Send waits for it.
	streamCallTimeout = 10 * time.Second
	// streamFailures failed edits in a row end the showing.
	streamFailures = 3
	// editsPerMinute and editBurst pace the intermediate edits of all
	// streams together, below Slack's Tier 3 limit.
	editsPerMinute = 45
	editBurst      = 10
)

// streams holds the streams of running turns by chat and inbound message.
type streams struct {
	mu sync.Mutex
	m  map[string]*stream
}

func streamKey(chat, msgID string) string { return chat + "/" + msgID }

func (s *streams) put(k string, st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*stream{}
	}
	if old := s.m[k]; old != nil {
		old.stop()
	}
	// A turn whose final Send never came leaves its stream behind; one
	// that never wrote has no goroutine to drop it.
	for key, old := range s.m {
		if time.Since(old.created) > streamIdle {
			old.stop()
			delete(s.m, key)
		}
	}
	s.m[k] = st
}

// take removes and returns the stream out finishes: the reply or error
// that answers the message the stream was started for.
func (s *streams) take(out channels.Outbound) *stream {
	if out.ReplyTo == "" || out.Kind == channels.KindProgress {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := streamKey(out.ChatID, out.ReplyTo)
	st := s.m[k]
	delete(s.m, k)
	return st
}

func (s *streams) drop(k string, st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[k] == st {
		delete(s.m, k)
	}
}

// step is one model step's text and the messages that show it.
type step struct {
	text  strings.Builder
	dirty bool
	msgs  []string // ts of the posted messages, in order
	shown []string // the mrkdwn each shows
}

// stream shows one turn. Write and Break come from the turn's goroutine;
// its own goroutine posts and edits; finish (the final Send) stops it and
// writes the last state.
type stream struct {
	a                     *Adapter
	key                   string
	chat, thread, replyTo string
	created               time.Time

	mu        sync.Mutex
	steps     []*step // the last is being written
	started   bool    // the goroutine runs
	wake      chan struct{}
	done      chan struct{}
	exited    chan struct{}
	stopOnce  sync.Once
	notBefore time.Time // a 429 said wait until then
	failures  int       // edits failed in a row
}

// StartStream begins showing a turn's answer, or returns nil for a slash
// command (its answer goes through the response_url).
func (a *Adapter) StartStream(in channels.Inbound) channels.Stream {
	if in.ChatID == "" || in.MessageID == "" || isSlashID(in.MessageID) {
		return nil
	}
	st := &stream{
		a: a, key: streamKey(in.ChatID, in.MessageID),
		chat: in.ChatID, thread: in.ThreadID, replyTo: in.MessageID, created: time.Now(),
		steps: []*step{{}}, wake: make(chan struct{}, 1),
		done: make(chan struct{}), exited: make(chan struct{}),
	}
	a.streams.put(st.key, st)
	return st
}

// Write adds a fragment of the model's text; the first starts the
// goroutine that shows them.
func (s *stream) Write(fragment string) {
	if fragment == "" {
		return
	}
	s.mu.Lock()
	cur := s.steps[len(s.steps)-1]
	cur.text.WriteString(fragment)
	cur.dirty = true
	start := !s.started
	s.started = true
	s.mu.Unlock()
	if start {
		go s.run()
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Break ends a step: its messages keep its whole text, and what follows
// starts new ones. A step not shown yet is not shown (as without
// streaming, the text before a tool call is not the reply).
func (s *stream) Break() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.steps[len(s.steps)-1].text.Len() > 0 {
		s.steps = append(s.steps, &step{})
	}
}

func (s *stream) stop() { s.stopOnce.Do(func() { close(s.done) }) }

// run posts the first message after streamDelay and edits it at most once
// per streamInterval until stop.
func (s *stream) run() {
	defer close(s.exited)
	defer s.a.streams.drop(s.key, s)
	idle := time.NewTimer(streamIdle)
	defer idle.Stop()
	wait := s.a.streamDelay
	for {
		select {
		case <-s.done:
			return
		case <-idle.C:
			s.a.log.Warn("slack stream got no final reply; leaving it", "chat", s.chat)
			return
		case <-s.wake:
		}
		idle.Reset(streamIdle)
		s.mu.Lock()
		if d := time.Until(s.notBefore); d > wait {
			wait = d
		}
		s.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		if !s.flush() {
			s.a.log.Info("slack stream gave up after failed edits; the final reply is sent as usual", "chat", s.chat)
			return
		}
		wait = s.a.streamInterval
	}
}

// flush shows what changed: the last step, and earlier steps that were
// shown in part. It reports false once streamFailures edits in a row
// failed (other than rate limits): the stream stops trying.
func (s *stream) flush() bool {
	s.mu.Lock()
	steps := append([]*step(nil), s.steps...)
	s.mu.Unlock()
	for i, st := range steps {
		s.mu.Lock()
		dirty, text, shownAny := st.dirty, channels.Visible(st.text.String()), len(st.msgs) > 0
		st.dirty = false
		s.mu.Unlock()
		if !dirty || (i < len(steps)-1 && !shownAny) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), streamCallTimeout)
		err := s.show(ctx, nil, st, text)
		cancel()
		if err != nil {
			s.mu.Lock()
			st.dirty = true // try again at the next edit
			if errors.Is(err, errNoEditBudget) {
				s.mu.Unlock()
				select {
				case s.wake <- struct{}{}:
				default:
				}
				return true
			}
			if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
				s.notBefore = time.Now().Add(max(rl.RetryAfter, time.Second))
			} else {
				s.failures++
			}
			failures := s.failures
			s.mu.Unlock()
			s.a.log.Debug("slack stream edit failed", "chat", s.chat, "err", err)
			if failures >= streamFailures {
				return false
			}
			select {
			case s.wake <- struct{}{}:
			default:
			}
			return true
		}
		s.mu.Lock()
		s.failures = 0
		s.mu.Unlock()
	}
	return true
}

// show makes st's messages show text: edits the changed parts, posts new
// ones; final (r set: the final Send's retries) also deletes parts left
// over from a longer draft and posts and edits with r's retries.
func (s *stream) show(ctx context.Context, r *channels.Retry, st *step, text string) error {
	final := r != nil
	md := toMrkdwn(text)
	if strings.TrimSpace(md) == "" {
		return nil
	}
	parts := channels.SplitMessage(md, MaxMessageLen)
	for i, part := range parts {
		s.mu.Lock()
		var ts, shown string
		if i < len(st.msgs) {
			ts, shown = st.msgs[i], st.shown[i]
		}
		s.mu.Unlock()
		switch {
		case ts != "" && shown == part:
		case ts != "":
			if !final && !s.a.edits.take(time.Now()) {
				return errNoEditBudget
			}
			if err := s.update(ctx, r, ts, part); err != nil {
				return err
			}
			s.mu.Lock()
			st.shown[i] = part
			s.mu.Unlock()
		case final:
			// The retrying post: the answer must arrive, once.
			if err := s.a.post(ctx, r, s.chat, s.thread, s.replyTo, part, postKey{}); err != nil {
				return err
			}
		default:
			callCtx, cancel := context.WithTimeout(ctx, s.a.apiTimeout)
			_, newTS, err := s.a.api.PostMessageContext(callCtx, s.chat, s.postOpts(part)...)
			cancel()
			if err != nil {
				return fmt.Errorf("chat.postMessage: %w", err)
			}
			s.mu.Lock()
			st.msgs, st.shown = append(st.msgs, newTS), append(st.shown, part)
			s.mu.Unlock()
		}
	}
	if final {
		s.mu.Lock()
		extra := append([]string(nil), st.msgs[min(len(parts), len(st.msgs)):]...)
		s.mu.Unlock()
		for _, ts := range extra {
			callCtx, cancel := context.WithTimeout(ctx, s.a.apiTimeout)
			if _, _, err := s.a.api.DeleteMessageContext(callCtx, s.chat, ts); err != nil {
				s.a.log.Warn("slack could not delete the rest of a longer draft", "chat", s.chat, "ts", ts, "err", err)
			}
			cancel()
		}
	}
	return nil
}

func (s *stream) postOpts(text string) []slack.MsgOption {
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if s.thread != "" {
		opts = append(opts, slack.MsgOptionTS(s.thread))
	}
	return opts
}

// update edits one message; final (r set) retries transient errors and
// waits out 429s with r, as the final text must arrive.
func (s *stream) update(ctx context.Context, r *channels.Retry, ts, text string) error {
	for {
		callCtx, cancel := context.WithTimeout(ctx, s.a.apiTimeout)
		_, _, _, err := s.a.api.UpdateMessageContext(callCtx, s.chat, ts, slack.MsgOptionText(text, false))
		cancel()
		if err == nil {
			return nil
		}
		err = fmt.Errorf("chat.update: %w", err)
		if r == nil || ctx.Err() != nil {
			return err
		}
		if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
			err = r.RateLimited(ctx, max(rl.RetryAfter, time.Second), err)
		} else if transient(err) {
			err = r.Failed(ctx, err)
		}
		if err != nil {
			return err
		}
	}
}

// finish ends the stream with out, the turn's reply or error, and reports
// whether it delivered out: a reply is written into the messages that
// showed the last step; an error, or a reply with nothing shown yet, is
// left to Send's plain post (the shown steps keep their text).
func (s *stream) finish(ctx context.Context, r *channels.Retry, out channels.Outbound) (bool, error) {
	s.stop()
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.exited
	}
	s.mu.Lock()
	steps := append([]*step(nil), s.steps...)
	s.mu.Unlock()
	last := steps[len(steps)-1]
	for _, st := range steps {
		if st == last && out.Kind == channels.KindReply {
			break // shown below with the final text
		}
		s.mu.Lock()
		shown, dirty, text := len(st.msgs) > 0, st.dirty, channels.Visible(st.text.String())
		s.mu.Unlock()
		if shown && dirty {
			// A step shown in part keeps its whole text.
			if err := s.show(ctx, r, st, text); err != nil {
				s.a.log.Warn("slack could not finish a streamed message", "chat", s.chat, "err", err)
			}
		}
	}
	s.mu.Lock()
	shown := len(last.msgs) > 0
	s.mu.Unlock()
	if !shown || out.Kind != channels.KindReply {
		return false, nil
	}
	if err := s.show(ctx, r, last, out.Text); err != nil {
		return true, fmt.Errorf("slack: finish streamed reply in channel %s thread %q: %w", s.chat, s.thread, err)
	}
	s.a.log.Debug("sent streamed", "chat", s.chat, "thread", s.thread, "messages", len(last.msgs), "streamed", out.Streamed)
	return true, nil
}

var errNoEditBudget = errors.New("no chat.update left this minute")

// editBudget shares Slack's chat.update allowance (a Tier 3 method: about
// 50 a minute per workspace) among all streams, as a token bucket:
// intermediate edits past it wait for the next round; final edits always
// go (a 429 is still waited out).
type editBudget struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	rate   float64 // tokens per second
	burst  float64
}

func newEditBudget(perMinute, burst int) *editBudget {
	return &editBudget{tokens: float64(burst), rate: float64(perMinute) / 60, burst: float64(burst)}
}

// take spends one edit at now, or reports that none is left.
func (b *editBudget) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

package slack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/backoff"
)

// Name is the adapter name used in channels.Inbound.Channel and session keys.
const Name = "slack"

// MaxMessageLen is where outbound text is split (Slack refuses or truncates
// text past 40,000 characters; the margin leaves room for closing fences).
const MaxMessageLen = 39000

const (
	reactionName = "eyes"

	// postEventType marks each post's message metadata, with an id of its
	// own, so a retry can first ask Slack whether the post went through:
	// chat.postMessage has no idempotency key, and a 5xx or a lost answer
	// does not say whether Slack posted.
	postEventType = "dreamgate_post"
	// postLookback is how many recent messages that check reads.
	postLookback = 100
	// recentCap bounds the set of recently seen message ids (dedupe) and of
	// users already told they are not on the allow list.
	recentCap = 4096
)

var (
	_ channels.Channel        = (*Adapter)(nil)
	_ channels.Typer          = (*Adapter)(nil)
	_ channels.HealthReporter = (*Adapter)(nil)
)

// Adapter is the Slack channel. Create it with New; Run it once at a time;
// Send and StartTyping may be called concurrently, also while Run is not
// running.
type Adapter struct {
	cfg  Config
	log  *slog.Logger
	api  *slack.Client
	gate *connGate

	allowFrom     map[string]bool
	allowChannels map[string]bool

	seen *channels.RecentSet // channel+ts of messages already handled
	told *channels.RecentSet // users already told they are not on the allow list
	// people is what users.info said of each person (their name, and
	// whether they are a guest or of another organisation); convs what
	// Slack said of each channel, for its audience; convNoScope is set
	// once Slack refused for want of the *:read scopes, which is said
	// once.
	people      *people
	convs       *convCache
	convNoScope atomic.Bool
	// chanNames are channels' names, for the memory page (pagenames.go).
	chanNames *channels.TTLCache[string]
	// now is the adapter's clock for what it keeps of Slack's answers;
	// tests set it before Run.
	now func() time.Time
	// threads are the threads (channel/ts) seen in this process: the first
	// message of one reads its earlier messages.
	threads *channels.RecentSet
	// handles keep slash commands' response_urls (Config.Handles, or
	// this process's memory); localHandles those the store could not.
	handles      channels.ReplyHandles
	localHandles channels.MemoryReplyHandles
	streams      streams
	edits        *editBudget // chat.update allowance shared by the streams
	// botHandle is the bot's user name (auth.test), for "@bot /status".
	botHandle atomic.Value

	running atomic.Bool
	// noMetadata is set once Slack refused a post's metadata: posts go
	// without it, and a failed post can no longer be looked for.
	noMetadata atomic.Bool

	health *channels.HealthTracker

	// Tuning; tests shorten these.
	reconnectMin, reconnectMax  time.Duration
	sendRetry                   channels.SendRetry // window from Config.SendRetry; tests inject a clock
	sendTries                   int                // tries of a slash command's response_url
	apiTimeout                  time.Duration
	ackTimeout                  time.Duration
	ackDeadline                 time.Duration // an accepted message's ack waits for the gateway at most this long
	reactionTimeout             time.Duration
	streamDelay, streamInterval time.Duration
}

// New validates cfg and returns an adapter; it does no network I/O.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	a := &Adapter{
		cfg:           cfg,
		log:           cfg.Logger.With("channel", Name),
		allowFrom:     toSet(cfg.AllowFrom),
		allowChannels: toSet(cfg.AllowChannels),
		seen:          channels.NewRecentSet(recentCap),
		told:          channels.NewRecentSet(recentCap),
		now:           time.Now,
		threads:       channels.NewRecentSet(recentCap),
		edits:         newEditBudget(editsPerMinute, editBurst),
		health:        channels.NewHealthTracker(),
		reconnectMin:  time.Second,
		reconnectMax:  30 * time.Second,
		sendRetry:     channels.SendRetry{Window: cfg.SendRetry},
		sendTries:     3,
		apiTimeout:    30 * time.Second,
		ackTimeout:    5 * time.Second,
		// Slack sends an envelope again when its ack is later than 3 s.
		ackDeadline: 2 * time.Second,
		// Short: stop waits for these calls at the end of a turn.
		reactionTimeout: 10 * time.Second,
		streamDelay:     streamDelay,
		streamInterval:  streamInterval,
	}
	a.handles = cfg.Handles
	if a.handles == nil {
		a.handles = &a.localHandles
	}
	a.gate = &connGate{a: a}
	clock := func() time.Time { return a.now() }
	a.people, a.convs = newPeople(clock), newConvCache(clock)
	a.chanNames = channels.NewTTLCache[string](convCap, clock)
	opts := []slack.Option{
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionHTTPClient(&gatedClient{next: &http.Client{Transport: newTransport()}, gate: a.gate}),
		slack.OptionLog(slogOutput{log: a.log, lib: "slack-go"}),
	}
	if cfg.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(cfg.APIURL))
	}
	if a.debugEnabled() {
		opts = append(opts, slack.OptionDebug(true))
	}
	a.api = slack.New(cfg.BotToken, opts...)
	return a, nil
}

// Name returns "slack".
func (a *Adapter) Name() string { return Name }

// Health reports the Socket Mode connection state.
func (a *Adapter) Health() channels.Health { return a.health.Health() }

func (a *Adapter) debugEnabled() bool {
	return a.log.Enabled(context.Background(), slog.LevelDebug)
}

// Send posts out.Text (converted to mrkdwn and split at MaxMessageLen) to
// out.ChatID, in out.ThreadID's thread when set, part by part in order. A 429
// is waited out for its Retry-After; network errors and 5xx are retried with
// backoff, each retry only after Slack's recent messages show the post did
// not go through after all. Both go on until the send retry window
// (Config.SendRetry) has passed since the first attempt; then the message
// is dropped with one ERROR line and the error wraps channels.ErrDropped.
// Send blocks meanwhile, which holds the conversation's later messages
// behind this one; other conversations' sends do not wait for it. The error
// names the part, channel and thread that failed; parts before it were
// delivered.
func (a *Adapter) Send(ctx context.Context, out channels.Outbound) error {
	if out.ChatID == "" {
		return errors.New("slack: send: no channel id")
	}
	if t := a.slashTarget(out.ReplyTo); t != nil {
		return a.respond(ctx, t, out)
	}
	r := a.retryPolicy().Start(out)
	if st := a.streams.take(out); st != nil {
		if done, err := st.finish(ctx, r, out); done {
			return err
		}
	}
	text := toMrkdwn(out.Text)
	if strings.TrimSpace(text) == "" {
		// Slack refuses empty text (no_text); there is nothing to deliver.
		a.log.Debug("skip empty message", "chat", out.ChatID, "kind", out.Kind)
		return nil
	}
	parts := channels.SplitMessage(text, MaxMessageLen)
	for i, part := range parts {
		pk := postKey{again: out.Again}
		if out.Key != "" {
			pk.id = channels.PostKey(out.Key, i)
		}
		if err := a.post(ctx, r, out.ChatID, out.ThreadID, out.ReplyTo, part, pk); err != nil {
			return fmt.Errorf("slack: post part %d of %d to channel %s thread %q: %w", i+1, len(parts), out.ChatID, out.ThreadID, err)
		}
	}
	a.log.Debug("sent", "chat", out.ChatID, "thread", out.ThreadID, "parts", len(parts), "chars", len(text))
	return nil
}

// retryPolicy is the send retry policy with this adapter's window, backoff
// and log.
func (a *Adapter) retryPolicy() channels.SendRetry {
	p := a.sendRetry
	p.Log = a.log
	return p
}

// postKey is what a part is posted under: its id in the message metadata
// (channels.PostKey, or a random one when the answer has no key) and
// whether an earlier process may have posted it already.
type postKey struct {
	id    string
	again bool
}

// post sends one part, retrying with r. after, when set, is the ts of the
// message being answered: the post can only be newer, which bounds the
// check for a post that went through despite an error. A part sent again
// (k.again) is first looked for, in the post record and then in Slack's
// recent messages by its metadata, and not posted when found; a part
// posted is recorded under its id.
func (a *Adapter) post(ctx context.Context, r *channels.Retry, channel, thread, after, text string, k postKey) error {
	id := k.id
	if id == "" {
		id = rand.Text()
	} else if k.again && a.postedBefore(ctx, channel, thread, after, id) {
		a.log.Info("slack: this part was posted before (another process, or before a restart); not posting it again", "chat", channel, "thread", thread)
		return nil
	}
	opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	withID := func() []slack.MsgOption {
		if a.noMetadata.Load() {
			return opts
		}
		meta := slack.SlackMetadata{EventType: postEventType, EventPayload: map[string]any{"id": id}}
		return append(opts[:len(opts):len(opts)], slack.MsgOptionMetadata(meta))
	}
	unsure := false // the last failure may have posted all the same
	for {
		if unsure && a.posted(ctx, channel, thread, after, id) {
			a.log.Info("slack post went through despite the error; not posting it again", "chat", channel, "thread", thread)
			return nil
		}
		callCtx, cancel := context.WithTimeout(ctx, a.apiTimeout)
		_, ts, err := a.api.PostMessageContext(callCtx, channel, withID()...)
		cancel()
		if err == nil {
			a.recordPost(k.id, ts)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		}
		if metadataRefused(err) && a.noMetadata.CompareAndSwap(false, true) {
			// Nothing was posted; the id is a safeguard, not worth a lost reply.
			a.log.Warn("slack refused message metadata; posting without it, so a failed post may be repeated", "err", err)
			unsure = false
			continue
		}
		if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
			unsure = false // a 429 is a refusal: nothing was posted
			a.health.RateLimitWait()
			// Slack's Retry-After is in whole seconds; 0 would retry at once.
			err = r.RateLimited(ctx, max(rl.RetryAfter, time.Second), fmt.Errorf("chat.postMessage: %w", err))
		} else {
			if !transient(err) {
				return fmt.Errorf("chat.postMessage: %w", err)
			}
			unsure = true
			if r.Expired() && a.posted(ctx, channel, thread, after, id) {
				a.log.Info("slack post went through despite the error", "chat", channel, "thread", thread)
				return nil
			}
			err = r.Failed(ctx, fmt.Errorf("chat.postMessage: %w", err))
		}
		if err != nil {
			return err
		}
	}
}

// posted reports whether Slack shows the post marked id among the recent
// messages of the channel (thread set: of the thread) newer than after. It
// reads conversations.history or conversations.replies, which the
// *:history scopes that message events need already allow; when the read
// fails it reports false, and the caller posts again: a reply posted twice
// is better than a reply lost.
func (a *Adapter) posted(ctx context.Context, channel, thread, after, id string) bool {
	if a.noMetadata.Load() {
		return false // posts carry no id to look for
	}
	ctx, cancel := context.WithTimeout(ctx, a.apiTimeout)
	defer cancel()
	var msgs []slack.Message
	var err error
	if thread != "" {
		msgs, _, _, err = a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: thread, Oldest: after, Limit: postLookback, IncludeAllMetadata: true,
		})
	} else {
		var resp *slack.GetConversationHistoryResponse
		resp, err = a.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channel, Oldest: after, Limit: postLookback, IncludeAllMetadata: true,
		})
		if resp != nil {
			msgs = resp.Messages
		}
	}
	if err != nil {
		a.log.Warn("slack cannot tell whether a failed post went through; posting again", "chat", channel, "err", err)
		return false
	}
	for _, m := range msgs {
		if m.Metadata.EventType == postEventType && m.Metadata.EventPayload["id"] == id {
			return true
		}
	}
	return false
}

// postedBefore reports whether the part under id went out before: the post
// record says so, or Slack's recent messages hold one with its metadata
// (a process that died between posting and recording it).
func (a *Adapter) postedBefore(ctx context.Context, channel, thread, after, id string) bool {
	if a.cfg.Posts != nil {
		posted, err := a.cfg.Posts.Posted(id)
		if err != nil {
			a.log.Warn("slack: cannot read the post record; asking Slack", "err", err)
		}
		if posted {
			return true
		}
	}
	if a.posted(ctx, channel, thread, after, id) {
		a.recordPost(id, "")
		return true
	}
	return false
}

// recordPost notes in the post record that the part under id went out;
// a failure only costs a later check of Slack's messages.
func (a *Adapter) recordPost(id, ts string) {
	if a.cfg.Posts == nil || id == "" {
		return
	}
	if err := a.cfg.Posts.Record(id, ts); err != nil {
		a.log.Warn("slack: cannot record a post; sending it again would ask Slack first", "err", err)
	}
}

// metadataRefused reports whether Slack refused a post because of its
// metadata (invalid_metadata_format, invalid_metadata_schema,
// metadata_too_large, …).
func metadataRefused(err error) bool {
	var serr slack.SlackErrorResponse
	return errors.As(err, &serr) && strings.Contains(serr.Err, "metadata")
}

// transient reports whether a failed Web API call may succeed when repeated.
func transient(err error) bool {
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok {
		return sc.Code >= 500 || sc.Code == http.StatusRequestTimeout
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited":
			return true
		}
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true // our per-call timeout, not the caller's
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return true // connection refused, reset, DNS, timeouts
	}
	return false
}

// slackErrorCode returns Slack's error code ("invalid_auth", …) or "".
func slackErrorCode(err error) string {
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok {
		return se.Err
	}
	return ""
}

// isAuthError reports a rejected token.
func isAuthError(err error) bool {
	switch slackErrorCode(err) {
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired":
		return true
	}
	return false
}

// StartTyping adds the "eyes" reaction to in's message in the background
// and returns at once. stop returns at once too: the gateway calls it
// before it posts the reply, so it must not hold the reply up for Slack
// round trips. The same goroutine removes the reaction once stop is called
// (or ctx ends), after the add has finished so the remove cannot overtake
// it; each call is bounded by 10 s. stop is safe to call more than once.
// Failures are logged at debug and never reach the caller.
func (a *Adapter) StartTyping(ctx context.Context, in channels.Inbound) (stop func()) {
	if in.ChatID == "" || in.MessageID == "" || isSlashID(in.MessageID) {
		return func() {}
	}
	// The reaction must come off even when the turn's context was cancelled.
	base := context.WithoutCancel(ctx)
	item := slack.NewRefToMessage(in.ChatID, in.MessageID)
	stopped := make(chan struct{})
	go func() {
		callCtx, cancel := context.WithTimeout(base, a.reactionTimeout)
		err := a.api.AddReactionContext(callCtx, reactionName, item)
		cancel()
		if err != nil && slackErrorCode(err) != "already_reacted" {
			a.log.Debug("reactions.add failed", "chat", in.ChatID, "ts", in.MessageID, "err", err)
			return
		}
		select {
		case <-stopped:
		case <-ctx.Done():
		}
		callCtx, cancel = context.WithTimeout(base, a.reactionTimeout)
		defer cancel()
		if err := a.api.RemoveReactionContext(callCtx, reactionName, item); err != nil && slackErrorCode(err) != "no_reaction" {
			a.log.Debug("reactions.remove failed", "chat", in.ChatID, "ts", in.MessageID, "err", err)
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(stopped) }) }
}

// newTransport is http.DefaultTransport with more idle connections per
// host: replies to many sessions at once all go to one API host, and the
// default of 2 would open a new TLS connection for most of them.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}

// gatedClient passes Web API requests through, but holds every
// apps.connections.open until the connection backoff allows it: slack-go
// reconnects by itself, and this is where our pacing applies to it.
type gatedClient struct {
	next *http.Client
	gate *connGate
}

func (g *gatedClient) Do(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/apps.connections.open") {
		if err := g.gate.wait(req.Context()); err != nil {
			return nil, err
		}
	}
	return g.next.Do(req)
}

// connGate paces connection attempts: the first of a Run goes at once; each
// later one waits the jittered backoff.Delay(n), n counting the attempts since the last
// healthy connection (hello received), so waits run 1 s, 2 s, 4 s … 30 s and
// start again at 1 s after a connection that worked.
type connGate struct {
	a        *Adapter
	mu       sync.Mutex
	opens    int
	failures int
}

func (g *connGate) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opens, g.failures = 0, 0
}

func (g *connGate) healthy() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failures = 0
}

func (g *connGate) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err // shutting down: not a reconnect
	}
	d, first := g.next()
	if first {
		return nil
	}
	g.a.health.Set(channels.StateReconnecting, fmt.Sprintf("reconnecting in %s", d.Round(time.Millisecond)))
	g.a.log.Info("slack reconnecting", "in", d.Round(time.Millisecond))
	return backoff.Sleep(ctx, d)
}

// next books one connection attempt and returns its wait.
func (g *connGate) next() (d time.Duration, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opens++
	if g.opens == 1 {
		return 0, true
	}
	d = backoff.Jitter(backoff.Delay(g.failures, g.a.reconnectMin, g.a.reconnectMax))
	g.failures++
	return d, false
}

// slogOutput routes slack-go's own log lines into slog at debug.
type slogOutput struct {
	log *slog.Logger
	lib string
}

func (o slogOutput) Output(_ int, s string) error {
	o.log.Debug(strings.TrimSpace(s), "lib", o.lib)
	return nil
}

func toSet(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

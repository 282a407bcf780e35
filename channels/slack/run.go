package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/dreamgate/dreamgate/channels"
)

// deliverQueue bounds accepted messages waiting for sink.Deliver; envelopes
// are acked before they enter it.
const deliverQueue = 256

// handOverTimeout bounds the delivery, after Run stops, of the messages
// acked but not yet delivered (see runner.handOver).
const handOverTimeout = 5 * time.Second

// Run connects over Socket Mode and delivers accepted messages to sink, in
// the order Slack sent them, until ctx ends (nil) or Slack rejects a token
// (an error wrapping ErrAuth). Drops are reconnected with backoff (1 s
// doubling to 30 s, jittered, reset once a connection said hello).
func (a *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("slack: run: nil sink")
	}
	if !a.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer a.running.Store(false)
	ctx, stop := context.WithCancel(ctx)
	defer stop()

	a.setHealth(channels.StateConnecting, "")
	a.gate.reset()
	r := &runner{a: a, sink: sink, stop: stop, queue: make(chan channels.Inbound, deliverQueue)}
	err := r.run(ctx)
	stop()
	r.bg.Wait()
	if err != nil {
		a.setHealth(channels.StateFailed, err.Error())
		a.log.Error("slack stopped", "err", err)
		return err
	}
	a.setHealth(channels.StateStopped, "")
	return nil
}

// runner is the state of one Run.
type runner struct {
	a    *Adapter
	sink channels.Sink
	stop context.CancelFunc

	botUserID, botID string
	mentionRE        *regexp.Regexp

	queue chan channels.Inbound
	bg    sync.WaitGroup // replies sent by the runner itself

	// held is the message deliver was handing over when Run stopped, late
	// the one readEvents could not queue; each is written by its own
	// goroutine and read by handOver after both have ended.
	held, late *channels.Inbound

	attemptMu     sync.Mutex
	cancelAttempt context.CancelFunc
}

func (r *runner) run(ctx context.Context) error {
	if err := r.authTest(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	opts := []socketmode.Option{socketmode.OptionLog(slogOutput{log: r.a.log, lib: "slack-go/socketmode"})}
	if r.a.debugEnabled() {
		opts = append(opts, socketmode.OptionDebug(true))
	}
	sm := socketmode.New(r.a.api, opts...)

	var wg sync.WaitGroup
	wg.Go(func() { r.readEvents(ctx, sm) })
	wg.Go(func() { r.deliver(ctx) })
	err := r.connectLoop(ctx, sm)
	r.stop()
	wg.Wait()
	r.handOver(ctx)
	return err
}

// handOver delivers, once the event stream has stopped, what was acked but
// not yet delivered: Slack will not send those events again. A gateway that
// is shutting down still saves each message in its session and tells its
// sender, so nothing acked is dropped in silence. ctx is Run's, already
// done; the hand-over has its own short deadline.
func (r *runner) handOver(ctx context.Context) {
	var left []channels.Inbound // in the order Slack sent them
	if r.held != nil {
		left = append(left, *r.held)
	}
	for len(r.queue) > 0 {
		left = append(left, <-r.queue)
	}
	if r.late != nil {
		left = append(left, *r.late)
	}
	if len(left) == 0 {
		return
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handOverTimeout)
	defer cancel()
	lost := 0
	for _, in := range left {
		if in.SenderName == "" {
			in.SenderName = r.a.senderName(hctx, in.SenderID)
		}
		err := r.sink.Deliver(hctx, in)
		switch {
		case err == nil:
		case errors.Is(err, channels.ErrBusy):
			if err := r.a.Send(hctx, channels.ReplyTo(in, channels.KindReply, busyReply)); err != nil {
				r.a.log.Warn("slack notice not sent", "session", in.SessionKey, "err", err)
			}
		default:
			lost++
			r.a.log.Error("slack message acked but not delivered", "session", in.SessionKey, "err", err)
		}
	}
	r.a.log.Info("slack handed over the messages acked before it stopped", "count", len(left), "lost", lost)
}

// authTest learns the bot's own ids, retrying transient failures.
func (r *runner) authTest(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, r.a.apiTimeout)
		resp, err := r.a.api.AuthTestContext(callCtx)
		cancel()
		if err == nil {
			r.botUserID, r.botID = resp.UserID, resp.BotID
			r.mentionRE = regexp.MustCompile(`\s*<@` + regexp.QuoteMeta(resp.UserID) + `(?:\|[^>]*)?>\s*`)
			r.a.log.Info("slack bot identified", "bot_user", resp.UserID, "team", resp.TeamID)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if isAuthError(err) {
			return fmt.Errorf("slack: auth.test with slack.botToken: %w: %w", ErrAuth, err)
		}
		d := backoffDelay(attempt, r.a.reconnectMin, r.a.reconnectMax)
		r.a.setHealth(channels.StateConnecting, "auth.test failed: "+err.Error())
		r.a.log.Warn("slack auth.test failed; retrying", "in", d, "err", err)
		if sleepCtx(ctx, d) != nil {
			return nil
		}
	}
}

// connectLoop runs slack-go's Socket Mode client. slack-go reconnects after
// a drop by itself (paced by connGate), but after a failed attempt it would
// back off up to 5 minutes; so readEvents cancels the attempt on a
// connection error and this loop starts a fresh one.
func (r *runner) connectLoop(ctx context.Context, sm *socketmode.Client) error {
	for {
		attemptCtx, cancel := context.WithCancel(ctx)
		r.attemptMu.Lock()
		r.cancelAttempt = cancel
		r.attemptMu.Unlock()
		err := sm.RunContext(attemptCtx)
		aborted := attemptCtx.Err() != nil
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case aborted:
			continue // cancelled by readEvents after a failed attempt
		case isAuthError(err):
			return fmt.Errorf("slack: apps.connections.open with slack.appToken: %w: %w", ErrAuth, err)
		default:
			r.a.log.Warn("slack socket mode stopped; reconnecting", "err", err)
		}
	}
}

func (r *runner) abortAttempt() {
	r.attemptMu.Lock()
	defer r.attemptMu.Unlock()
	if r.cancelAttempt != nil {
		r.cancelAttempt()
	}
}

// readEvents consumes slack-go's event stream: lifecycle events update the
// health, every envelope is acked at once, then messages are filtered and
// queued for delivery in arrival order.
func (r *runner) readEvents(ctx context.Context, sm *socketmode.Client) {
	log := r.a.log
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return
		case evt = <-sm.Events:
		}
		switch evt.Type {
		case socketmode.EventTypeConnecting:
			if ce, ok := evt.Data.(*slack.ConnectingEvent); ok && ce.ConnectionCount > 0 {
				r.a.setHealth(channels.StateReconnecting, "connection lost")
			}
			log.Debug("slack connecting")
		case socketmode.EventTypeConnectionError:
			detail := "connection failed"
			if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
				detail += ": " + ce.ErrorObj.Error()
			}
			r.a.setHealth(channels.StateReconnecting, detail)
			log.Warn("slack connection failed", "detail", detail)
			r.abortAttempt()
		case socketmode.EventTypeConnected:
			r.a.setHealth(channels.StateConnected, "")
			log.Info("slack connected")
		case socketmode.EventTypeHello:
			r.a.gate.healthy()
			log.Debug("slack hello")
		case socketmode.EventTypeEventsAPI:
			r.ack(ctx, sm, evt.Request)
			if api, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
				r.handleEventsAPI(ctx, evt.Request, api)
			}
		case socketmode.EventTypeErrorBadMessage:
			// slack-go could not parse it, but Slack still wants its ack or
			// it redelivers the envelope.
			if bm, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
				var env struct {
					EnvelopeID string `json:"envelope_id"`
				}
				if json.Unmarshal(bm.Message, &env) == nil && env.EnvelopeID != "" {
					r.ack(ctx, sm, &socketmode.Request{EnvelopeID: env.EnvelopeID})
				}
				log.Warn("slack sent an envelope slack-go cannot read; acked and ignored", "envelope", env.EnvelopeID, "err", bm.Cause)
			}
		default:
			// slash_commands, interactive and anything newer: acked so Slack
			// does not retry, otherwise ignored.
			r.ack(ctx, sm, evt.Request)
			log.Debug("slack event ignored", "type", string(evt.Type))
		}
	}
}

func (r *runner) ack(ctx context.Context, sm *socketmode.Client, req *socketmode.Request) {
	if req == nil || req.EnvelopeID == "" {
		return
	}
	ackCtx, cancel := context.WithTimeout(ctx, r.a.ackTimeout)
	defer cancel()
	if err := sm.AckCtx(ackCtx, req.EnvelopeID, nil); err != nil {
		r.a.log.Warn("slack ack failed", "envelope", req.EnvelopeID, "err", err)
	}
}

func (r *runner) handleEventsAPI(ctx context.Context, req *socketmode.Request, api slackevents.EventsAPIEvent) {
	var m rawMessage
	switch ev := api.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		m = rawMessage{
			mention: true, channel: ev.Channel, user: ev.User, botID: ev.BotID,
			text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp, edited: ev.Edited != nil,
		}
	case *slackevents.MessageEvent:
		m = rawMessage{
			channel: ev.Channel, channelType: ev.ChannelType, user: ev.User, botID: ev.BotID,
			subtype: ev.SubType, text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp,
		}
		if ev.Message != nil && ev.Message.Edited != nil {
			m.edited = true
		}
	default:
		r.a.log.Debug("slack event ignored", "type", api.InnerEvent.Type)
		return
	}
	retry := 0
	if req != nil {
		retry = req.RetryAttempt
	}
	in, v := r.a.filter(m, r.botUserID, r.botID, r.mentionRE)
	r.a.log.Debug("slack message", "verdict", v.String(), "chat", m.channel, "ts", m.ts, "user", m.user, "retry", retry)
	switch v {
	case verdictAccept:
		select {
		case r.queue <- in:
		case <-ctx.Done():
			r.late = &in
		}
	case verdictNotAllowedDM:
		if r.a.told.add(m.user) {
			r.a.log.Info("slack DM from a user not in allowFrom; told once", "user", m.user)
			r.reply(ctx, in, notAllowedReply)
		}
	}
}

// deliver hands accepted messages to the sink one at a time, so the
// gateway sees them in the order they were sent.
func (r *runner) deliver(ctx context.Context) {
	for {
		var in channels.Inbound
		select {
		case <-ctx.Done():
			return
		case in = <-r.queue:
		}
		in.SenderName = r.a.senderName(ctx, in.SenderID)
		err := r.sink.Deliver(ctx, in)
		switch {
		case err == nil:
		case errors.Is(err, channels.ErrBusy):
			r.a.log.Info("slack message refused: session busy", "session", in.SessionKey)
			r.reply(ctx, in, busyReply)
		case errors.Is(err, channels.ErrClosed):
			r.a.log.Info("gateway closed; slack stops receiving")
			r.stop()
			return
		case ctx.Err() != nil:
			r.held = &in
			return
		default:
			r.a.log.Error("slack message not delivered to the gateway", "session", in.SessionKey, "err", err)
		}
	}
}

// reply sends a short notice without holding up the event stream.
func (r *runner) reply(ctx context.Context, in channels.Inbound, text string) {
	r.bg.Go(func() {
		if err := r.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, text)); err != nil {
			r.a.log.Warn("slack notice not sent", "session", in.SessionKey, "err", err)
		}
	})
}

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
	"github.com/dreamgate/dreamgate/internal/backoff"
)

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

	a.health.Set(channels.StateConnecting, "")
	a.gate.reset()
	r := &runner{a: a, stop: stop}
	// A message's envelope is acked once the gateway has it (Done), or
	// after ackDeadline; Slack will not send an acked envelope again, so
	// what is left when Run stops is handed over.
	r.out = channels.NewDelivery(channels.DeliveryConfig[pending]{
		Sink:   sink,
		Accept: r.accept,
		Send:   a.Send,
		// The gateway is going away: the ack of the message it has just
		// refused (and saved) is on its way out, and stopping the socket
		// at once would drop it, so Slack would send the message again.
		Stop: func() { time.AfterFunc(ackFlush, stop) },
		Done: func(p pending) {
			if p.ack != nil {
				p.ack()
			}
		},
		Log: a.log,
	})
	err := r.run(ctx)
	if err != nil {
		a.health.Set(channels.StateFailed, err.Error())
		a.log.Error("slack stopped", "err", err)
		return err
	}
	a.health.Set(channels.StateStopped, "")
	return nil
}

// ackFlush is how long the socket stays up, once the gateway has closed,
// for the acks already sent to reach Slack.
const ackFlush = 250 * time.Millisecond

// runner is the state of one Run.
type runner struct {
	a    *Adapter
	stop context.CancelFunc
	out  *channels.Delivery[pending]

	botUserID, botID string
	// teamID is the bot's workspace (auth.test), for an event that names
	// none.
	teamID    string
	mentionRE *regexp.Regexp

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
	wg.Go(func() { r.out.Run(ctx) })
	err := r.connectLoop(ctx, sm)
	r.stop()
	wg.Wait()
	r.out.HandOver(ctx)
	return err
}

// authTest learns the bot's own ids, retrying transient failures.
func (r *runner) authTest(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, r.a.apiTimeout)
		resp, err := r.a.api.AuthTestContext(callCtx)
		cancel()
		if err == nil {
			r.botUserID, r.botID, r.teamID = resp.UserID, resp.BotID, resp.TeamID
			r.a.botHandle.Store(resp.User)
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
		d := backoff.Jitter(backoff.Delay(attempt, r.a.reconnectMin, r.a.reconnectMax))
		r.a.health.Set(channels.StateConnecting, "auth.test failed: "+err.Error())
		r.a.log.Warn("slack auth.test failed; retrying", "in", d, "err", err)
		if backoff.Sleep(ctx, d) != nil {
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
// health, messages are filtered and queued for delivery in arrival order,
// and every envelope is acked: at once, but for a message that is taken,
// whose ack waits until the gateway has it (see deferredAck).
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
				r.a.health.Set(channels.StateReconnecting, "connection lost")
			}
			log.Debug("slack connecting")
		case socketmode.EventTypeConnectionError:
			detail := "connection failed"
			if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
				detail += ": " + ce.ErrorObj.Error()
			}
			r.a.health.Set(channels.StateReconnecting, detail)
			log.Warn("slack connection failed", "detail", detail)
			r.abortAttempt()
		case socketmode.EventTypeConnected:
			r.a.health.Set(channels.StateConnected, "")
			log.Info("slack connected")
		case socketmode.EventTypeHello:
			r.a.gate.healthy()
			// Changes announced while no connection was up are lost.
			r.a.convs.dropAll()
			log.Debug("slack hello")
		case socketmode.EventTypeEventsAPI:
			ack := r.deferredAck(ctx, sm, evt.Request)
			if api, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
				r.handleEventsAPI(ctx, evt.Request, api, ack)
			} else {
				ack()
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
		case socketmode.EventTypeSlashCommand:
			r.ack(ctx, sm, evt.Request)
			if c, ok := evt.Data.(slack.SlashCommand); ok {
				r.handleSlash(ctx, slashCommand{
					command: c.Command, text: c.Text, team: c.TeamID, channel: c.ChannelID, user: c.UserID,
					responseURL: c.ResponseURL, triggerID: c.TriggerID,
				})
			}
		default:
			// interactive and anything newer: acked so Slack does not
			// retry, otherwise ignored.
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

// deferredAck returns req's ack, to be sent once the gateway has the
// message: Slack does not send an acked envelope again, so a process killed
// between an early ack and the gateway's record of the message (the
// sender's name, a thread's history and files are fetched in between)
// lost it for good; unacked, it comes again to the next process, which
// answers it once. The ack goes out by itself after ackDeadline, before
// Slack's 3 s, and not at all once ctx has ended (the process is
// stopping; Slack sends it again to the next one, which knows it).
func (r *runner) deferredAck(ctx context.Context, sm *socketmode.Client, req *socketmode.Request) func() {
	once := sync.OnceFunc(func() {
		if ctx.Err() == nil {
			r.ack(ctx, sm, req)
		}
	})
	if r.a.cfg.AckWhenRecorded {
		return once // Slack's resend is another process's to answer
	}
	t := time.AfterFunc(r.a.ackDeadline, once)
	return func() {
		t.Stop()
		once()
	}
}

func (r *runner) handleEventsAPI(ctx context.Context, req *socketmode.Request, api slackevents.EventsAPIEvent, ack func()) {
	accepted := false
	defer func() {
		if !accepted {
			ack()
		}
	}()
	var m rawMessage
	var payload json.RawMessage
	if req != nil {
		payload = req.Payload
	}
	w := eventWhere(api.TeamID, api.IsExtSharedChannel, payload)
	if r.a.audienceEvent(api.InnerEvent.Data) {
		return
	}
	userTeam := ""
	switch ev := api.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		m = rawMessage{
			mention: true, channel: ev.Channel, user: ev.User, botID: ev.BotID,
			text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp, edited: ev.Edited != nil,
			files: fileRefs(ev.Files),
		}
		userTeam = ev.UserTeam
	case *slackevents.MessageEvent:
		m = rawMessage{
			channel: ev.Channel, channelType: ev.ChannelType, user: ev.User, botID: ev.BotID,
			subtype: ev.SubType, text: ev.Text, ts: ev.TimeStamp, threadTS: ev.ThreadTimeStamp,
		}
		userTeam = ev.UserTeam
		w.channelType = ev.ChannelType
		r.a.noteMessage(ev.Channel, ev.ChannelType, ev.SubType, api.IsExtSharedChannel)
		if ev.Message != nil {
			m.edited = ev.Message.Edited != nil
			m.files = fileRefs(ev.Message.Files)
		}
	default:
		r.a.log.Debug("slack event ignored", "type", api.InnerEvent.Type)
		return
	}
	if userTeam != "" && w.team != "" && userTeam != w.team {
		w.external = true // a person of another workspace or organisation is in it
	}
	retry := 0
	if req != nil {
		retry = req.RetryAttempt
	}
	in, v := r.a.filter(m, r.botUserID, r.botID, r.mentionRE)
	r.a.log.Debug("slack message", "verdict", v.String(), "chat", m.channel, "ts", m.ts, "user", m.user, "retry", retry)
	switch v {
	case verdictAccept:
		accepted = true
		p := pending{in: in, where: w, files: m.files, ack: ack}
		if m.threadTS != "" && m.threadTS != m.ts {
			p.existingThread = m.threadTS
		}
		r.out.Put(ctx, p)
	case verdictNotAllowedDM:
		if r.a.told.Add(m.user) {
			r.a.log.Info("slack DM from a user not in allowFrom; told once", "user", m.user)
			r.out.Notify(ctx, channels.ReplyTo(in, channels.KindError, channels.NotAllowedNotice))
		}
	}
}

// pending is what the reader queues for delivery: the Inbound so far and
// what Accept still has to fetch (on the delivery goroutine, in order,
// without holding up the acks).
type pending struct {
	in channels.Inbound
	// where is what Slack said of the conversation, for its audience.
	where where
	files []fileRef
	// existingThread is the ts of the thread the message was posted in,
	// when the bot did not open it.
	existingThread string
	// ack tells Slack the message was taken; the Delivery calls it once
	// the gateway has it.
	ack func()
}

// accept completes a queued message: its audience, the sender's name, the
// earlier messages of a thread new to the bot, the files' text.
func (r *runner) accept(ctx context.Context, p pending) (channels.Inbound, bool) {
	a, in := r.a, p.in
	aud, ok := r.audienceOf(ctx, p.where, in.ChatID, in.SenderID)
	if !ok {
		return channels.Inbound{}, false
	}
	in.Audience = aud
	in.SenderName = a.senderName(ctx, in.SenderID)
	if in.ThreadID != "" && a.threads.Add(in.ChatID+"/"+in.ThreadID) && p.existingThread != "" {
		in.Context = r.threadContext(ctx, in.ChatID, p.existingThread, in.MessageID)
	}
	if len(p.files) > 0 {
		files, images := a.readFiles(ctx, p.files)
		in.Images = images
		switch {
		case files == "":
		case in.Text == "":
			in.Text = files
		default:
			in.Text += "\n\n" + files
		}
	}
	return in, true
}

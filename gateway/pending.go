package gateway

import (
	"context"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
)

// resendWindow bounds how far back a start looks for messages a crash left
// unanswered: a conversation quiet for longer is not worth a late note.
const resendWindow = 24 * time.Hour

// restartedNotice answers a message a crash left unanswered that is older
// than Config.AnswerPending.
const restartedNotice = "dreamgate restarted before it could answer this message; please send it again."

// originOf is what a session records of where a message came from, so a
// restart can answer it.
func originOf(in channels.Inbound) session.Origin {
	return session.Origin{
		Channel: in.Channel, ChatID: in.ChatID, ThreadID: in.ThreadID, MessageID: in.MessageID,
		SenderID: in.SenderID, SenderName: in.SenderName, Local: in.Local,
	}
}

// OpenInbox keeps the record of accepted messages not yet in their session
// at path (inbox.go), and takes over what a previous process left there:
// Run answers those messages. Only the gateway process that owns the
// channels opens it.
func (g *Gateway) OpenInbox(path string) error {
	ib, left, err := openInbox(path)
	if err != nil {
		return err
	}
	g.inbox, g.inboxLeft = ib, left
	return nil
}

// accepted records in the inbox a chat message Submit queued.
func (g *Gateway) accepted(in channels.Inbound, pc *parsedCommand, err error) {
	if err != nil || pc != nil || g.inbox == nil || !recoverable(in) {
		return
	}
	if err := g.inbox.add(inboxLineOf(in)); err != nil {
		g.logger.Warn("could not record an accepted message; a crash before its turn would lose it", "session", in.SessionKey, "err", err)
	}
}

// redelivered reports a message its session holds as answered: a platform
// delivers again what a killed process read but did not ack, and the
// adapter's memory of what it saw died with the process. It is not
// answered twice.
func (g *Gateway) redelivered(sess *session.Session, in channels.Inbound) bool {
	if !recoverable(in) || !sess.Answered(originOf(in), in.Time) {
		return false
	}
	g.logger.Info("message delivered again after a restart and already answered; ignored", "session", in.SessionKey)
	g.inboxDone(in)
	return true
}

// recordUser records the turn's user message in its session with its
// origin (once: a restart answering it finds it there) and lets the inbox
// forget it.
func (g *Gateway) recordUser(sess *session.Session, in channels.Inbound) error {
	_, err := sess.AppendUser(userMessage(in, true), originOf(in))
	if err == nil {
		g.inboxDone(in)
	}
	return err
}

// finishedUnrecorded is for a message answered without a turn recording it
// with its origin (too long, dropped by /stop): a restart must neither
// answer it nor take what its session holds for unanswered.
func (g *Gateway) finishedUnrecorded(in channels.Inbound) {
	g.inboxDone(in)
	g.markAnswered(in)
}

func (g *Gateway) inboxDone(in channels.Inbound) {
	if g.inbox != nil {
		g.inbox.done(in)
	}
}

func (g *Gateway) closeInbox() {
	if g.inbox != nil {
		if err := g.inbox.close(); err != nil {
			g.logger.Warn("closing the inbox", "err", err)
		}
	}
}

// markAnswered records in in's session that its messages have been answered,
// so a restart does not answer them again.
func (g *Gateway) markAnswered(in channels.Inbound) {
	s, err := g.deps.Sessions.Get(in.SessionKey)
	if err == nil {
		err = s.MarkAnswered()
	}
	if err != nil {
		g.logger.Warn("could not record that a message was answered; a restart may answer it again", "session", in.SessionKey, "err", err)
	}
}

// answerPending finds, at start, the messages a crash left unanswered (the
// platform acked them, so nobody delivers them again) and queues their
// answers before any new message: those received within
// Config.AnswerPending are answered, a recorded reply that may not have
// gone out is sent, and older ones are told to send again. Messages from
// the local terminal are left alone: whoever typed them is gone. Only the
// process that owns the channels does this: the one that opened the inbox.
func (g *Gateway) answerPending() {
	if g.cfg.AnswerPending <= 0 || g.inbox == nil {
		return
	}
	list, err := g.deps.Sessions.ListOnDisk()
	if err != nil {
		g.logger.Warn("cannot look for messages left unanswered", "err", err)
		return
	}
	now := g.now()
	for _, od := range list {
		if now.Sub(od.Modified) > resendWindow || g.deps.Sessions.IsLoaded(od.Key) {
			continue
		}
		sess, err := g.deps.Sessions.Get(od.Key)
		if err != nil {
			g.logger.Warn("cannot open a session to look for an unanswered message", "session", od.Key, "err", err)
			continue
		}
		p, ok := sess.Pending()
		if !ok || p.Origin.Local || p.Origin.MessageID == "" || g.channel(p.Origin.Channel) == nil {
			g.deps.Sessions.Evict(sess)
			continue
		}
		g.requeue(inboundOf(od.Key, p.Origin, p.Message.Content, p.Message.Time), p.Reply, now)
	}
	// Then what was accepted and never reached its session (queued behind
	// a turn, or on its way to its worker), oldest first as written.
	left := g.inboxLeft
	g.inboxLeft = nil
	seen := map[string]bool{}
	for _, l := range left {
		in := inboundOf(l.Key, l.Origin, l.Text, l.Time)
		if now.Sub(l.Time) > resendWindow {
			g.inboxDone(in)
			continue
		}
		if seen[l.id()] || g.channel(l.Origin.Channel) == nil {
			continue // kept for a start with that channel
		}
		seen[l.id()] = true
		sess, err := g.deps.Sessions.Get(l.Key)
		if err != nil {
			g.logger.Warn("cannot open a session to look for an unanswered message", "session", l.Key, "err", err)
			continue
		}
		if sess.Holds(l.Origin, l.Time) {
			g.inboxDone(in) // its turn started: the session says whether it was answered
			continue
		}
		g.requeue(in, "", now) // it stays in the inbox until its turn records it
	}
	if err := g.inbox.compact(); err != nil {
		g.logger.Warn("could not compact the inbox", "err", err)
	}
}

func inboundOf(key string, o session.Origin, text string, at time.Time) channels.Inbound {
	return channels.Inbound{
		Channel: o.Channel, ChatID: o.ChatID, ThreadID: o.ThreadID,
		SessionKey: key, SenderID: o.SenderID, SenderName: o.SenderName,
		MessageID: o.MessageID, Text: text, Time: at,
	}
}

// requeue queues the answer to a message a crash left unanswered: its
// recorded reply when there is one, a turn when it is recent, else a
// request to send it again.
func (g *Gateway) requeue(in channels.Inbound, reply string, now time.Time) {
	age := now.Sub(in.Time)
	var j job
	switch {
	case reply != "":
		g.logger.Info("sending a reply a restart left unsent", "session", in.SessionKey, "age", age.Round(time.Second))
		j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindReply, reply) }}
	case age <= g.cfg.AnswerPending:
		g.logger.Info("answering a message a restart left unanswered", "session", in.SessionKey, "age", age.Round(time.Second))
		j = job{in: in} // a turn records the message once, whether or not the session holds it
	default:
		g.logger.Info("asking to resend a message a restart left unanswered", "session", in.SessionKey, "age", age.Round(time.Second))
		j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindError, restartedNotice) }}
	}
	if err := g.enqueue(j); err != nil {
		g.logger.Warn("could not queue an unanswered message", "session", in.SessionKey, "err", err)
	}
}

// finishPending sends text for a pending message without a turn: its
// working indicator is cleared first, as no turn will clear it.
func (g *Gateway) finishPending(ctx context.Context, in channels.Inbound, kind, text string) {
	if c, ok := g.channel(in.Channel).(channels.WorkingClearer); ok {
		if err := c.ClearWorking(ctx, in); err != nil {
			g.logger.Warn("could not clear the working indicator of an unanswered message", "session", in.SessionKey, "err", err)
		}
	}
	g.send(channels.ReplyTo(in, kind, text))
	g.markAnswered(in)
	g.inboxDone(in)
}

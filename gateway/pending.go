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
// the local terminal are left alone: whoever typed them is gone.
func (g *Gateway) answerPending() {
	if g.cfg.AnswerPending <= 0 {
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
		in := channels.Inbound{
			Channel: p.Origin.Channel, ChatID: p.Origin.ChatID, ThreadID: p.Origin.ThreadID,
			SessionKey: od.Key, SenderID: p.Origin.SenderID, SenderName: p.Origin.SenderName,
			MessageID: p.Origin.MessageID, Text: p.Message.Content, Time: p.Message.Time,
		}
		age := now.Sub(p.Message.Time)
		var j job
		switch {
		case p.Reply != "":
			g.logger.Info("sending a reply a restart left unsent", "session", od.Key, "age", age.Round(time.Second))
			j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindReply, p.Reply) }}
		case age <= g.cfg.AnswerPending:
			g.logger.Info("answering a message a restart left unanswered", "session", od.Key, "age", age.Round(time.Second))
			j = job{in: in} // the turn finds the message recorded and does not add it again
		default:
			g.logger.Info("asking to resend a message a restart left unanswered", "session", od.Key, "age", age.Round(time.Second))
			j = job{in: in, task: func(ctx context.Context) { g.finishPending(ctx, in, channels.KindError, restartedNotice) }}
		}
		if err := g.enqueue(j); err != nil {
			g.logger.Warn("could not queue an unanswered message", "session", od.Key, "err", err)
		}
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
}

package gateway

import (
	"fmt"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/llm"
)

// DefaultMaxMessageBytes is the inbound size limit when Config leaves it 0.
const DefaultMaxMessageBytes = 64 << 10

// capInbound cuts a message longer than the limit right away, so a
// megabyte pasted into a chat is not held, tokenised and replayed: the text
// keeps its first MaxMessageBytes (at a character boundary) and a visible
// marker. It returns the original size, 0 when the message fits.
func (g *Gateway) capInbound(in channels.Inbound) (channels.Inbound, int) {
	limit := g.maxMessageBytes()
	size := len(in.Text)
	if size <= limit {
		return in, 0
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(in.Text[cut]) {
		cut--
	}
	// The concatenation is a fresh string: the original is not kept alive.
	in.Text = in.Text[:cut] +
		fmt.Sprintf("\n\n[cut by dreamgate: this message was %d bytes; only the first %d are kept]", size, cut)
	return in, size
}

func (g *Gateway) maxMessageBytes() int {
	if g.cfg.MaxMessageBytes > 0 {
		return g.cfg.MaxMessageBytes
	}
	return DefaultMaxMessageBytes
}

// answerTooLong answers a message capInbound cut, without asking the model:
// the cut message and the answer are saved in the session (so the record
// says what happened, and nothing looks unanswered after a restart), and
// the sender is told how long is too long.
func (g *Gateway) answerTooLong(in channels.Inbound, size int) Result {
	notice := fmt.Sprintf("Your message is too long for me (%s; the limit is %s), so I did not answer it; "+
		"only its first %s is kept in this conversation. Please send a shorter message, or split it into parts.",
		formatBytes(size), formatBytes(g.maxMessageBytes()), formatBytes(g.maxMessageBytes()))
	g.logger.Warn("over-long message cut and not answered", "session", in.SessionKey, "bytes", size, "limit", g.maxMessageBytes())
	if sess, err := g.deps.Sessions.Get(in.SessionKey); err != nil {
		g.logger.Error("cannot open session", "session", in.SessionKey, "err", err)
	} else if err := sess.Append(
		userMessage(in, false),
		llm.Message{Role: llm.RoleAssistant, Content: notice},
	); err != nil {
		g.logger.Error("cannot save the cut message", "session", in.SessionKey, "err", err)
	}
	g.send(channels.ReplyTo(in, channels.KindReply, notice))
	g.finishedUnrecorded(in)
	return Result{Reply: notice}
}

// formatBytes writes a size the way people read it: "64 KiB", "5.0 MiB".
func formatBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

package gateway

import (
	"fmt"
	"strings"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

// Earlier messages a channel hands over with the first message of a
// conversation (a Slack thread the bot is mentioned in, the Discord
// message being replied to) go into the new session once, as one user
// message marked as context, before the person's own message: the model
// sees what the question is about, and the archive keeps it like any
// other message. A session that already has messages ignores them — it
// saw the conversation itself.

const (
	// contextTokens bounds the context message; the newest messages are
	// kept. Tokens are estimated as bytes/3, an over-estimate for prose
	// and code alike, so the bound holds without a tokenizer.
	contextTokens = 3000
	// contextMessageBytes bounds one earlier message (a pasted log).
	contextMessageBytes = 2000

	contextHeader = "Earlier in this conversation, before I was asked (context only; oldest first):"
)

// addContext saves in.Context into sess as its first message when sess is
// new. A failed save is logged: the turn goes on without the context.
func (g *Gateway) addContext(sess *session.Session, in channels.Inbound) {
	if len(in.Context) == 0 || sess.Len() > 0 {
		return
	}
	text := renderContext(in.Context)
	if text == "" {
		return
	}
	t := in.Time
	if first := in.Context[0].Time; !first.IsZero() {
		t = first
	}
	if err := sess.Append(llm.Message{Role: llm.RoleUser, Content: text, Time: t}); err != nil {
		g.logger.Error("cannot save the conversation's earlier messages; answering without them", "session", in.SessionKey, "err", err)
		return
	}
	g.logger.Debug("earlier messages added as context", "session", in.SessionKey, "messages", len(in.Context), "bytes", len(text))
}

// renderContext writes msgs as "[time] name: text" lines under the
// header, dropping the oldest past contextTokens; "" when none fits. When
// messages were dropped it says how many, so the model does not take the
// rest for the whole conversation.
func renderContext(msgs []channels.ContextMessage) string {
	budget := contextTokens*3 - len(contextHeader) - 64
	lines := make([]string, 0, len(msgs))
	for i := len(msgs) - 1; i >= 0; i-- {
		line := contextLine(msgs[i])
		if len(line)+1 > budget {
			break
		}
		budget -= len(line) + 1
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(contextHeader)
	if left := len(msgs) - len(lines); left > 0 {
		fmt.Fprintf(&b, "\n(%d older messages not shown)", left)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		b.WriteString("\n")
		b.WriteString(lines[i])
	}
	return b.String()
}

func contextLine(m channels.ContextMessage) string {
	name := strings.TrimSpace(m.SenderName)
	switch {
	case m.FromBot:
		name = "you (the assistant)"
	case name == "":
		name = "someone"
	}
	text := strings.TrimSpace(m.Text)
	if len(text) > contextMessageBytes {
		cut := contextMessageBytes
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text = text[:cut] + " …(cut)"
	}
	if m.Time.IsZero() {
		return fmt.Sprintf("%s: %s", name, text)
	}
	return fmt.Sprintf("[%s] %s: %s", m.Time.UTC().Format("2006-01-02 15:04 UTC"), name, text)
}

// utf8Start reports whether b starts a UTF-8 sequence (so a cut there
// splits no character).
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

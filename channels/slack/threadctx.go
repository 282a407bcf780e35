package slack

import (
	"context"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// Thread context: mentioned inside a thread it has not seen, the bot reads
// the thread's earlier messages (conversations.replies, the *:history
// scope of the channel) into Inbound.Context, so the model knows what the
// person is asking about. The gateway adds them to a new session only.

const (
	// contextFetch is how many messages one conversations.replies call
	// asks for; contextMessages and contextChars bound what is kept, the
	// newest first.
	contextFetch    = 200
	contextMessages = 40
	contextChars    = 12000
	// contextMessageChars bounds one message (a pasted log).
	contextMessageChars = 2000
	contextTimeout      = 10 * time.Second
)

// threadContext returns the messages of channel's thread ts posted before
// before, oldest first, bounded by contextMessages and contextChars,
// names resolved. A failed read is logged and gives none: the question
// is answered without its context rather than not at all.
func (r *runner) threadContext(ctx context.Context, channel, ts, before string) []channels.ContextMessage {
	a := r.a
	// One deadline for the read and the name lookups: every delivery of
	// the adapter waits behind this one.
	ctx, cancel := context.WithTimeout(ctx, min(contextTimeout, a.apiTimeout))
	defer cancel()
	msgs, _, _, err := a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: channel, Timestamp: ts, Latest: before, Inclusive: false, Limit: contextFetch,
	})
	if err != nil {
		a.log.Warn("slack cannot read the thread it was mentioned in; answering without its earlier messages", "chat", channel, "thread", ts, "err", err)
		return nil
	}
	beforeT := parseTS(before)
	var kept []channels.ContextMessage
	chars := 0
	for i := len(msgs) - 1; i >= 0 && len(kept) < contextMessages; i-- {
		m := msgs[i]
		t := parseTS(m.Timestamp)
		if m.Timestamp == before || (!beforeT.IsZero() && !t.Before(beforeT)) {
			continue
		}
		text := strings.TrimSpace(unescaper.Replace(m.Text))
		if text == "" {
			if len(m.Files) == 0 {
				continue
			}
			text = "(shared a file)"
		}
		text, _ = textcut.Chars(text, contextMessageChars, " …(cut)")
		if chars+len(text) > contextChars && len(kept) > 0 {
			break
		}
		chars += len(text)
		cm := channels.ContextMessage{Text: text, Time: t}
		switch {
		case (r.botUserID != "" && m.User == r.botUserID) || (r.botID != "" && m.BotID == r.botID):
			cm.FromBot = true
		case m.User != "":
			if cm.SenderName = a.senderName(ctx, m.User); cm.SenderName == "" {
				cm.SenderName = m.User
			}
		case m.Username != "":
			cm.SenderName = m.Username
		default:
			cm.SenderName = "an app"
		}
		kept = append(kept, cm)
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept
}

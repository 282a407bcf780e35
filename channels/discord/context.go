package discord

import (
	"context"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/textcut"
)

// Bounds on the earlier messages handed over as Inbound.Context.
const (
	contextMessages    = 20   // messages read from a thread the bot joins
	contextChars       = 8000 // characters of context in all
	contextMessageMax  = 1500 // characters kept of one message
	recentThreadsKnown = 4096 // threads whose history was read already
)

// conversationContext gathers what the bot has not seen of the conversation
// m belongs to: the recent messages of a thread (under parent; "" outside
// threads) it is addressed in for the first time in this process, with the
// message the thread was started from, and the message m replies to. The gateway
// uses them only for a new session, so reading them again after a restart
// does no harm. Oldest first, bounded by count and characters.
func (a *Adapter) conversationContext(ctx context.Context, m *discordgo.Message, parent string) []channels.ContextMessage {
	bot := a.bot()
	var msgs []*discordgo.Message
	if parent != "" && a.threadsRead.Add(m.ChannelID) {
		got, err := a.session.ChannelMessages(m.ChannelID, contextMessages, m.ID, "", "", discordgo.WithContext(ctx))
		if err != nil {
			a.log.Warn("discord: reading the thread's earlier messages failed", "chat", m.ChannelID, "err", err)
		}
		msgs = append(msgs, got...)
		// A thread started from a message has that message's id; it stays
		// in the parent channel and is often the question itself.
		if len(got) < contextMessages {
			if start, err := a.session.ChannelMessage(parent, m.ChannelID, discordgo.WithContext(ctx)); err == nil {
				msgs = append(msgs, start)
			}
		}
	}
	if ref := m.ReferencedMessage; ref != nil && ref.Author != nil &&
		!slices.ContainsFunc(msgs, func(x *discordgo.Message) bool { return x != nil && x.ID == ref.ID }) {
		msgs = append(msgs, ref)
	}
	slices.SortFunc(msgs, func(x, y *discordgo.Message) int { return compareSnowflakes(x.ID, y.ID) })

	var out []channels.ContextMessage
	total := 0
	// Newest first, so the bound keeps the messages nearest the question.
	for i := len(msgs) - 1; i >= 0; i-- {
		x := msgs[i]
		if x == nil || x.Author == nil || x.ID == m.ID {
			continue
		}
		text := stripMention(x.Content, bot, a.botRole(x.GuildID))
		if names := attachmentNames(x.Attachments); names != "" {
			text = strings.TrimSpace(text + "\n" + names)
		}
		if text == "" {
			continue
		}
		text, _ = textcut.Chars(text, contextMessageMax, "…")
		if total+len(text) > contextChars {
			break
		}
		total += len(text)
		out = append(out, channels.ContextMessage{
			SenderName: senderName(x), Text: text, Time: x.Timestamp, FromBot: x.Author.ID == bot,
		})
	}
	slices.Reverse(out)
	return out
}

// attachmentNames names the files of an earlier message; they are not
// downloaded for context.
func attachmentNames(atts []*discordgo.MessageAttachment) string {
	var names []string
	for _, at := range atts {
		if at != nil {
			names = append(names, "[attachment: "+at.Filename+"]")
		}
	}
	return strings.Join(names, "\n")
}

// compareSnowflakes orders Discord ids (decimal numbers) by value.
func compareSnowflakes(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

package discord

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
)

// Bounds on what the adapter remembers.
const (
	recentMessages    = 4096   // message ids kept to drop duplicates and replays
	recentRefusals    = 1024   // users told they are not on the allow list
	maxCachedChannels = 50_000 // channel -> parent entries
	lookupTries       = 3      // GET /channels/{id} attempts
)

// accept applies the filters, in order: own messages, non-user message
// types, duplicates, allowFrom, then (guilds only) the mention policy and
// allowChannels. It returns the Inbound to deliver; notify sends the
// not-allowed notice.
func (a *Adapter) accept(ctx context.Context, m *discordgo.Message, notify func(context.Context, channels.Outbound)) (channels.Inbound, bool) {
	if m == nil || m.Author == nil {
		return channels.Inbound{}, false
	}
	bot := a.bot()
	if !a.admitted(ctx, m, bot, notify) {
		return channels.Inbound{}, false
	}
	at, ok := a.placeOf(ctx, m, bot)
	if !ok {
		return channels.Inbound{}, false
	}
	aud, ok := a.audienceOf(ctx, m.GuildID, m.ChannelID, m.Author.ID, at.info, at.known)
	if !ok {
		return channels.Inbound{}, false
	}

	text := stripMention(m.Content, bot, a.botRole(m.GuildID))
	files, images := a.attachmentsText(ctx, m.Attachments)
	if files != "" {
		text = strings.TrimSpace(text + "\n\n" + files)
	}
	if text == "" && len(images) == 0 {
		a.log.Debug("discord: ignored empty message", "message", m.ID)
		return channels.Inbound{}, false
	}
	key := Name + ":" + at.chatID
	if at.threadID != "" {
		key += ":thread:" + at.threadID
	}
	when := m.Timestamp
	if when.IsZero() {
		when = time.Now()
	}
	return channels.Inbound{
		Channel:    Name,
		ChatID:     at.chatID,
		ThreadID:   at.threadID,
		SessionKey: key,
		SenderID:   m.Author.ID,
		SenderName: senderName(m),
		Audience:   aud,
		MessageID:  m.ID,
		Text:       text,
		Images:     images,
		Time:       when,
		Context:    a.conversationContext(ctx, m, parentOf(at.chatID, at.threadID)),
	}, true
}

// admitted reports whether m is a person's message, new, from someone
// allowFrom lets in: not the bot's own (bot), a user message type, not
// seen before. A DM from someone not allowed is told so, once.
func (a *Adapter) admitted(ctx context.Context, m *discordgo.Message, bot string, notify func(context.Context, channels.Outbound)) bool {
	if m.Author.ID == bot {
		return false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		a.log.Debug("discord: ignored non-user message", "type", int(m.Type), "message", m.ID)
		return false
	}
	if !a.seen.Add(m.ID) {
		a.log.Debug("discord: ignored duplicate", "message", m.ID)
		return false
	}
	if a.allowFrom == nil || a.allowFrom[m.Author.ID] {
		return true
	}
	if m.GuildID != "" {
		a.log.Debug("discord: ignored sender not in allowFrom", "user", m.Author.ID, "chat", m.ChannelID)
		return false
	}
	a.log.Info("discord: direct message from a user not in allowFrom", "user", m.Author.ID)
	if a.refused.Add(m.Author.ID) {
		notify(ctx, channels.Outbound{
			Channel: Name, ChatID: m.ChannelID, SessionKey: Name + ":" + m.ChannelID,
			ReplyTo: m.ID, Kind: channels.KindError, Text: channels.NotAllowedNotice,
		})
	}
	return false
}

// placeOf is where m was said; false when a guild message is to be
// ignored: without the mention the policy asks for (bot's), or in a
// channel allowChannels leaves out.
func (a *Adapter) placeOf(ctx context.Context, m *discordgo.Message, bot string) (place, bool) {
	at := place{chatID: m.ChannelID, known: true}
	if m.GuildID == "" {
		return at, true
	}
	// The mention check needs no lookup; do it first so that chatter in
	// busy guilds costs no REST calls.
	if a.policy == PolicyMention && !mentioned(m, bot, a.botRole(m.GuildID)) {
		a.log.Debug("discord: ignored message without mention", "chat", m.ChannelID, "message", m.ID)
		return at, false
	}
	at.info, at.known = a.channelInfo(ctx, m.ChannelID)
	if at.info.thread && at.info.parentID != "" {
		at.chatID, at.threadID = at.info.parentID, m.ChannelID
	}
	if a.allowChannels != nil && !a.allowChannels[m.ChannelID] && !(at.info.thread && a.allowChannels[at.info.parentID]) {
		a.log.Debug("discord: ignored channel not in allowChannels", "chat", m.ChannelID, "message", m.ID)
		return at, false
	}
	return at, true
}

// parentOf is the parent channel of a thread conversation, "" otherwise.
func parentOf(chatID, threadID string) string {
	if threadID == "" {
		return ""
	}
	return chatID
}

func senderName(m *discordgo.Message) string {
	if m.Member != nil && m.Member.Nick != "" {
		return m.Member.Nick
	}
	if m.Author.GlobalName != "" {
		return m.Author.GlobalName
	}
	return m.Author.Username
}

// mentioned reports whether m addresses the bot: <@id> or <@!id> in the
// content, the bot in the mentions, its managed role (botRole, "" when not
// known) mentioned, or a reply to one of the bot's messages.
func mentioned(m *discordgo.Message, bot, botRole string) bool {
	if bot == "" {
		return false
	}
	if strings.Contains(m.Content, "<@"+bot+">") || strings.Contains(m.Content, "<@!"+bot+">") {
		return true
	}
	// Discord's autocomplete offers the bot's role beside the bot itself,
	// and people pick either.
	if botRole != "" && (slices.Contains(m.MentionRoles, botRole) || strings.Contains(m.Content, "<@&"+botRole+">")) {
		return true
	}
	for _, u := range m.Mentions {
		if u != nil && u.ID == bot {
			return true
		}
	}
	ref := m.ReferencedMessage
	return ref != nil && ref.Author != nil && ref.Author.ID == bot
}

// stripMention removes every mention of the bot (and of its role, when
// botRole is set) and the whitespace around it, so "<@id> /dream-log"
// becomes "/dream-log". Words that a mention sat between stay apart: by a
// newline if the gap held one, else by a space.
func stripMention(text, bot, botRole string) string {
	if bot == "" {
		return strings.TrimSpace(text)
	}
	forms := []string{"<@" + bot + ">", "<@!" + bot + ">"}
	if botRole != "" {
		forms = append(forms, "<@&"+botRole+">")
	}
	var pieces []string
	for rest := text; ; {
		at, n := -1, 0
		for _, f := range forms {
			if i := strings.Index(rest, f); i >= 0 && (at < 0 || i < at) {
				at, n = i, len(f)
			}
		}
		if at < 0 {
			pieces = append(pieces, rest)
			break
		}
		pieces = append(pieces, rest[:at])
		rest = rest[at+n:]
	}
	var b strings.Builder
	gap := "" // whitespace since the last text written
	for _, p := range pieces {
		core := strings.TrimSpace(p)
		if core == "" {
			gap += p
			continue
		}
		start := strings.Index(p, core)
		gap += p[:start]
		if b.Len() > 0 {
			if strings.Contains(gap, "\n") {
				b.WriteByte('\n')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(core)
		gap = p[start+len(core):]
	}
	return b.String()
}

package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/dreamgate/dreamgate/audience"
)

// The audience of a conversation: who can read it, from what Discord says
// of it, never from the text. A DM (no guild) is its person's; a private
// thread, or a channel hidden from @everyone, is Private to itself (a
// public thread is its parent's); any other guild channel is the server's
// (Team), each server its own. In a server whose @everyone role may not
// view channels, only a channel that lets @everyone view it is the
// server's: the others are open to some roles only, Private. When Discord
// cannot say what a channel is, the conversation is Private to it: kept
// apart from the server's memory, the narrowest choice that includes
// everyone present.

// audienceOf decides the audience of a message or command by user in
// channel (a thread or not) of guild ("" for a DM); info and known are
// what channelInfo said of channel. ok is false when Discord's ids make no
// valid audience (never seen: they are digits), and the message is
// dropped.
func (a *Adapter) audienceOf(ctx context.Context, guild, channel, user string, info chanInfo, known bool) (audience.Audience, bool) {
	aud := audience.Audience{Platform: Name, Team: guild}
	switch {
	case guild == "":
		aud.Kind, aud.Person = audience.Person, user
	case !known || (!info.thread && a.channelPrivate(guild, info)) || (info.thread && info.private):
		aud.Kind, aud.Chat = audience.Private, channel
	case info.thread && info.parentID == "":
		aud.Kind, aud.Chat = audience.Private, channel // a thread without a parent to ask
	case info.thread:
		parent, ok := a.channelInfo(ctx, info.parentID)
		if ok && !a.channelPrivate(guild, parent) {
			aud.Kind = audience.Team
		} else {
			aud.Kind, aud.Chat = audience.Private, info.parentID
		}
	default:
		aud.Kind = audience.Team
	}
	if err := aud.Validate(); err != nil {
		a.log.Warn("discord: conversation has no audience; message ignored", "guild", guild, "chat", channel, "user", user, "err", err)
		return audience.Audience{}, false
	}
	return aud, true
}

// channelPrivate reports whether a (non-thread) channel of guild is hidden
// from some of the server's members: by its own overwrite, or because the
// server's @everyone role may not view channels and no overwrite lets it.
func (a *Adapter) channelPrivate(guild string, info chanInfo) bool {
	if info.private {
		return true
	}
	a.rolesMu.Lock()
	closed := a.closedGuilds[guild]
	a.rolesMu.Unlock()
	return closed && !info.shown
}

// learnEveryone keeps whether guild's @everyone role (role has the
// guild's id) may view channels.
func (a *Adapter) learnEveryone(guild string, role *discordgo.Role) {
	if role == nil || role.ID != guild || guild == "" {
		return
	}
	a.rolesMu.Lock()
	defer a.rolesMu.Unlock()
	if role.Permissions&discordgo.PermissionViewChannel == 0 {
		a.closedGuilds[guild] = true
	} else {
		delete(a.closedGuilds, guild)
	}
}

package discord

import (
	"context"
	"errors"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/dreamgate/dreamgate/audience"
)

// The audience of a conversation: who can read it, from what Discord says
// of it, never from the text. A DM with the bot (no guild) is its
// person's. A guild channel is the server's (Team, each server its own)
// only when every member of the server, present or to come, may view it
// (permissions.go says how that is computed, as Discord does); a channel
// hidden from any role or member is Private to itself. A private thread
// is Private to itself, a public thread is its channel's. A command run
// where the bot is not (a person's own installation of the app, used in a
// DM between people or in a server that did not add the bot) is kept
// apart: Shared, its own memory only. When Discord cannot say what a
// channel is, or what a server's roles are, the conversation is Private
// to its channel: kept apart from the server's memory, the narrowest
// choice that includes everyone present.

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
	case !known || info.privateThread:
		aud.Kind, aud.Chat = audience.Private, channel
	case info.thread && info.parentID == "":
		aud.Kind, aud.Chat = audience.Private, channel // a thread without a parent to ask
	case info.thread:
		parent, ok := a.channelInfo(ctx, info.parentID)
		if ok && !parent.thread && a.everyoneSees(ctx, guild, info.parentID, parent) {
			aud.Kind = audience.Team
		} else {
			aud.Kind, aud.Chat = audience.Private, info.parentID
		}
	case a.everyoneSees(ctx, guild, channel, info):
		aud.Kind = audience.Team
	default:
		aud.Kind, aud.Chat = audience.Private, channel
	}
	return a.checked(aud, user)
}

// apartAudience is the audience of a command run where the bot is not
// (see apart): the conversation's own, of its server when it has one.
func (a *Adapter) apartAudience(i *discordgo.Interaction, user string) (audience.Audience, bool) {
	return a.checked(audience.Audience{Kind: audience.Shared, Platform: Name, Team: i.GuildID, Chat: i.ChannelID}, user)
}

func (a *Adapter) checked(aud audience.Audience, user string) (audience.Audience, bool) {
	if err := aud.Validate(); err != nil {
		a.log.Warn("discord: conversation has no audience; message ignored", "guild", aud.Team, "chat", aud.Chat, "user", user, "err", err)
		return audience.Audience{}, false
	}
	return aud, true
}

// apart reports a command run where the bot is not, which only a person's
// own installation of the app can reach: a DM or group DM between people
// (interaction context 2), or a server whose installation did not
// authorise it (authorizing_integration_owners without a guild
// installation). Without a context (older payloads), a command outside
// any server comes from a DM with the bot.
func apart(i *discordgo.Interaction) bool {
	owners := i.AuthorizingIntegrationOwners
	_, byGuild := owners[discordgo.ApplicationIntegrationGuildInstall]
	switch {
	case i.Context == discordgo.InteractionContextPrivateChannel:
		return true
	case i.GuildID == "" && i.Context == discordgo.InteractionContextBotDM:
		return false
	}
	return len(owners) > 0 && !byGuild
}

// everyoneSees reports whether every member of guild may view channel
// (not a thread), whose overwrites info holds. When the server's roles
// cannot be known, nobody is assumed to: the narrower audience wins.
func (a *Adapter) everyoneSees(ctx context.Context, guild, channel string, info chanInfo) bool {
	roles, ok := a.serverRoles(ctx, guild)
	if !ok {
		return false
	}
	hidden := roles.hiddenFrom(info.overwrites, func(user string) ([]string, bool) {
		return a.memberRoles(ctx, guild, user)
	})
	if hidden != "" {
		a.log.Debug("discord: channel hidden from some members; private to itself", "guild", guild, "chat", channel, "from", hidden)
		return false
	}
	return true
}

// serverRoles returns guild's roles: as the gateway keeps them, else from
// GET /guilds/{id}, kept chanTTL (a failure chanFailTTL).
func (a *Adapter) serverRoles(ctx context.Context, guild string) (serverRoles, bool) {
	roles, failed, ok := a.servers.get(guild)
	if ok || failed {
		return roles, ok
	}
	var g *discordgo.Guild
	err := a.lookup(ctx, func(ctx context.Context) (err error) {
		g, err = a.session.Guild(guild, discordgo.WithContext(ctx))
		return err
	})
	if err == nil && g != nil && g.ID == guild {
		a.servers.learn(g, a.bot(), chanTTL, false)
		if roles, _, ok := a.servers.get(guild); ok {
			return roles, true
		}
	}
	if ctx.Err() == nil {
		a.log.Warn("discord: server lookup failed; its channels are kept apart as private ones", "guild", guild, "err", err)
		a.servers.fail(guild, chanFailTTL)
	}
	return serverRoles{}, false
}

// memberRoles returns the roles user holds in guild, known only with the
// Server Members intent (which keeps them current): tracked from the
// first time a member overwrite names them, read then with GET
// /guilds/{id}/members/{user}. Someone not in the server holds none.
func (a *Adapter) memberRoles(ctx context.Context, guild, user string) ([]string, bool) {
	if !a.members {
		return nil, false
	}
	if roles, ok := a.servers.member(guild, user); ok {
		return roles, true
	}
	var m *discordgo.Member
	err := a.lookup(ctx, func(ctx context.Context) (err error) {
		m, err = a.session.GuildMember(guild, user, discordgo.WithContext(ctx))
		return err
	})
	var rest *discordgo.RESTError
	switch {
	case err == nil && m != nil:
		a.servers.lookedUp(guild, user, m.Roles, true)
	case errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusNotFound:
		a.servers.lookedUp(guild, user, nil, false)
	default:
		a.log.Warn("discord: member lookup failed; the channels that name them stay private", "guild", guild, "user", user, "err", err)
		a.servers.lookupFailed(guild, user)
		return nil, false
	}
	return a.servers.member(guild, user)
}

// botRole is the bot's managed role in guild, "" when not known.
func (a *Adapter) botRole(guild string) string {
	if guild == "" {
		return ""
	}
	return a.servers.botRole(guild)
}

// serverHandlers follow what changes a server's audiences: its channels
// and threads (their overwrites), its roles, its owner and, with the
// Server Members intent, its members' roles. They run in discordgo's read
// loop and only record.
func (a *Adapter) serverHandlers() []func() {
	s := a.session
	learn := func(c *discordgo.Channel) { a.chans.learn(c) }
	return []func(){
		s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) {
			if g.Guild == nil {
				return
			}
			for _, c := range g.Channels {
				learn(c)
			}
			for _, c := range g.Threads {
				learn(c)
			}
			a.servers.learn(g.Guild, a.bot(), 0, true)
		}),
		s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildUpdate) { a.servers.learn(g.Guild, a.bot(), 0, false) }),
		s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildDelete) {
			if g.Guild != nil && !g.Unavailable {
				a.servers.forget(g.ID)
			}
		}),
		s.AddHandler(func(_ *discordgo.Session, r *discordgo.GuildRoleCreate) {
			if r.GuildRole != nil {
				a.servers.setRole(r.GuildID, r.Role)
			}
		}),
		s.AddHandler(func(_ *discordgo.Session, r *discordgo.GuildRoleUpdate) {
			if r.GuildRole != nil {
				a.servers.setRole(r.GuildID, r.Role)
			}
		}),
		s.AddHandler(func(_ *discordgo.Session, r *discordgo.GuildRoleDelete) { a.servers.deleteRole(r.GuildID, r.RoleID) }),
		s.AddHandler(func(_ *discordgo.Session, m *discordgo.GuildMemberAdd) { a.memberChanged(m.Member, true) }),
		s.AddHandler(func(_ *discordgo.Session, m *discordgo.GuildMemberUpdate) { a.memberChanged(m.Member, true) }),
		s.AddHandler(func(_ *discordgo.Session, m *discordgo.GuildMemberRemove) { a.memberChanged(m.Member, false) }),
		s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelCreate) { learn(c.Channel) }),
		s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelUpdate) { learn(c.Channel) }),
		s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelDelete) { a.chans.forget(c.Channel) }),
		s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadCreate) { learn(c.Channel) }),
		s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadUpdate) { learn(c.Channel) }),
		s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadDelete) { a.chans.forget(c.Channel) }),
		s.AddHandler(func(_ *discordgo.Session, t *discordgo.ThreadListSync) {
			for _, c := range t.Threads {
				learn(c)
			}
		}),
	}
}

func (a *Adapter) memberChanged(m *discordgo.Member, present bool) {
	if m != nil && m.User != nil {
		a.servers.setMember(m.GuildID, m.User.ID, m.Roles, present)
	}
}

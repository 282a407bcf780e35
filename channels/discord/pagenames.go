package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Names for the memory page: a person's name as the server shows it (the
// member's nickname, else their display name, else their user name; in a
// DM, the user's) and a channel's name, each kept nameTTL. The page shows
// them beside the ids its scopes and conversations carry.

const (
	nameTTL     = 10 * time.Minute
	nameFailTTL = time.Minute
)

// PersonName is the name Discord shows for user in guild ("" guild: a
// DM's person, by their user), "" when Discord cannot say.
func (a *Adapter) PersonName(ctx context.Context, guild, user string) string {
	if user == "" {
		return ""
	}
	return a.cachedName(ctx, "person/"+guild+"/"+user, func(ctx context.Context) (string, error) {
		if guild == "" {
			u, err := a.session.User(user, discordgo.WithContext(ctx))
			if err != nil {
				return "", err
			}
			return userName(u), nil
		}
		m, err := a.session.GuildMember(guild, user, discordgo.WithContext(ctx))
		if err != nil {
			return "", err
		}
		if m.Nick != "" {
			return m.Nick, nil
		}
		return userName(m.User), nil
	})
}

// ChatName is channel's name, "" for a DM or when Discord cannot say.
func (a *Adapter) ChatName(ctx context.Context, _, channel string) string {
	if channel == "" {
		return ""
	}
	return a.cachedName(ctx, "chat/"+channel, func(ctx context.Context) (string, error) {
		c, err := a.session.Channel(channel, discordgo.WithContext(ctx))
		if err != nil {
			return "", err
		}
		return c.Name, nil
	})
}

// cachedName is key's name from the cache, else from get (kept nameTTL; a
// failure, nameFailTTL, so a page does not ask again at once).
func (a *Adapter) cachedName(ctx context.Context, key string, get func(context.Context) (string, error)) string {
	if name, ok := a.names.Get(key); ok {
		return name
	}
	var name string
	err := a.lookup(ctx, func(ctx context.Context) (err error) {
		name, err = get(ctx)
		return err
	})
	switch {
	case err == nil:
		a.names.Put(key, name, nameTTL)
	case ctx.Err() == nil:
		a.names.Put(key, "", nameFailTTL)
	}
	return name
}

func userName(u *discordgo.User) string {
	switch {
	case u == nil:
		return ""
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}

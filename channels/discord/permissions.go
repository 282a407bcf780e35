package discord

import (
	"slices"

	"github.com/bwmarrin/discordgo"
)

// Whether every member of a server may view a channel, computed as
// Discord computes a member's permissions in a channel
// (https://discord.com/developers/docs/topics/permissions): base
// permissions from the @everyone role and the member's roles (every
// permission for the owner, or with ADMINISTRATOR), then the channel's
// overwrites in order: @everyone's, the member's roles' (allow and deny
// gathered over all of them), the member's own.

// The permission bits the audience depends on.
const (
	permAdministrator = discordgo.PermissionAdministrator
	permViewChannel   = discordgo.PermissionViewChannel
	permAll           = int64(-1) // every bit: the owner's, an administrator's
)

// overwrite is one permission overwrite of a channel: for a role (the
// @everyone role's id is the server's) or for one member.
type overwrite struct {
	id          string
	member      bool
	allow, deny int64
}

// overwritesOf copies a channel's overwrites out of discordgo's types.
func overwritesOf(ch *discordgo.Channel) []overwrite {
	out := make([]overwrite, 0, len(ch.PermissionOverwrites))
	for _, ow := range ch.PermissionOverwrites {
		if ow != nil {
			out = append(out, overwrite{id: ow.ID, member: ow.Type == discordgo.PermissionOverwriteTypeMember, allow: ow.Allow, deny: ow.Deny})
		}
	}
	return out
}

// serverRoles is what the permissions of a server's members are computed
// from: each role's permissions (the @everyone role's id is the
// server's) and the owner ("" when not known).
type serverRoles struct {
	id    string
	owner string
	perms map[string]int64
}

// base is Discord's compute_base_permissions for user holding roles.
func (g serverRoles) base(user string, roles []string) int64 {
	if user != "" && user == g.owner {
		return permAll
	}
	p := g.perms[g.id]
	for _, r := range roles {
		p |= g.perms[r]
	}
	if p&permAdministrator != 0 {
		return permAll
	}
	return p
}

// permissions is Discord's compute_overwrites: what user, holding roles,
// may do in a channel with overwrites ows.
func (g serverRoles) permissions(user string, roles []string, ows []overwrite) int64 {
	p := g.base(user, roles)
	if p&permAdministrator != 0 {
		return permAll
	}
	var everyone, own *overwrite
	var allow, deny int64
	for i := range ows {
		ow := &ows[i]
		switch {
		case ow.member && ow.id == user && user != "":
			own = ow
		case !ow.member && ow.id == g.id:
			everyone = ow
		case !ow.member && slices.Contains(roles, ow.id):
			allow |= ow.allow
			deny |= ow.deny
		}
	}
	if everyone != nil {
		p = p&^everyone.deny | everyone.allow
	}
	p = p&^deny | allow
	if own != nil {
		p = p&^own.deny | own.allow
	}
	return p
}

// hiddenFrom says who among the server's members, present or to come, may
// not view a channel with overwrites ows ("" when everyone may):
//
//   - a member without roles, as everyone joins: the @everyone role's
//     permissions and overwrite;
//   - a member holding any one role of the server: a role's overwrite that
//     denies View Channel hides the channel from whoever holds that role
//     alone, unless the role grants ADMINISTRATOR (an overwrite naming a
//     role the server does not have hides nothing: nobody can hold it;
//     holding more roles only adds what they allow);
//   - each member a member overwrite names, with the roles rolesOf gives
//     (known false: as holding none, so only ownership can show them the
//     channel past their own overwrite's deny).
func (g serverRoles) hiddenFrom(ows []overwrite, rolesOf func(user string) (roles []string, known bool)) string {
	if g.permissions("", nil, ows)&permViewChannel == 0 {
		return "members without a role"
	}
	for _, ow := range ows {
		switch {
		case ow.member:
			roles, _ := rolesOf(ow.id)
			if g.permissions(ow.id, roles, ows)&permViewChannel == 0 {
				return "member " + ow.id
			}
		case ow.id == g.id:
		default:
			if _, exists := g.perms[ow.id]; exists && g.permissions("", []string{ow.id}, ows)&permViewChannel == 0 {
				return "role " + ow.id
			}
		}
	}
	return ""
}

package fakediscord

import (
	"net/http"
	"slices"
	"strconv"
)

// IntentGuildMembers is the privileged Server Members intent: only a
// session that asked for it is sent GUILD_MEMBER_ADD, _UPDATE and _REMOVE,
// and the members of a guild in its GUILD_CREATE.
const IntentGuildMembers = 1 << 1

// PermAdministrator is the permission that grants every other one,
// channel overwrites notwithstanding.
const PermAdministrator = 1 << 3

// Role is a guild role besides @everyone (SetEveryone) and the bot's own.
type Role struct {
	ID          string
	Name        string
	Permissions int64
}

// Member is a person's membership of a guild: the roles they hold, and
// the nickname they go by there ("" for none).
type Member struct {
	User  User
	Roles []string
	Nick  string
}

// guildState is what the fake knows of a guild beyond its channels.
type guildState struct {
	owner   string
	roles   []Role            // in the order created
	members map[string]Member // by user id
}

// defaultOwner owns every guild unless SetOwner says otherwise.
const defaultOwner = "OWNER"

func (s *Server) guildLocked(id string) *guildState {
	if s.guildStates == nil {
		s.guildStates = map[string]*guildState{}
	}
	g := s.guildStates[id]
	if g == nil {
		g = &guildState{owner: defaultOwner, members: map[string]Member{}}
		s.guildStates[id] = g
	}
	return g
}

// joinedLocked reports whether the bot is in guild (AddGuild).
func (s *Server) joinedLocked(guild string) bool { return slices.Contains(s.guilds, guild) }

// SetRole creates or changes a role of guild; for a guild the bot is in it
// dispatches GUILD_ROLE_CREATE or GUILD_ROLE_UPDATE.
func (s *Server) SetRole(guild string, r Role) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(guild)
	event := "GUILD_ROLE_CREATE"
	i := slices.IndexFunc(g.roles, func(x Role) bool { return x.ID == r.ID })
	if i >= 0 {
		g.roles[i] = r
		event = "GUILD_ROLE_UPDATE"
	} else {
		i = len(g.roles)
		g.roles = append(g.roles, r)
	}
	if s.joinedLocked(guild) {
		s.dispatchLocked(guild, event, map[string]any{"guild_id": guild, "role": roleObject(r, i+2)})
	}
}

// DeleteRole deletes a role of guild, and takes it from its members, as
// Discord does; channel overwrites naming it are left as they are. For a
// guild the bot is in it dispatches GUILD_ROLE_DELETE.
func (s *Server) DeleteRole(guild, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(guild)
	g.roles = slices.DeleteFunc(g.roles, func(x Role) bool { return x.ID == id })
	for uid, m := range g.members {
		m.Roles = slices.DeleteFunc(slices.Clone(m.Roles), func(r string) bool { return r == id })
		g.members[uid] = m
	}
	if s.joinedLocked(guild) {
		s.dispatchLocked(guild, "GUILD_ROLE_DELETE", map[string]any{"guild_id": guild, "role_id": id})
	}
}

// SetMember makes user a member of guild holding roles (replacing the
// roles they held). Sessions with the Server Members intent are sent
// GUILD_MEMBER_ADD for a new member, GUILD_MEMBER_UPDATE otherwise.
func (s *Server) SetMember(guild string, user User, roles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if user.Username == "" {
		user.Username = user.ID
	}
	s.users[user.ID] = user
	g := s.guildLocked(guild)
	old, known := g.members[user.ID]
	m := Member{User: user, Roles: slices.Clone(roles), Nick: old.Nick}
	g.members[user.ID] = m
	event := "GUILD_MEMBER_UPDATE"
	if !known {
		event = "GUILD_MEMBER_ADD"
	}
	s.memberChangedLocked(guild, m, event)
}

// SetNick gives a member of guild the nickname they go by there ("" takes
// it away); sessions with the Server Members intent are sent
// GUILD_MEMBER_UPDATE.
func (s *Server) SetNick(guild, user, nick string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(guild)
	m, ok := g.members[user]
	if !ok {
		return
	}
	m.Nick = nick
	g.members[user] = m
	s.memberChangedLocked(guild, m, "GUILD_MEMBER_UPDATE")
}

// memberChangedLocked tells the sessions with the Server Members intent
// of m's event, where the bot is in guild.
func (s *Server) memberChangedLocked(guild string, m Member, event string) {
	if !s.joinedLocked(guild) {
		return
	}
	obj := s.memberObjectLocked(guild, m)
	obj["guild_id"] = guild
	s.dispatchIntentLocked(guild, IntentGuildMembers, event, obj)
}

// RemoveMember makes user leave guild; sessions with the Server Members
// intent are sent GUILD_MEMBER_REMOVE.
func (s *Server) RemoveMember(guild, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.guildLocked(guild).members, user)
	if s.joinedLocked(guild) {
		s.dispatchIntentLocked(guild, IntentGuildMembers, "GUILD_MEMBER_REMOVE",
			map[string]any{"guild_id": guild, "user": s.userObjectLocked(user)})
	}
}

// SetOwner makes user the owner of guild; for a guild the bot is in it
// dispatches GUILD_UPDATE.
func (s *Server) SetOwner(guild, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guildLocked(guild).owner = user
	if s.joinedLocked(guild) {
		s.dispatchLocked(guild, "GUILD_UPDATE", s.guildRESTObjectLocked(guild))
	}
}

// dispatchIntentLocked dispatches an event only to a session of the
// guild's shard that asked for intent, as Discord filters events by
// intents.
func (s *Server) dispatchIntentLocked(guild string, intent int, t string, d any) {
	sh := s.shardLocked(ShardOf(guild, s.shardCount))
	if sh.intents&intent == 0 {
		return
	}
	s.dispatchShardLocked(sh, t, d)
}

func roleObject(r Role, position int) map[string]any {
	return map[string]any{"id": r.ID, "name": r.Name, "managed": false, "mentionable": false,
		"permissions": strconv.FormatInt(r.Permissions, 10), "position": position, "color": 0, "hoist": false}
}

// rolesLocked lists guild's roles as Discord's guild object does:
// @everyone, the bot's managed role, then the others.
func (s *Server) rolesLocked(guild string) []any {
	bot := s.userObjectLocked(s.cfg.BotID)
	roles := []any{
		s.everyoneRoleLocked(guild),
		map[string]any{"id": s.BotRoleID(guild), "name": bot["username"], "managed": true, "mentionable": true,
			"permissions": "0", "position": 1, "tags": map[string]any{"bot_id": s.cfg.BotID}},
	}
	for i, r := range s.guildLocked(guild).roles {
		roles = append(roles, roleObject(r, i+2))
	}
	return roles
}

// memberObjectLocked is a guild member object: the user and their roles.
func (s *Server) memberObjectLocked(guild string, m Member) map[string]any {
	roles := []any{}
	for _, r := range m.Roles {
		roles = append(roles, r)
	}
	obj := map[string]any{"user": s.userObjectLocked(m.User.ID), "roles": roles, "nick": nil,
		"joined_at": "2024-01-01T00:00:00Z", "deaf": false, "mute": false}
	if m.Nick != "" {
		obj["nick"] = m.Nick
	}
	return obj
}

// memberRolesLocked lists the roles user holds in guild (none for a user
// the fake was not told of).
func (s *Server) memberRolesLocked(guild, user string) []any {
	roles := []any{}
	for _, r := range s.guildLocked(guild).members[user].Roles {
		roles = append(roles, r)
	}
	return roles
}

// guildRESTObjectLocked is the guild as GET /guilds/{id} and GUILD_UPDATE
// give it: no channels, members or other gateway-only fields.
func (s *Server) guildRESTObjectLocked(id string) map[string]any {
	return map[string]any{"id": id, "name": "guild " + id, "owner_id": s.guildLocked(id).owner,
		"roles": s.rolesLocked(id), "emojis": []any{}, "features": []any{}}
}

// getGuild answers GET /guilds/{id}: a guild the bot is not in is
// Missing Access.
func (s *Server) getGuild(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	if !s.joinedLocked(id) {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return
	}
	writeJSON(w, http.StatusOK, s.guildRESTObjectLocked(id))
}

// getMember answers GET /guilds/{id}/members/{user}, which needs no
// privileged intent: the member with their roles, Unknown Member for
// someone not (or no longer) in the guild.
func (s *Server) getMember(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	guild, user := r.PathValue("id"), r.PathValue("user")
	if !s.joinedLocked(guild) {
		writeError(w, http.StatusForbidden, 50001, "Missing Access")
		return
	}
	m, ok := s.guildLocked(guild).members[user]
	if user == s.cfg.BotID {
		m, ok = Member{User: User{ID: user}, Roles: []string{s.BotRoleID(guild)}}, true
	}
	if !ok {
		writeError(w, http.StatusNotFound, 10007, "Unknown Member")
		return
	}
	writeJSON(w, http.StatusOK, s.memberObjectLocked(guild, m))
}

// botSeesLocked reports whether the bot belongs to c: a channel of a guild
// it is in, or a DM with it.
func (s *Server) botSeesLocked(c Channel) bool {
	if c.GuildID != "" {
		return s.joinedLocked(c.GuildID)
	}
	return len(c.Recipients) == 0 || slices.Contains(c.Recipients, s.cfg.BotID)
}

package discord

import (
	"slices"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// maxTrackedMembers bounds the members whose roles are kept per server:
// only those a member overwrite names are tracked.
const maxTrackedMembers = 4096

// servers is what the adapter knows of the Discord servers it is in, for
// the audiences of their channels: each server's roles and their
// permissions, its owner, the bot's own managed role there, and, with the
// Server Members intent, the roles of the members a member overwrite
// names. The gateway keeps it current (GUILD_CREATE at every session,
// then the role, member and guild updates); a server it did not announce
// is read over REST and kept chanTTL.
type servers struct {
	mu   sync.Mutex
	now  func() time.Time
	byID map[string]*server
}

type server struct {
	roles   serverRoles
	botRole string // the role Discord made for the bot there, "" when not known
	// expires ends what REST said of a server the gateway did not
	// announce; zero for one the gateway keeps current.
	expires time.Time
	// failed marks a server REST could not describe, until expires.
	failed  bool
	members map[string]*trackedMember
}

// trackedMember is a member a member overwrite names: the roles they hold
// (none once they left: they would join again holding none).
type trackedMember struct {
	roles []string
	// pending marks a REST lookup in flight; fresh, an update from the
	// gateway since, which wins over the lookup's older answer.
	pending, fresh bool
}

func newServers(now func() time.Time) *servers {
	if now == nil {
		now = time.Now
	}
	return &servers{now: now, byID: map[string]*server{}}
}

// learn keeps what a guild object says (GUILD_CREATE, GUILD_UPDATE, GET
// /guilds/{id}): its roles and owner; ttl 0 for what the gateway keeps
// current. session marks a GUILD_CREATE, which starts a new gateway
// session: updates missed while disconnected are not replayed, so the
// tracked members are asked about again. bot is the bot's user id, to
// find its managed role among the members.
func (s *servers) learn(g *discordgo.Guild, bot string, ttl time.Duration, session bool) {
	if g == nil || g.ID == "" || g.Unavailable {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byID[g.ID]
	if sv == nil || sv.failed || session {
		fresh := &server{}
		if sv != nil {
			fresh.botRole = sv.botRole
		}
		sv = fresh
		s.byID[g.ID] = sv
	}
	if r := botRoleOf(g, bot); r != "" {
		sv.botRole = r
	}
	sv.roles = serverRoles{id: g.ID, owner: g.OwnerID, perms: map[string]int64{}}
	for _, r := range g.Roles {
		if r != nil {
			sv.roles.perms[r.ID] = r.Permissions
		}
	}
	sv.expires = time.Time{}
	if ttl > 0 {
		sv.expires = s.now().Add(ttl)
	}
}

// failed records that REST could not describe guild; it counts as
// unknown for ttl.
func (s *servers) fail(guild string, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[guild] = &server{failed: true, expires: s.now().Add(ttl)}
}

// get returns what is known of guild's roles; ok is false when nothing
// (or only a failed lookup) stands.
func (s *servers) get(guild string) (roles serverRoles, failed, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byID[guild]
	if sv == nil {
		return serverRoles{}, false, false
	}
	if !sv.expires.IsZero() && !s.now().Before(sv.expires) {
		delete(s.byID, guild)
		return serverRoles{}, false, false
	}
	if sv.failed {
		return serverRoles{}, true, false
	}
	return sv.roles, false, true
}

// setRole keeps a created or changed role (GUILD_ROLE_CREATE, _UPDATE).
func (s *servers) setRole(guild string, r *discordgo.Role) {
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv := s.byID[guild]; sv != nil && !sv.failed {
		sv.roles.perms[r.ID] = r.Permissions
	}
}

// deleteRole forgets a role (GUILD_ROLE_DELETE): nobody holds it any more.
func (s *servers) deleteRole(guild, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byID[guild]
	if sv == nil || sv.failed {
		return
	}
	delete(sv.roles.perms, id)
	for _, m := range sv.members {
		m.roles = slices.DeleteFunc(slices.Clone(m.roles), func(r string) bool { return r == id })
	}
}

// forget drops a server the bot left (GUILD_DELETE, not an outage).
func (s *servers) forget(guild string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, guild)
}

// botRole is the bot's managed role in guild, "" when not known.
func (s *servers) botRole(guild string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv := s.byID[guild]; sv != nil {
		return sv.botRole
	}
	return ""
}

// member returns the roles of a tracked member; ok is false when user is
// not tracked yet (or a lookup is in flight), and then marks them pending
// so that the caller's lookup can be filled by lookedUp.
func (s *servers) member(guild, user string) (roles []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byID[guild]
	if sv == nil || sv.failed {
		return nil, false
	}
	if m := sv.members[user]; m != nil && (!m.pending || m.fresh) {
		return m.roles, true
	}
	if sv.members == nil || len(sv.members) >= maxTrackedMembers {
		sv.members = map[string]*trackedMember{}
	}
	if sv.members[user] == nil {
		sv.members[user] = &trackedMember{pending: true}
	}
	return nil, false
}

// lookedUp keeps what REST said of a member's roles (member false: not in
// the server), unless the gateway told something newer meanwhile.
func (s *servers) lookedUp(guild, user string, roles []string, member bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byID[guild]
	if sv == nil || sv.failed {
		return
	}
	m := sv.members[user]
	if m == nil || m.fresh || !m.pending {
		return
	}
	m.pending = false
	if member {
		m.roles = slices.Clone(roles)
	}
}

// lookupFailed forgets a pending member, so that the next need asks again.
func (s *servers) lookupFailed(guild, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv := s.byID[guild]; sv != nil && sv.members[user] != nil && sv.members[user].pending && !sv.members[user].fresh {
		delete(sv.members, user)
	}
}

// setMember keeps a tracked member's roles from the gateway
// (GUILD_MEMBER_ADD, _UPDATE; present false for GUILD_MEMBER_REMOVE).
// Members no overwrite named are not kept: a lookup asks when one is.
func (s *servers) setMember(guild, user string, roles []string, present bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byID[guild]
	if sv == nil || sv.members[user] == nil {
		return
	}
	m := sv.members[user]
	m.fresh, m.pending = true, false
	m.roles = nil
	if present {
		m.roles = slices.Clone(roles)
	}
}

// botRoleOf finds the role Discord made for the bot when it joined g: the
// managed role among the bot member's roles.
func botRoleOf(g *discordgo.Guild, bot string) string {
	if bot == "" {
		return ""
	}
	managed := map[string]bool{}
	for _, r := range g.Roles {
		if r != nil && r.Managed {
			managed[r.ID] = true
		}
	}
	for _, m := range g.Members {
		if m == nil || m.User == nil || m.User.ID != bot {
			continue
		}
		for _, r := range m.Roles {
			if managed[r] {
				return r
			}
		}
	}
	return ""
}

package discord

import (
	"errors"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// Role and member ids of the roles harness.
const (
	roleInterns = "R77"  // a plain role
	roleAdmins  = "RADM" // holds ADMINISTRATOR: sees every channel
	roleMods    = "RMOD" // holds ADMINISTRATOR until a test takes it
	userHidden  = "U666" // named by member overwrites; an administrator
	userOwner   = "UOWN" // owns G5
	rolesGuild  = "G5"
)

func denyRole(id string) fakediscord.Overwrite {
	return fakediscord.Overwrite{ID: id, Type: fakediscord.OverwriteRole, Deny: fakediscord.PermViewChannel}
}

func denyMember(id string) fakediscord.Overwrite {
	return fakediscord.Overwrite{ID: id, Type: fakediscord.OverwriteMember, Deny: fakediscord.PermViewChannel}
}

func text(id string, ows ...fakediscord.Overwrite) fakediscord.Channel {
	return fakediscord.Channel{ID: id, GuildID: rolesGuild, Name: id, Type: fakediscord.ChannelText, Overwrites: ows}
}

// rolesHarness runs an adapter (open policy) against a server G5 whose
// roles are interns (R77), admins (RADM, ADMINISTRATOR) and mods (RMOD,
// ADMINISTRATOR), owned by UOWN, where U666 holds the admins' role, with
// channels:
//
//	CGEN   every member views it; TGEN its public thread
//	CMGR   #managers: View Channel denied to the interns and to U666; TMGR its public thread
//	CROLE  denied to the interns only
//	CMEM   denied to U666 only
//	CADM   denied to the admins, who see it anyway
//	CMOD   denied to the mods
//	COWN   denied to the owner, who sees it anyway
//	CGONE  denied to a role the server does not have
//	CNEW   denied to RNEW, a role created later
func rolesHarness(t *testing.T, members bool) *harness {
	t.Helper()
	o := commandOpts()
	o.cfg.GroupPolicy = PolicyOpen
	o.cfg.GuildMembers = members
	o.noStart = true
	h := newHarness(t, o)
	f := h.fake
	f.SetRole(rolesGuild, fakediscord.Role{ID: roleInterns, Name: "interns", Permissions: fakediscord.DefaultEveryone})
	f.SetRole(rolesGuild, fakediscord.Role{ID: roleAdmins, Name: "admins", Permissions: fakediscord.PermAdministrator})
	f.SetRole(rolesGuild, fakediscord.Role{ID: roleMods, Name: "mods", Permissions: fakediscord.PermAdministrator})
	f.SetOwner(rolesGuild, userOwner)
	f.SetMember(rolesGuild, fakediscord.User{ID: userHidden}, roleAdmins)
	f.SetMember(rolesGuild, fakediscord.User{ID: "U1"}, roleInterns)
	f.AddGuild(rolesGuild,
		text("CGEN"),
		fakediscord.Channel{ID: "TGEN", ParentID: "CGEN", Type: fakediscord.ChannelPublicThread},
		text("CMGR", denyRole(roleInterns), denyMember(userHidden)),
		fakediscord.Channel{ID: "TMGR", ParentID: "CMGR", Type: fakediscord.ChannelPublicThread},
		text("CROLE", denyRole(roleInterns)),
		text("CMEM", denyMember(userHidden)),
		text("CADM", denyRole(roleAdmins)),
		text("CMOD", denyRole(roleMods)),
		text("COWN", denyMember(userOwner)),
		text("CGONE", denyRole("RDELETED")),
		text("CNEW", denyRole("RNEW")),
	)
	h.start()
	if err := f.WaitSessions(h.ctx(), 1); err != nil {
		t.Fatal(err)
	}
	return h
}

// audienceIn is the audience of a message posted in channel now, and of a
// slash command run there.
func (h *harness) audienceIn(channel string) audience.Audience {
	h.t.Helper()
	a := h.expectNext(h.inject(fakediscord.Message{ChannelID: channel, Content: "hi"})).Audience
	if _, err := h.fake.InjectInteraction(fakediscord.Interaction{ChannelID: channel, User: fakediscord.User{ID: "U1"}, Command: "dream-log"}); err != nil {
		h.t.Fatal(err)
	}
	if b := h.next().Audience; b != a {
		h.t.Errorf("in %s a message's audience is %q, a slash command's %q", channel, a, b)
	}
	return a
}

// A channel hidden from any role or member of the server is private to
// itself, with its threads; only one every member may view is the
// server's. ADMINISTRATOR and ownership see past overwrites, as Discord
// computes them; an overwrite naming a role the server does not have hides
// nothing. Without the Server Members intent a member overwrite hides the
// channel whoever the member is: their roles cannot be followed.
func TestAudienceOfRoleHiddenChannels(t *testing.T) {
	t.Parallel()
	team, private := serverOf(rolesGuild), func(chat string) audience.Audience { return privateIn(rolesGuild, chat) }
	for _, members := range []bool{false, true} {
		h := rolesHarness(t, members)
		cases := []struct {
			channel string
			want    audience.Audience
		}{
			{"CGEN", team},
			{"TGEN", team},
			{"CMGR", private("CMGR")},
			{"TMGR", private("CMGR")},
			{"CROLE", private("CROLE")},
			{"CADM", team},
			{"CMOD", team},
			{"COWN", team},
			{"CGONE", team},
			{"CMEM", private("CMEM")}, // U666 is an administrator, but only the members intent says so
		}
		if members {
			cases[len(cases)-1].want = team
		}
		for _, c := range cases {
			if got := h.audienceIn(c.channel); got != c.want {
				t.Errorf("members intent %v: %s: audience %q, want %q", members, c.channel, got, c.want)
			}
		}
	}
}

// The audience follows every change that can hide a channel or show it
// again: its overwrites (CHANNEL_UPDATE), a role's permissions
// (GUILD_ROLE_UPDATE), a role created or deleted, the owner
// (GUILD_UPDATE), and, with the Server Members intent, a member's roles
// (GUILD_MEMBER_UPDATE); a public thread follows its channel.
func TestAudienceFollowsRolesAndMembers(t *testing.T) {
	t.Parallel()
	h := rolesHarness(t, true)
	f := h.fake
	team, private := serverOf(rolesGuild), func(chat string) audience.Audience { return privateIn(rolesGuild, chat) }
	steps := []struct {
		name    string
		change  func()
		channel string
		want    audience.Audience
	}{
		{"CHANNEL_UPDATE hides CGEN from the interns", func() { f.UpdateChannel(text("CGEN", denyRole(roleInterns))) }, "CGEN", private("CGEN")},
		{"its thread too", nil, "TGEN", private("CGEN")},
		{"CHANNEL_UPDATE shows CGEN again", func() { f.UpdateChannel(text("CGEN")) }, "CGEN", team},
		{"its thread too", nil, "TGEN", team},
		{"the mods lose ADMINISTRATOR", func() { f.SetRole(rolesGuild, fakediscord.Role{ID: roleMods, Name: "mods"}) }, "CMOD", private("CMOD")},
		{"the mods role is deleted", func() { f.DeleteRole(rolesGuild, roleMods) }, "CMOD", team},
		{"RNEW is created", func() { f.SetRole(rolesGuild, fakediscord.Role{ID: "RNEW", Name: "new"}) }, "CNEW", private("CNEW")},
		{"U666 loses the admins' role", func() { f.SetMember(rolesGuild, fakediscord.User{ID: userHidden}) }, "CMEM", private("CMEM")},
		{"U666 gets it back", func() { f.SetMember(rolesGuild, fakediscord.User{ID: userHidden}, roleAdmins) }, "CMEM", team},
		{"U666 leaves the server", func() { f.RemoveMember(rolesGuild, userHidden) }, "CMEM", private("CMEM")},
		{"U666 joins again, an administrator", func() { f.SetMember(rolesGuild, fakediscord.User{ID: userHidden}, roleAdmins) }, "CMEM", team},
		{"the admins lose ADMINISTRATOR", func() { f.SetRole(rolesGuild, fakediscord.Role{ID: roleAdmins, Name: "admins"}) }, "CMEM", private("CMEM")},
		{"COWN's member is no longer the owner", func() { f.SetOwner(rolesGuild, "USOMEONE") }, "COWN", private("COWN")},
		{"the server is closed to @everyone", func() { f.SetEveryone(rolesGuild, fakediscord.DefaultEveryone&^fakediscord.PermViewChannel) }, "CGEN", private("CGEN")},
		{"and opened again", func() { f.SetEveryone(rolesGuild, fakediscord.DefaultEveryone) }, "CGEN", team},
	}
	for _, s := range steps {
		if s.change != nil {
			s.change()
		}
		if got := h.audienceIn(s.channel); got != s.want {
			t.Errorf("%s: %s's audience %q, want %q", s.name, s.channel, got, s.want)
		}
	}
}

// Without the Server Members intent, members' role changes never reach the
// bot, and a channel a member overwrite hides stays private whatever that
// member's roles become.
func TestAudienceWithoutMembersIntent(t *testing.T) {
	t.Parallel()
	h := rolesHarness(t, false)
	if got := h.fake.Stats().Intents; got&fakediscord.IntentGuildMembers != 0 {
		t.Fatalf("intents %d ask for the Server Members intent", got)
	}
	h.fake.SetMember(rolesGuild, fakediscord.User{ID: userHidden})
	h.fake.SetMember(rolesGuild, fakediscord.User{ID: userHidden}, roleAdmins)
	if got, want := h.audienceIn("CMEM"), privateIn(rolesGuild, "CMEM"); got != want {
		t.Errorf("CMEM: %q, want %q", got, want)
	}
	for _, r := range h.fake.Requests() {
		if r.Path == "/api/v9/guilds/"+rolesGuild+"/members/"+userHidden {
			t.Errorf("looked a member up without the intent: %+v", r)
		}
	}
}

// guildMembers on while the portal's switch is off: Discord refuses the
// intents (close 4014), and Run says which to enable.
func TestMembersIntentNotEnabled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{cfg: Config{GuildMembers: true}, fake: fakediscord.Config{DisallowGuildMembers: true}, noWait: true})
	select {
	case err := <-h.done:
		close(h.done)
		if !errors.Is(err, ErrDisallowedIntents) || !strings.Contains(err.Error(), "Server Members") {
			t.Fatalf("Run = %v, want %v naming the Server Members intent", err, ErrDisallowedIntents)
		}
	case <-h.ctx().Done():
		t.Fatal("Run did not give up")
	}
}

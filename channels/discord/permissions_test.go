package discord

import (
	"fmt"
	"testing"

	"github.com/bwmarrin/discordgo"
)

const (
	permSend   = discordgo.PermissionSendMessages
	permManage = discordgo.PermissionManageChannels
)

// testServer: G's @everyone may view and send; R1 may manage channels;
// ADM is an administrator; NOP grants nothing; OWN owns G.
var testServer = serverRoles{id: "G", owner: "OWN", perms: map[string]int64{
	"G": permViewChannel | permSend, "R1": permManage, "ADM": permAdministrator, "NOP": 0,
}}

func roleOW(id string, allow, deny int64) overwrite {
	return overwrite{id: id, allow: allow, deny: deny}
}

func memberOW(id string, allow, deny int64) overwrite {
	return overwrite{id: id, member: true, allow: allow, deny: deny}
}

// Discord's documented computation
// (https://discord.com/developers/docs/topics/permissions, "Permission
// Hierarchy"): base permissions are @everyone's with the member's roles'
// OR'd in, every permission for the owner or with ADMINISTRATOR; then
// @everyone's overwrite, the member's roles' overwrites together (all
// denies, then all allows), then the member's own overwrite.
func TestPermissionsAsDiscordComputes(t *testing.T) {
	t.Parallel()
	closed := serverRoles{id: "G", perms: map[string]int64{"G": permSend, "R1": permViewChannel, "ADM": permAdministrator}}
	for _, tt := range []struct {
		name  string
		g     serverRoles
		user  string
		roles []string
		ows   []overwrite
		want  int64
	}{
		{"@everyone's base", testServer, "U", nil, nil, permViewChannel | permSend},
		{"roles add to the base", testServer, "U", []string{"R1"}, nil, permViewChannel | permSend | permManage},
		{"a role the server does not have adds nothing", testServer, "U", []string{"GONE"}, nil, permViewChannel | permSend},
		{"ADMINISTRATOR is every permission", testServer, "U", []string{"ADM"}, nil, permAll},
		{"the owner has every permission", testServer, "OWN", nil, nil, permAll},
		{"ADMINISTRATOR ignores overwrites", testServer, "U", []string{"ADM"}, []overwrite{roleOW("G", 0, permViewChannel), roleOW("ADM", 0, permViewChannel), memberOW("U", 0, permViewChannel)}, permAll},
		{"the owner ignores overwrites", testServer, "OWN", nil, []overwrite{memberOW("OWN", 0, permViewChannel)}, permAll},
		{"@everyone's overwrite denies", testServer, "U", nil, []overwrite{roleOW("G", 0, permViewChannel)}, permSend},
		{"a role's allow beats @everyone's deny", testServer, "U", []string{"R1"}, []overwrite{roleOW("G", 0, permViewChannel), roleOW("R1", permViewChannel, 0)}, permViewChannel | permSend | permManage},
		{"one role's allow beats another's deny", testServer, "U", []string{"R1", "NOP"}, []overwrite{roleOW("NOP", 0, permViewChannel), roleOW("R1", permViewChannel, 0)}, permViewChannel | permSend | permManage},
		{"a role's deny applies to its holders", testServer, "U", []string{"NOP"}, []overwrite{roleOW("NOP", 0, permViewChannel)}, permSend},
		{"a role's overwrite spares who lacks the role", testServer, "U", []string{"R1"}, []overwrite{roleOW("NOP", 0, permViewChannel)}, permViewChannel | permSend | permManage},
		{"the member's deny beats a role's allow", testServer, "U", []string{"R1"}, []overwrite{roleOW("R1", permViewChannel, 0), memberOW("U", 0, permViewChannel)}, permSend | permManage},
		{"the member's allow beats every deny", testServer, "U", []string{"NOP"}, []overwrite{roleOW("G", 0, permViewChannel), roleOW("NOP", 0, permViewChannel), memberOW("U", permViewChannel, 0)}, permViewChannel | permSend},
		{"another member's overwrite does not apply", testServer, "U", nil, []overwrite{memberOW("V", 0, permViewChannel)}, permViewChannel | permSend},
		{"a closed server: a role may view", closed, "U", []string{"R1"}, nil, permViewChannel | permSend},
		{"a closed server: @everyone may view here", closed, "U", nil, []overwrite{roleOW("G", permViewChannel, 0)}, permViewChannel | permSend},
		{"a member id equal to a role's is not that role", testServer, "R1", nil, []overwrite{roleOW("R1", 0, permViewChannel)}, permViewChannel | permSend},
	} {
		if got := tt.g.permissions(tt.user, tt.roles, tt.ows); got != tt.want {
			t.Errorf("%s: permissions %b, want %b", tt.name, got, tt.want)
		}
	}
}

// A channel is the server's only when every member, present or to come,
// may view it: a member without roles, a member holding any one role, and
// each member a member overwrite names.
func TestHiddenFrom(t *testing.T) {
	t.Parallel()
	closed := serverRoles{id: "G", perms: map[string]int64{"G": permSend, "R1": permViewChannel}}
	adminEveryone := serverRoles{id: "G", perms: map[string]int64{"G": permAdministrator}}
	admins := map[string][]string{"UADM": {"ADM"}, "U": {"R1"}}
	known := func(u string) ([]string, bool) { r, ok := admins[u]; return r, ok }
	unknown := func(string) ([]string, bool) { return nil, false }
	for _, tt := range []struct {
		name    string
		g       serverRoles
		ows     []overwrite
		rolesOf func(string) ([]string, bool)
		want    string
	}{
		{"no overwrites", testServer, nil, unknown, ""},
		{"@everyone may not view", testServer, []overwrite{roleOW("G", 0, permViewChannel)}, unknown, "members without a role"},
		{"@everyone may not send", testServer, []overwrite{roleOW("G", 0, permSend)}, unknown, ""},
		{"a role may not view", testServer, []overwrite{roleOW("NOP", 0, permViewChannel)}, unknown, "role NOP"},
		{"a role the server does not have", testServer, []overwrite{roleOW("GONE", 0, permViewChannel)}, unknown, ""},
		{"an administrators' role may not view", testServer, []overwrite{roleOW("ADM", 0, permViewChannel)}, unknown, ""},
		{"a role denied and allowed", testServer, []overwrite{roleOW("NOP", permViewChannel, permViewChannel)}, unknown, ""},
		{"@everyone denied, a role allowed", testServer, []overwrite{roleOW("G", 0, permViewChannel), roleOW("R1", permViewChannel, 0)}, unknown, "members without a role"},
		{"a member may not view, roles unknown", testServer, []overwrite{memberOW("U", 0, permViewChannel)}, unknown, "member U"},
		{"a member may not view, roles known", testServer, []overwrite{memberOW("U", 0, permViewChannel)}, known, "member U"},
		{"an administrator may not view", testServer, []overwrite{memberOW("UADM", 0, permViewChannel)}, known, ""},
		{"an administrator whose roles are unknown", testServer, []overwrite{memberOW("UADM", 0, permViewChannel)}, unknown, "member UADM"},
		{"the owner may not view", testServer, []overwrite{memberOW("OWN", 0, permViewChannel)}, unknown, ""},
		{"a member allowed", testServer, []overwrite{memberOW("U", permViewChannel, 0)}, unknown, ""},
		{"a closed server, no overwrite", closed, nil, unknown, "members without a role"},
		{"a closed server, a role allowed", closed, []overwrite{roleOW("R1", permViewChannel, 0)}, unknown, "members without a role"},
		{"a closed server, @everyone allowed", closed, []overwrite{roleOW("G", permViewChannel, 0)}, unknown, ""},
		{"@everyone is an administrator", adminEveryone, []overwrite{roleOW("G", 0, permViewChannel)}, unknown, ""},
	} {
		if got := tt.g.hiddenFrom(tt.ows, tt.rolesOf); got != tt.want {
			t.Errorf("%s: hidden from %q, want %q", tt.name, got, tt.want)
		}
	}
}

// BenchmarkHiddenFrom decides a channel's audience in a large server: 250
// roles, a channel carrying 25 role overwrites (none hiding it) and 5
// member overwrites of administrators — the most work one message's
// audience takes, as every overwrite is checked.
func BenchmarkHiddenFrom(b *testing.B) {
	g := serverRoles{id: "G", owner: "OWN", perms: map[string]int64{"G": permViewChannel | permSend, "ADM": permAdministrator}}
	for i := range 250 {
		g.perms[fmt.Sprint("R", i)] = permSend
	}
	var ows []overwrite
	for i := range 25 {
		ows = append(ows, roleOW(fmt.Sprint("R", i*10), permViewChannel, permManage))
	}
	for i := range 5 {
		ows = append(ows, memberOW(fmt.Sprint("U", i), 0, permViewChannel))
	}
	rolesOf := func(string) ([]string, bool) { return []string{"R1", "R2", "ADM"}, true }
	b.ReportAllocs()
	for b.Loop() {
		if hidden := g.hiddenFrom(ows, rolesOf); hidden != "" {
			b.Fatalf("hidden from %s", hidden)
		}
	}
}

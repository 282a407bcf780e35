package fakediscord

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// identifyWith is IDENTIFY asking for intents.
func identifyWith(intents int) map[string]any {
	m := identify("Bot fake-token")
	m["d"].(map[string]any)["intents"] = intents
	return m
}

type guildCreate struct {
	OwnerID string `json:"owner_id"`
	Roles   []struct {
		ID          string `json:"id"`
		Permissions string `json:"permissions"`
	} `json:"roles"`
	Members []struct {
		User  struct{ ID string } `json:"user"`
		Roles []string            `json:"roles"`
	} `json:"members"`
}

func readGuildCreate(t *testing.T, c *wsClient) guildCreate {
	t.Helper()
	var g guildCreate
	if err := json.Unmarshal(c.readUntil("GUILD_CREATE", 0).D, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// Roles and members are spoken as Discord speaks them: GUILD_CREATE lists
// the roles with their permissions (as strings) and the owner, and the
// members only to a session with the Server Members intent; role changes
// are dispatched to every session, members' changes only to one with
// that intent.
func TestRolesAndMembers(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	s.SetRole("G1", Role{ID: "R77", Name: "interns", Permissions: 1 << 11})
	s.SetMember("G1", User{ID: "U666"}, "R77")
	s.SetOwner("G1", "U1")

	plain := dial(t, s)
	plain.send(identify("Bot fake-token"))
	g := readGuildCreate(t, plain)
	if g.OwnerID != "U1" || len(g.Roles) != 3 || g.Roles[2].ID != "R77" || g.Roles[2].Permissions != "2048" {
		t.Fatalf("GUILD_CREATE without the intent: %+v", g)
	}
	if len(g.Members) != 1 || g.Members[0].User.ID != "BOT1" {
		t.Errorf("members listed without the intent: %+v", g.Members)
	}
	// Role events reach a session without the members intent; member
	// events do not.
	s.SetMember("G1", User{ID: "U666"})
	s.SetRole("G1", Role{ID: "R77", Name: "interns", Permissions: PermAdministrator})
	if f := plain.readUntil("GUILD_ROLE_UPDATE", 0); !bytes.Contains(f.D, []byte(`"permissions":"8"`)) {
		t.Errorf("GUILD_ROLE_UPDATE = %s", f.D)
	}
	s.DeleteRole("G1", "R77")
	if f := plain.readUntil("GUILD_ROLE_DELETE", 0); !bytes.Contains(f.D, []byte(`"role_id":"R77"`)) {
		t.Errorf("GUILD_ROLE_DELETE = %s", f.D)
	}
	s.mu.Lock()
	for _, e := range s.shardLocked(0).events {
		if bytes.Contains(e.payload, []byte("GUILD_MEMBER")) {
			t.Errorf("a member event was sent without the intent: %s", e.payload)
		}
	}
	s.mu.Unlock()

	s.SetRole("G1", Role{ID: "R88", Name: "managers"})
	s.SetMember("G1", User{ID: "U666"}, "R88")
	members := dial(t, s)
	members.send(identifyWith(37377 | IntentGuildMembers))
	g = readGuildCreate(t, members)
	if len(g.Members) != 2 || g.Members[1].User.ID != "U666" || !slices.Equal(g.Members[1].Roles, []string{"R88"}) {
		t.Fatalf("members with the intent: %+v", g.Members)
	}
	s.SetMember("G1", User{ID: "U667"}, "R88")
	if f := members.readUntil("GUILD_MEMBER_ADD", 0); !bytes.Contains(f.D, []byte(`"roles":["R88"]`)) || !bytes.Contains(f.D, []byte(`"guild_id":"G1"`)) {
		t.Errorf("GUILD_MEMBER_ADD = %s", f.D)
	}
	s.SetMember("G1", User{ID: "U666"})
	if f := members.readUntil("GUILD_MEMBER_UPDATE", 0); !bytes.Contains(f.D, []byte(`"roles":[]`)) || !bytes.Contains(f.D, []byte(`"id":"U666"`)) {
		t.Errorf("GUILD_MEMBER_UPDATE = %s", f.D)
	}
	s.RemoveMember("G1", "U667")
	if f := members.readUntil("GUILD_MEMBER_REMOVE", 0); !bytes.Contains(f.D, []byte(`"id":"U667"`)) {
		t.Errorf("GUILD_MEMBER_REMOVE = %s", f.D)
	}
	s.SetOwner("G1", "U2")
	if f := members.readUntil("GUILD_UPDATE", 0); !bytes.Contains(f.D, []byte(`"owner_id":"U2"`)) {
		t.Errorf("GUILD_UPDATE = %s", f.D)
	}

	// A member's roles travel with their messages.
	s.SetMember("G1", User{ID: "U5"}, "R88")
	if _, err := s.InjectMessage(Message{ChannelID: "C1", Author: User{ID: "U5"}, Content: "hi"}); err != nil {
		t.Fatal(err)
	}
	if f := members.readUntil("MESSAGE_CREATE", 0); !bytes.Contains(f.D, []byte(`"member":{"deaf":false,"joined_at":"2024-01-01T00:00:00Z","mute":false,"roles":["R88"]}`)) {
		t.Errorf("MESSAGE_CREATE's member = %s", f.D)
	}
}

// GET /guilds/{id} and /guilds/{id}/members/{user} answer for a guild the
// bot is in; a guild it is not in, its channels and DMs between other
// people are Missing Access.
func TestGuildREST(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	const auth = "Bot fake-token"
	s.SetRole("G1", Role{ID: "R77", Permissions: 1 << 10})
	s.SetMember("G1", User{ID: "U666"}, "R77")
	s.AddChannel(Channel{ID: "C9", GuildID: "G9", Type: ChannelText})
	s.AddChannel(Channel{ID: "DX", Type: ChannelDM, Recipients: []string{"U1", "U2"}})
	s.AddChannel(Channel{ID: "DB", Type: ChannelDM, Recipients: []string{"U1", "BOT1"}})
	for _, tt := range []struct {
		name, path string
		status     int
		code       float64
	}{
		{"guild", "/api/v9/guilds/G1", 200, 0},
		{"guild the bot is not in", "/api/v9/guilds/G9", 403, 50001},
		{"member", "/api/v9/guilds/G1/members/U666", 200, 0},
		{"the bot", "/api/v9/guilds/G1/members/BOT1", 200, 0},
		{"not a member", "/api/v9/guilds/G1/members/U404", 404, 10007},
		{"member of a guild the bot is not in", "/api/v9/guilds/G9/members/U1", 403, 50001},
		{"channel of a guild the bot is not in", "/api/v9/channels/C9", 403, 50001},
		{"DM between people", "/api/v9/channels/DX", 403, 50001},
		{"DM with the bot", "/api/v9/channels/DB", 200, 0},
	} {
		status, body := do(t, s, "GET", tt.path, auth, "")
		if status != tt.status || tt.code != 0 && body["code"] != tt.code {
			t.Errorf("%s: %d %v, want %d code %v", tt.name, status, body, tt.status, tt.code)
		}
	}
	_, g := do(t, s, "GET", "/api/v9/guilds/G1", auth, "")
	if g["owner_id"] != defaultOwner || len(g["roles"].([]any)) != 3 {
		t.Errorf("guild = %v", g)
	}
	_, m := do(t, s, "GET", "/api/v9/guilds/G1/members/U666", auth, "")
	if roles, _ := m["roles"].([]any); len(roles) != 1 || roles[0] != "R77" {
		t.Errorf("member = %v", m)
	}
	if _, err := s.InjectMessage(Message{ChannelID: "DX", Author: User{ID: "U1"}, Content: "hi"}); err == nil {
		t.Error("a message of a DM between people reached the bot")
	}
}

// A command's interaction says where it was run and which installation
// let it run there: a guild the bot is in (its installation), a DM with
// the bot, and, reached only through a person's own installation of the
// app, a DM between people or a guild that did not add the bot. A command
// registered for some contexts or installations only is not run
// elsewhere.
func TestInteractionContexts(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	const auth = "Bot fake-token"
	s.AddChannel(Channel{ID: "D1", Type: ChannelDM})
	s.AddChannel(Channel{ID: "DX", Type: ChannelDM, Recipients: []string{"U1", "U2"}})
	s.AddChannel(Channel{ID: "C9", GuildID: "G9", Type: ChannelText})
	cmds := `[{"name":"web-link","description":"a link"},
		{"name":"why","description":"why","contexts":[0,1]},
		{"name":"new","description":"new","integration_types":[0]}]`
	if st, _ := do(t, s, "PUT", "/api/v9/applications/BOT1/commands", auth, cmds); st != 200 {
		t.Fatal(st)
	}
	c := dial(t, s)
	c.send(identify("Bot fake-token"))
	c.readUntil("GUILD_CREATE", 0)
	for _, tt := range []struct {
		channel, context, owners, guild string
	}{
		{"C1", `"context":0`, `"authorizing_integration_owners":{"0":"G1"}`, `"guild_id":"G1"`},
		{"D1", `"context":1`, `"authorizing_integration_owners":{"0":"0"}`, ""},
		{"DX", `"context":2`, `"authorizing_integration_owners":{"1":"U1"}`, ""},
		{"C9", `"context":0`, `"authorizing_integration_owners":{"1":"U1"}`, `"guild_id":"G9"`},
	} {
		if _, err := s.InjectInteraction(Interaction{ChannelID: tt.channel, User: User{ID: "U1"}, Command: "web-link"}); err != nil {
			t.Fatal(err)
		}
		f := c.readUntil("INTERACTION_CREATE", 0)
		for _, want := range []string{tt.context, tt.owners, tt.guild} {
			if !bytes.Contains(f.D, []byte(want)) {
				t.Errorf("in %s: %s lacks %s", tt.channel, f.D, want)
			}
		}
		if tt.guild == "" && bytes.Contains(f.D, []byte(`"guild_id"`)) {
			t.Errorf("in %s: a guild: %s", tt.channel, f.D)
		}
	}
	for _, tt := range []struct {
		channel, command string
		ok               bool
	}{
		{"D1", "why", true}, {"DX", "why", false}, {"C1", "new", true}, {"C9", "new", false}, {"DX", "new", false},
	} {
		_, err := s.InjectInteraction(Interaction{ChannelID: tt.channel, User: User{ID: "U1"}, Command: tt.command})
		if (err == nil) != tt.ok {
			t.Errorf("/%s in %s: err %v, want ok %v", tt.command, tt.channel, err, tt.ok)
		}
	}
}

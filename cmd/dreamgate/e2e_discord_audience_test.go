package main

import (
	"path"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// Through the built binary and the real Discord adapter: a channel's
// audience follows every change that hides it or shows it again — its
// overwrites (CHANNEL_UPDATE), a role's permissions (GUILD_ROLE_UPDATE), a
// member's roles (GUILD_MEMBER_UPDATE, with guildMembers) — and what is
// said while a channel is hidden is dreamed into its own memory, never
// the server's: no prompt, post or /dream-log of the public channel holds
// it, the server's memory file does not, and it is remembered where it
// was said. Shown again, the channel is the server's from its next
// message, and what it said while hidden stays its own.
func TestDiscordAudienceChangesThroughTheBinary(t *testing.T) {
	w := startRolesWorld(t)
	dc, team, private := w.dc, w.team(), w.private
	general := place{name: "#general", aud: team, key: "discord:2001"}
	ops := place{name: "#ops", key: "discord:2010"}
	pager := place{name: "#ops' thread", key: "discord:2010:thread:2011"}
	modlog := place{name: "#modlog", key: "discord:2012"}
	hr := place{name: "#hr", key: "discord:2013"}
	for _, p := range []place{general, ops, pager, modlog, hr} {
		w.users[p.key] = "501"
	}

	w.plant(ops, "FACT: The ops standup room is ROOMALPHA1.", "ROOMALPHA1", "What is the ops standup room?", team)
	// Hidden from the interns by a CHANNEL_UPDATE; its thread with it.
	dc.UpdateChannel(rolesChannel("2010", "ops", denyView("7077", fakediscord.OverwriteRole)))
	w.plant(ops, "FACT: The ops incident code is OPSHIDDEN22.", "OPSHIDDEN22", "What is the ops incident code?", private("2010"))
	w.plant(pager, "FACT: The pager pin is THREADPIN33.", "THREADPIN33", "What is the pager pin?", private("2010"))
	// Hidden when the mods' role loses ADMINISTRATOR.
	dc.SetRole(rolesGuild, fakediscord.Role{ID: "7088", Name: "mods"})
	w.plant(modlog, "FACT: The moderator appeal code is MODAPPEAL44.", "MODAPPEAL44", "What is the moderator appeal code?", private("2012"))
	// Hidden when member 666 loses the admins' role.
	dc.SetMember(rolesGuild, fakediscord.User{ID: "666"})
	w.plant(hr, "FACT: The hr review code is HRREVIEW55.", "HRREVIEW55", "What is the hr review code?", private("2013"))
	// #ops shown to everyone again: the server's from its next message.
	dc.UpdateChannel(rolesChannel("2010", "ops"))
	visibleFrom, opsShownFrom := len(w.h.llm.Requests()), len(w.shown(ops))
	w.plant(ops, "FACT: The ops lunch order is LUNCHOPEN66.", "LUNCHOPEN66", "What is the ops lunch order?", team)

	for _, q := range []string{"What is the ops incident code?", "What is the pager pin?", "What is the moderator appeal code?", "What is the hr review code?", "/dream-log"} {
		w.say(t, general, q)
		w.say(t, ops, q)
	}
	if mem := w.memoryOf(team); !strings.Contains(mem, "ROOMALPHA1") || !strings.Contains(mem, "LUNCHOPEN66") {
		t.Errorf("the server's memory lacks what its public channels said:\n%s", mem)
	}
	for _, secret := range []string{"OPSHIDDEN22", "THREADPIN33", "MODAPPEAL44", "HRREVIEW55"} {
		if strings.Contains(w.memoryOf(team), secret) {
			t.Errorf("the server's memory holds %s", secret)
		}
		for i, r := range w.h.llm.Requests() {
			key := chatKey(r)
			if (key == general.key || key == ops.key && i >= visibleFrom) && strings.Contains(requestText(r), secret) {
				t.Errorf("a prompt of %s, which everyone reads, holds %s", key, secret)
			}
		}
		for _, text := range append(w.shown(general), w.shown(ops)[opsShownFrom:]...) {
			if strings.Contains(text, secret) {
				t.Errorf("a channel everyone reads was shown %s: %q", secret, text)
			}
		}
	}
	// Asked in #ops now, what it said while hidden is not shown.
	w.say(t, ops, "/new")
	if got := w.say(t, ops, "What is the ops incident code?"); strings.Contains(got, "OPSHIDDEN22") {
		t.Errorf("#ops shown again answers with what it said while hidden: %q", got)
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", w.gw.stderr.String())
	}
}

const rolesGuild = "1001"

func denyView(id string, typ int) fakediscord.Overwrite {
	return fakediscord.Overwrite{ID: id, Type: typ, Deny: fakediscord.PermViewChannel}
}

func rolesChannel(id, name string, ows ...fakediscord.Overwrite) fakediscord.Channel {
	return fakediscord.Channel{ID: id, GuildID: rolesGuild, Name: name, Type: fakediscord.ChannelText, Overwrites: ows}
}

// rolesWorld is a gateway, with guildMembers on, in a server whose roles
// are interns (7077), mods (7088) and admins (7099, held by member 666),
// both administrators, with channels #general and #ops (every member
// views them), #ops' thread, #modlog (hidden from the mods) and #hr
// (hidden from member 666).
type rolesWorld struct {
	*discordWorld
	t *testing.T
	h *harness
}

func startRolesWorld(t *testing.T) *rolesWorld {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.SetRole(rolesGuild, fakediscord.Role{ID: "7077", Name: "interns", Permissions: fakediscord.DefaultEveryone})
	dc.SetRole(rolesGuild, fakediscord.Role{ID: "7088", Name: "mods", Permissions: fakediscord.PermAdministrator})
	dc.SetRole(rolesGuild, fakediscord.Role{ID: "7099", Name: "admins", Permissions: fakediscord.PermAdministrator})
	dc.SetMember(rolesGuild, fakediscord.User{ID: "666"}, "7099")
	dc.SetMember(rolesGuild, fakediscord.User{ID: "501"})
	dc.AddGuild(rolesGuild,
		rolesChannel("2001", "general"),
		rolesChannel("2010", "ops"),
		fakediscord.Channel{ID: "2011", Name: "pager", ParentID: "2010", Type: fakediscord.ChannelPublicThread},
		rolesChannel("2012", "modlog", denyView("7088", fakediscord.OverwriteRole)),
		rolesChannel("2013", "hr", denyView("666", fakediscord.OverwriteMember)),
	)
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL(),
		"slashCommands": false, "stream": false, "guildMembers": true})
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	return &rolesWorld{discordWorld: &discordWorld{dc: dc, gw: gw, users: map[string]string{}, dm: map[string]bool{}}, t: t, h: h}
}

func (w *rolesWorld) team() audience.Audience {
	return audience.Audience{Kind: audience.Team, Platform: "discord", Team: rolesGuild}
}

func (w *rolesWorld) private(chat string) audience.Audience {
	return audience.Audience{Kind: audience.Private, Platform: "discord", Team: rolesGuild, Chat: chat}
}

// memoryOf is the MEMORY.md of a's scope ("" before it has one).
func (w *rolesWorld) memoryOf(a audience.Audience) string {
	w.t.Helper()
	return string(readMemoryFile(w.t, w.h.ws, path.Join(a.Home().Dir(), workspace.Memory)))
}

// plant says fact in p, has it dreamed there, and checks that it was
// dreamed into want's memory and is remembered in p by a new conversation.
func (w *rolesWorld) plant(p place, fact, secret, ask string, want audience.Audience) {
	t := w.t
	t.Helper()
	w.say(t, p, fact)
	if got := w.say(t, p, "/dream"); !strings.HasPrefix(got, "Dream") {
		t.Errorf("%s: /dream answered %q", p.name, got)
	}
	if !strings.Contains(w.memoryOf(want), secret) {
		t.Errorf("%s: %s is not in the memory of %s", p.name, secret, want)
	}
	w.say(t, p, "/new")
	if got := w.say(t, p, ask); !strings.Contains(got, secret) {
		t.Errorf("%s does not remember %s: answered %q", p.name, secret, got)
	}
}

// Through the built binary: a slash command of the app installed to a
// person's account, run in a DM between two people (interaction context 2)
// or in a server that did not add the bot, is kept apart: /web-link sends
// no sign-in link there, and /why shows nothing of the person's memory;
// in the person's DM with the bot both work.
func TestDiscordUserInstalledCommandsThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddGuild("1001", fakediscord.Channel{ID: "2001", Name: "general", Type: fakediscord.ChannelText})
	dc.AddChannel(fakediscord.Channel{ID: "4001", Type: fakediscord.ChannelDM})
	dc.AddChannel(fakediscord.Channel{ID: "4009", Type: fakediscord.ChannelDM, Recipients: []string{"501", "502"}})
	dc.AddChannel(fakediscord.Channel{ID: "9001", GuildID: "9009", Type: fakediscord.ChannelText})
	ana := audience.Audience{Kind: audience.Person, Platform: "discord", Person: "501"}
	writeMemory(t, h, ana.Home(), workspace.Memory, "# Long-term memory\n\n- Ana's locker code is ANALOCK42.\n")
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	h.set("web.token", testWebToken)
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL(), "stream": false})
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	waitWeb(t, gw, "http://"+addr)
	ctx := waitCtx(t)
	if err := dc.WaitRequest(ctx, "PUT", "/api/v9/applications/"+dc.BotID()+"/commands"); err != nil {
		t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
	}
	run := func(channel, command string, opts map[string]string) string {
		t.Helper()
		n := len(dc.Followups())
		if _, err := dc.InjectInteraction(fakediscord.Interaction{ChannelID: channel, User: fakediscord.User{ID: "501", Username: "ana"},
			Command: command, Options: opts}); err != nil {
			t.Fatal(err)
		}
		fus, err := dc.WaitFollowups(ctx, n+1)
		if err != nil {
			t.Fatalf("/%s in %s: %v; log:\n%s", command, channel, err, gw.stderr.String())
		}
		return fus[n].Content
	}
	for _, where := range []struct{ name, channel string }{
		{"a DM between two people", "4009"},
		{"a server that did not add the bot", "9001"},
	} {
		if got := run(where.channel, "web-link", nil); signInLinkRe.MatchString(got) || !strings.Contains(got, "direct message") {
			t.Errorf("/web-link in %s: %q", where.name, got)
		}
		if got := run(where.channel, "why", map[string]string{"words": "locker code"}); strings.Contains(got, "ANALOCK42") {
			t.Errorf("/why in %s shows Ana's memory: %q", where.name, got)
		}
	}
	if got := run("4001", "web-link", nil); !signInLinkRe.MatchString(got) {
		t.Errorf("/web-link in Ana's DM with the bot: %q", got)
	}
	if got := run("4001", "why", map[string]string{"words": "locker code"}); !strings.Contains(got, "ANALOCK42") {
		t.Errorf("/why in Ana's DM with the bot: %q", got)
	}
	if t.Failed() {
		t.Logf("gateway log:\n%s", gw.stderr.String())
	}
}

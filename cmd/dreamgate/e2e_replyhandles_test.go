package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// heldDream makes the model hold the first Dream's analysis call until
// released, and answer as the memory model otherwise; an archive entry of
// team's scope gives a Dream asked for there something to read.
func heldDream(t *testing.T, h *harness, team audience.Audience) (release func()) {
	t.Helper()
	held := make(chan struct{})
	var once sync.Once
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		if len(r.Tools) == 0 && strings.Contains(r.Messages[len(r.Messages)-1].Content, "## Archive entries") {
			once.Do(func() { <-held })
		}
		return llmtest.MemoryModel(r)
	})
	a := h.app()
	if _, err := a.history.AppendIn(team.Home(), "- The team ships on Fridays.", team.Platform+":C1"); err != nil {
		t.Fatal(err)
	}
	a.close()
	var closeOnce sync.Once
	release = func() { closeOnce.Do(func() { close(held) }) }
	t.Cleanup(release)
	return release
}

// killWhileDreaming waits for the Dream's held analysis call, kills the
// gateway (SIGKILL: nothing of it runs after) and lets the model go.
func killWhileDreaming(t *testing.T, h *harness, gw *gatewayProc, asked int, release func()) {
	t.Helper()
	if _, err := h.llm.WaitRequests(waitCtx(t), asked+1); err != nil {
		t.Fatalf("the Dream never asked the model: %v; log:\n%s", err, gw.stderr.String())
	}
	_ = gw.cmd.Process.Kill()
	<-gw.exited
	release()
}

// A Slack slash command accepted before the gateway was killed is
// answered by the next start through its response_url, ephemeral, as it
// would have been: never in the channel, never lost.
func TestSlashCommandAnsweredAfterARestartThroughSlack(t *testing.T) {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{Users: map[string]string{"U1": "Ana"}})
	t.Cleanup(sl.Close)
	release := heldDream(t, h, audience.Audience{Kind: audience.Team, Platform: "slack", Team: fakeslack.DefaultTeamID})
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "commandPrefix": "dg-",
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	asked := len(h.llm.Requests())
	_, trig, err := sl.InjectSlashCommand(fakeslack.SlashCommand{Command: "/dg-dream", User: "U1", Channel: "C1"})
	if err != nil {
		t.Fatal(err)
	}
	killWhileDreaming(t, h, gw, asked, release)

	gw = h.startGateway(t)
	ctx := waitCtx(t)
	for {
		resps, err := sl.WaitResponses(ctx, len(sl.Responses())+1)
		if err != nil {
			t.Fatalf("no answer through the response_url after the restart: %v; responses %+v; log:\n%s", err, sl.Responses(), gw.stderr.String())
		}
		r := resps[len(resps)-1]
		if r.TriggerID != trig || r.ResponseType != "ephemeral" {
			t.Fatalf("response %+v, want the command's (%s), ephemeral", r, trig)
		}
		if strings.HasPrefix(r.Text, "Dream:") {
			break // the answer; what came before it were progress lines
		}
	}
	if posts, eph := sl.Posts(), sl.Ephemerals(); len(posts) != 0 || len(eph) != 0 {
		t.Errorf("the answer went elsewhere: posts %+v, ephemerals %+v", posts, eph)
	}
}

// A Discord slash command deferred before the gateway was killed is
// answered by the next start through its interaction: "thinking…" becomes
// the answer, and nothing is posted to the channel.
func TestSlashCommandAnsweredAfterARestartThroughDiscord(t *testing.T) {
	h := newHarness(t)
	dc, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dc.Close)
	dc.AddGuild("G1", fakediscord.Channel{ID: "C42", Name: "general", Type: fakediscord.ChannelText})
	release := heldDream(t, h, audience.Audience{Kind: audience.Team, Platform: "discord", Team: "G1"})
	h.set("channels.terminal.enabled", false)
	h.set("channels.discord", map[string]any{"enabled": true, "token": dc.Token(), "apiURL": dc.URL()})
	gw := h.startGateway(t)
	gw.waitConnected(t, "discord")
	ctx := waitCtx(t)
	if err := dc.WaitRequest(ctx, "PUT", "/api/v9/applications/"+dc.BotID()+"/commands"); err != nil {
		t.Fatalf("%v; log:\n%s", err, gw.stderr.String())
	}
	asked := len(h.llm.Requests())
	id, err := dc.InjectInteraction(fakediscord.Interaction{ChannelID: "C42", User: fakediscord.User{ID: "U7"}, Command: "dream"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dc.WaitCallbacks(ctx, 1); err != nil {
		t.Fatal(err)
	}
	killWhileDreaming(t, h, gw, asked, release)

	gw = h.startGateway(t)
	for {
		fus, err := dc.WaitFollowups(ctx, len(dc.Followups())+1)
		if err != nil {
			t.Fatalf("no answer through the interaction after the restart: %v; follow-ups %+v; log:\n%s", err, dc.Followups(), gw.stderr.String())
		}
		f := fus[len(fus)-1]
		if f.InteractionID != id {
			t.Fatalf("follow-up %+v, want the command's (%s)", f, id)
		}
		if strings.HasPrefix(f.Content, "Dream:") {
			break
		}
	}
	if sent := dc.Sent(); len(sent) != 0 {
		t.Errorf("the answer was posted to the channel: %+v", sent)
	}
}

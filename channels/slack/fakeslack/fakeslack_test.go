package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

// These tests drive the fake with slack-go's Web API client and a bare
// websocket, to pin the wire protocol independently of the adapter.

func TestWebAPI(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
	ctx := t.Context()

	auth, err := api.AuthTestContext(ctx)
	if err != nil || auth.UserID != DefaultBotUserID || auth.BotID != DefaultBotID {
		t.Fatalf("auth.test = %+v, %v", auth, err)
	}
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("hi", false), slack.MsgOptionTS("1.1"))
	if err != nil || ts == "" {
		t.Fatalf("chat.postMessage = %q, %v", ts, err)
	}
	if p := s.Posts(); len(p) != 1 || p[0].Channel != "C1" || p[0].Text != "hi" || p[0].ThreadTS != "1.1" || p[0].TS != ts {
		t.Errorf("posts = %+v", p)
	}

	s.RateLimitNextPost(2 * time.Second)
	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); !ok || rl.RetryAfter != 2*time.Second {
		t.Errorf("scripted 429 gave %v", err)
	}
	s.FailNextPost(http.StatusInternalServerError)
	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	if sc, ok := errors.AsType[slack.StatusCodeError](err); !ok || sc.Code != 500 {
		t.Errorf("scripted 500 gave %v", err)
	}
	_, _, err = api.PostMessageContext(ctx, "C1", slack.MsgOptionText(strings.Repeat("x", MaxTextLen+1), false))
	if err == nil || err.Error() != "msg_too_long" {
		t.Errorf("long text gave %v", err)
	}

	ref := slack.NewRefToMessage("C1", "1.1")
	if err := api.AddReactionContext(ctx, "eyes", ref); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "eyes", ref); err == nil || err.Error() != "already_reacted" {
		t.Errorf("second add gave %v", err)
	}
	if err := api.RemoveReactionContext(ctx, "eyes", ref); err != nil {
		t.Fatal(err)
	}
	if err := api.RemoveReactionContext(ctx, "eyes", ref); err == nil || err.Error() != "no_reaction" {
		t.Errorf("second remove gave %v", err)
	}

	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken("xapp-wrong"))
	if _, err := bad.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("wrong bot token gave %v", err)
	}
	if _, _, err := bad.StartSocketModeContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("wrong app token gave %v", err)
	}
}

func TestSocketMode(t *testing.T) {
	s := New(Config{PingInterval: 10 * time.Millisecond})
	defer s.Close()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	_, wsURL, err := api.StartSocketModeContext(ctx)
	if err != nil || !strings.HasPrefix(wsURL, "ws://127.0.0.1:") || !strings.Contains(wsURL, "/link/?ticket=") {
		t.Fatalf("apps.connections.open = %q, %v", wsURL, err)
	}
	pinged := make(chan struct{}, 1)
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetPingHandler(func(string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return nil
	})
	read := func() map[string]any {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := read(); m["type"] != "hello" {
		t.Fatalf("first frame = %v, want hello", m)
	}
	if err := s.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}

	d, err := s.Inject(Event{Type: "app_mention", Channel: "C1", User: "U1", Text: "<@UBOT> hi"})
	if err != nil {
		t.Fatal(err)
	}
	env := read()
	if env["type"] != "events_api" || env["envelope_id"] != d.EnvelopeID {
		t.Fatalf("envelope = %v", env)
	}
	payload, _ := json.Marshal(env["payload"])
	var cb struct {
		Type  string `json:"type"`
		Event struct {
			Type, Channel, User, Text, TS string
		} `json:"event"`
	}
	if err := json.Unmarshal(payload, &cb); err != nil || cb.Type != "event_callback" || cb.Event.Type != "app_mention" || cb.Event.TS != d.Event.TS {
		t.Fatalf("payload = %s (%v)", payload, err)
	}
	if err := ws.WriteJSON(map[string]string{"envelope_id": d.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitAcked(ctx, d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	// A slash command reaches the app also from a DM it is not in, named
	// as Slack names every DM.
	s.SetConversation(Conversation{ID: "DANABOB", Between: []string{"UANA", "UBOB"}})
	envID, _, err := s.InjectSlashCommand(SlashCommand{Command: "/why", User: "UANA", Channel: "DANABOB"})
	if err != nil {
		t.Fatal(err)
	}
	env = read()
	sc, _ := env["payload"].(map[string]any)
	if env["type"] != "slash_commands" || env["envelope_id"] != envID || sc["channel_id"] != "DANABOB" || sc["channel_name"] != "directmessage" {
		t.Fatalf("slash command envelope = %v", env)
	}
	// Read on, so the ping handler runs.
	go func() {
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	select {
	case <-pinged:
	case <-ctx.Done():
		t.Fatal("no PING frame")
	}
	if err := s.DropConnection(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Inject(Event{Channel: "D1", User: "U1", Text: "x"}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("inject after drop = %v, want ErrNotConnected", err)
	}
	// A ticket works once.
	if _, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("reused ticket: %v", err)
	}
}

func TestHistoryAndMetadata(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()))
	ctx := t.Context()
	meta := func(id string) slack.MsgOption {
		return slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "t", EventPayload: map[string]any{"id": id}})
	}
	_, top1, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("top 1", false), meta("a"))
	if err != nil {
		t.Fatal(err)
	}
	// Posted, but answered with a 500: it is in the history all the same.
	s.FailNextPostAfterPosting(http.StatusInternalServerError)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("top 2", false), meta("b")); err == nil {
		t.Fatal("scripted 500 after posting gave no error")
	}
	for _, text := range []string{"reply 1", "reply 2"} {
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText(text, false), slack.MsgOptionTS(top1), meta(text)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := api.PostMessageContext(ctx, "C2", slack.MsgOptionText("elsewhere", false)); err != nil {
		t.Fatal(err)
	}

	texts := func(msgs []slack.Message) (out []string) {
		for _, m := range msgs {
			out = append(out, m.Text+"/"+m.Metadata.EventType)
		}
		return out
	}
	h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", IncludeAllMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(h.Messages); strings.Join(got, ",") != "top 2/t,top 1/t" {
		t.Errorf("history = %q, want the top-level posts newest first, with metadata", got)
	}
	if p := h.Messages[0].Metadata.EventPayload["id"]; p != "b" {
		t.Errorf("metadata payload id = %v, want b", p)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Oldest: top1})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(h.Messages); strings.Join(got, ",") != "top 2/" {
		t.Errorf("history after %s without metadata = %q", top1, got)
	}
	msgs, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: top1, IncludeAllMetadata: true, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(msgs); strings.Join(got, ",") != "reply 1/t" {
		t.Errorf("replies limited to 1 = %q, want the oldest reply", got)
	}

	denied := New(Config{NoHistoryScope: true})
	defer denied.Close()
	dapi := slack.New(denied.BotToken(), slack.OptionAPIURL(denied.APIURL()))
	if _, err := dapi.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"}); err == nil || err.Error() != "missing_scope" {
		t.Errorf("history without the scope gave %v", err)
	}
}

// conversations.info tells what kind a channel is; the events in it say
// the same (channel_type, is_ext_shared_channel) and name their workspace.
func TestConversations(t *testing.T) {
	s := New(Config{Conversations: []Conversation{
		{ID: "C1"}, {ID: "G1", Private: true}, {ID: "G2", MPIM: true, Private: true},
		{ID: "C2", ExtShared: true}, {ID: "C3", OrgShared: true}, {ID: "C4", Error: "channel_not_found"},
	}})
	defer s.Close()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()))
	ctx := t.Context()
	info := func(id string) *slack.Channel {
		t.Helper()
		c, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: id})
		if err != nil {
			t.Fatalf("conversations.info %s: %v", id, err)
		}
		return c
	}
	if c := info("C1"); c.IsPrivate || c.IsShared || c.IsMpIM || c.IsIM || !c.IsChannel {
		t.Errorf("public channel = %+v", c.GroupConversation.Conversation)
	}
	if c := info("G1"); !c.IsPrivate || c.IsMpIM || c.IsShared {
		t.Errorf("private channel = %+v", c.GroupConversation.Conversation)
	}
	if c := info("G2"); !c.IsMpIM || !c.IsPrivate {
		t.Errorf("group DM = %+v", c.GroupConversation.Conversation)
	}
	if c := info("C2"); !c.IsExtShared || !c.IsShared || c.IsOrgShared {
		t.Errorf("Connect channel = %+v", c.GroupConversation.Conversation)
	}
	if c := info("C3"); !c.IsOrgShared || !c.IsShared || c.IsExtShared {
		t.Errorf("org-shared channel = %+v", c.GroupConversation.Conversation)
	}
	if c := info("D7"); !c.IsIM {
		t.Errorf("a D channel not described = %+v", c.GroupConversation.Conversation)
	}
	if _, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C4"}); err == nil || err.Error() != "channel_not_found" {
		t.Errorf("failing channel gave %v", err)
	}
	s.SetConversation(Conversation{ID: "C1", Private: true})
	if c := info("C1"); !c.IsPrivate {
		t.Errorf("a channel made private = %+v", c.GroupConversation.Conversation)
	}
	s.SetConversation(Conversation{ID: "D8", IM: true, Members: []string{"UANA"}})
	if c := info("D8"); !c.IsIM || c.User != "UANA" {
		t.Errorf("the bot's DM with Ana = %+v", c.GroupConversation.Conversation)
	}

	// A DM between two people: the bot is not in it, and Slack says no
	// more of it than that.
	s.SetConversation(Conversation{ID: "DANABOB", Between: []string{"UANA", "UBOB"}})
	_, infoErr := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "DANABOB"})
	_, _, membersErr := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "DANABOB"})
	_, _, postErr := api.PostMessageContext(ctx, "DANABOB", slack.MsgOptionText("hi", false))
	_, ephemeralErr := api.PostEphemeralContext(ctx, "DANABOB", "UANA", slack.MsgOptionText("hi", false))
	for name, err := range map[string]error{"conversations.info": infoErr, "conversations.members": membersErr,
		"chat.postMessage": postErr, "chat.postEphemeral": ephemeralErr} {
		if err == nil || err.Error() != "channel_not_found" {
			t.Errorf("%s in a DM between two people: %v", name, err)
		}
	}
	if ds, err := s.InjectPost(Event{Channel: "DANABOB", User: "UANA", Text: "hi"}); len(ds) != 0 || err != nil {
		t.Errorf("a post in a DM between two people reached the app: %+v, %v", ds, err)
	}

	noScope := New(Config{NoConversationsScope: true})
	defer noScope.Close()
	api = slack.New(noScope.BotToken(), slack.OptionAPIURL(noScope.APIURL()))
	if _, err := api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: "C1"}); err == nil || err.Error() != "missing_scope" {
		t.Errorf("without the scope: %v", err)
	}

	type callback struct {
		TeamID         string `json:"team_id"`
		ExtShared      bool   `json:"is_ext_shared_channel"`
		Authorizations []struct {
			TeamID string `json:"team_id"`
		} `json:"authorizations"`
		Event struct {
			ChannelType string `json:"channel_type"`
			UserTeam    string `json:"user_team"`
		} `json:"event"`
	}
	var cb callback
	for _, c := range []struct {
		ev                Event
		team, channelType string
		extShared         bool
	}{
		{Event{Channel: "G2"}, DefaultTeamID, "mpim", false},
		{Event{Channel: "C2", Team: "T2", UserTeam: "TOTHER"}, "T2", "channel", true},
		{Event{Channel: "C1"}, DefaultTeamID, "group", false}, // made private above
	} {
		payload, err := s.callbackPayload("Ev1", c.ev)
		if err != nil {
			t.Fatal(err)
		}
		cb = callback{}
		if err := json.Unmarshal(payload, &cb); err != nil {
			t.Fatal(err)
		}
		if cb.TeamID != c.team || len(cb.Authorizations) != 1 || cb.Authorizations[0].TeamID != c.team ||
			cb.ExtShared != c.extShared || cb.Event.ChannelType != c.channelType || cb.Event.UserTeam != c.ev.UserTeam {
			t.Errorf("event in %s: payload %s", c.ev.Channel, payload)
		}
	}
}

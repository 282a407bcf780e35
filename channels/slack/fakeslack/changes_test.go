package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// readEnvelopes connects a bare Socket Mode client to s and returns a
// function reading the next events_api envelope's inner event, as
// slack-go's own parser reads it.
func readEnvelopes(t *testing.T, s *Server) func() slackevents.EventsAPIInnerEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
	_, wsURL, err := api.StartSocketModeContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if err := s.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return func() slackevents.EventsAPIInnerEvent {
		t.Helper()
		for {
			_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			var env struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := ws.ReadJSON(&env); err != nil {
				t.Fatal(err)
			}
			if env.Type != "events_api" {
				continue
			}
			ev, err := slackevents.ParseEvent(env.Payload, slackevents.OptionNoVerifyToken())
			if err != nil {
				t.Fatalf("slack-go cannot parse %s: %v", env.Payload, err)
			}
			return ev.InnerEvent
		}
	}
}

// Every change is announced as Slack announces it, in the shape slack-go
// parses into its typed events.
func TestChangesAreAnnounced(t *testing.T) {
	s := New(Config{Conversations: []Conversation{{ID: "C1", Members: []string{"U1"}}}})
	defer s.Close()
	next := readEnvelopes(t, s)
	must := func(ds []Delivery, err error) {
		t.Helper()
		if err != nil || len(ds) != 1 {
			t.Fatalf("%d deliveries, %v", len(ds), err)
		}
	}

	must(s.ConvertToPrivate("C1", "U1"))
	if m, ok := next().Data.(*slackevents.MessageEvent); !ok || m.SubType != "channel_convert_to_private" || m.ChannelType != "group" || m.Channel != "C1" || m.User != "U1" {
		t.Errorf("made private: %+v", m)
	}
	must(s.ConvertToPublic("C1", "U1"))
	if m, ok := next().Data.(*slackevents.MessageEvent); !ok || m.SubType != "channel_convert_to_public" || m.ChannelType != "channel" {
		t.Errorf("made public: %+v", m)
	}
	must(s.ShareChannel("C1", "TPARTNER"))
	if e, ok := next().Data.(*slackevents.ChannelSharedEvent); !ok || e.Channel != "C1" || e.ConnectedTeamID != "TPARTNER" {
		t.Errorf("shared: %+v", e)
	}
	must(s.UnshareChannel("C1", "TPARTNER"))
	if e, ok := next().Data.(*slackevents.ChannelUnsharedEvent); !ok || e.Channel != "C1" || e.PreviouslyConnectedTeamID != "TPARTNER" || e.IsExtShared {
		t.Errorf("unshared: %+v", e)
	}
	must(s.Join("C1", "UGUS", "U1"))
	if e, ok := next().Data.(*slackevents.MemberJoinedChannelEvent); !ok || e.Channel != "C1" || e.User != "UGUS" || e.Inviter != "U1" || e.ChannelType != "C" || e.Team != DefaultTeamID {
		t.Errorf("joined: %+v", e)
	}
	if ds, err := s.Join("C1", "UGUS", ""); err != nil || len(ds) != 0 {
		t.Errorf("joining twice sent %d events (%v)", len(ds), err)
	}
	must(s.Leave("C1", "UGUS"))
	if e, ok := next().Data.(*slackevents.MemberLeftChannelEvent); !ok || e.Channel != "C1" || e.User != "UGUS" {
		t.Errorf("left: %+v", e)
	}
	must(s.ChangeChannelID("C1", "C2"))
	if e, ok := next().Data.(*slackevents.ChannelIDChangedEvent); !ok || e.OldChannelID != "C1" || e.NewChannelID != "C2" {
		t.Errorf("new id: %+v", e)
	}
	if m := s.Members("C2"); !slices.Equal(m, []string{DefaultBotUserID, "U1"}) {
		t.Errorf("members under the new id: %v", m)
	}
}

// An app hears only what it subscribed to: with the events a manifest of
// app_mention and message.im lists, a channel's changes are never
// announced and a mention in a channel comes as app_mention alone.
func TestOnlySubscribedEventsAreSent(t *testing.T) {
	s := New(Config{Events: []string{"app_mention", "message.im"}, Conversations: []Conversation{{ID: "C1"}}})
	defer s.Close()
	next := readEnvelopes(t, s)
	for name, change := range map[string]func() ([]Delivery, error){
		"private": func() ([]Delivery, error) { return s.ConvertToPrivate("C1", "U1") },
		"public":  func() ([]Delivery, error) { return s.ConvertToPublic("C1", "U1") },
		"shared":  func() ([]Delivery, error) { return s.ShareChannel("C1", "T9") },
		"joined":  func() ([]Delivery, error) { return s.Join("C1", "U2", "") },
	} {
		if ds, err := change(); err != nil || len(ds) != 0 {
			t.Errorf("%s: %d events sent to an app not subscribed (%v)", name, len(ds), err)
		}
	}
	if !s.Subscribed("message.im") || s.Subscribed("message.channels") {
		t.Error("Subscribed does not follow Config.Events")
	}
	ds, err := s.InjectPost(Event{Channel: "C1", User: "U1", Text: "<@UBOT> hi"})
	if err != nil || len(ds) != 1 || ds[0].Event.Type != "app_mention" {
		t.Fatalf("a mention in a channel sent %+v (%v)", ds, err)
	}
	if ev := next(); ev.Type != "app_mention" {
		t.Errorf("sent %s", ev.Type)
	}
	if ds, _ := s.InjectPost(Event{Channel: "C1", User: "U1", Text: "no mention"}); len(ds) != 0 {
		t.Errorf("a plain channel post was sent: %+v", ds)
	}
	if ds, _ := s.InjectPost(Event{Channel: "D1", User: "U1", Text: "hi"}); len(ds) != 1 {
		t.Errorf("a DM sent %d events, want 1", len(ds))
	}
}

// users.info and users.list say who each person is; conversations.members
// lists a channel's members, its posters among them; both page as Slack
// does.
func TestPeopleAndMembers(t *testing.T) {
	s := New(Config{
		Users: map[string]string{"U1": "Ana"},
		People: []Person{
			{ID: "U2", Name: "Gus", Guest: true}, {ID: "U3", Name: "Sol", SingleChannelGuest: true},
			{ID: "U4", Name: "Eve", Team: "TOTHER"}, {ID: "U5", Name: "Str", Team: "TOTHER", Stranger: true},
			{ID: "U6", Name: "Kim", Teams: []string{"T2"}},
		},
		Conversations: []Conversation{{ID: "C1", Members: []string{"U1", "U2"}}, {ID: "C2", MembersError: "internal_error"}},
	})
	defer s.Close()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()))
	ctx := t.Context()
	info := func(id string) *slack.User {
		t.Helper()
		u, err := api.GetUserInfoContext(ctx, id)
		if err != nil {
			t.Fatalf("users.info %s: %v", id, err)
		}
		return u
	}
	if u := info("U1"); u.TeamID != DefaultTeamID || u.IsRestricted || u.IsStranger || u.Profile.DisplayName != "Ana" {
		t.Errorf("a member: %+v", u)
	}
	if u := info("U2"); !u.IsRestricted || u.IsUltraRestricted {
		t.Errorf("a guest: %+v", u)
	}
	if u := info("U3"); !u.IsRestricted || !u.IsUltraRestricted {
		t.Errorf("a single-channel guest: %+v", u)
	}
	if u := info("U4"); u.TeamID != "TOTHER" || u.IsStranger {
		t.Errorf("another organisation's person: %+v", u)
	}
	if u := info("U5"); !u.IsStranger {
		t.Errorf("a stranger: %+v", u)
	}
	if u := info("U6"); !slices.Equal(u.Enterprise.Teams, []string{DefaultTeamID, "T2"}) {
		t.Errorf("a person of two workspaces: %+v", u.Enterprise)
	}
	if _, err := api.GetUserInfoContext(ctx, "U9"); err == nil || err.Error() != "user_not_found" {
		t.Errorf("nobody: %v", err)
	}
	s.SetPerson(Person{ID: "U1", Name: "Ana", Guest: true})
	if u := info("U1"); !u.IsRestricted {
		t.Errorf("a member made a guest: %+v", u)
	}
	testMembers(t, s, api)
}

// testMembers checks users.list and conversations.members on s, which
// TestPeopleAndMembers set up.
func testMembers(t *testing.T, s *Server, api *slack.Client) {
	ctx := t.Context()

	users, err := api.GetUsersContext(ctx, slack.GetUsersOptionLimit(2))
	var ids []string
	for _, u := range users {
		ids = append(ids, u.ID)
	}
	if err != nil || !slices.Equal(ids, []string{"U1", "U2", "U3", "U6"}) {
		t.Errorf("users.list = %v, %v; want the workspace's people", ids, err)
	}
	if n := s.CallCount("users.list"); n != 2 {
		t.Errorf("users.list called %d times for 4 people 2 a page", n)
	}

	if _, err := s.Inject(Event{Channel: "C1", User: "U3", Text: "hi"}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("inject: %v", err)
	}
	var members []string
	cursor := ""
	for {
		page, next, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "C1", Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, page...)
		if cursor = next; cursor == "" {
			break
		}
	}
	if !slices.Equal(members, []string{DefaultBotUserID, "U1", "U2", "U3"}) {
		t.Errorf("conversations.members = %v (a poster is a member)", members)
	}
	if _, _, err := api.GetUsersInConversationContext(ctx, &slack.GetUsersInConversationParameters{ChannelID: "C2"}); err == nil || err.Error() != "internal_error" {
		t.Errorf("a failing listing: %v", err)
	}
}

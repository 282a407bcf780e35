package fakediscord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// These tests speak to the fake with plain HTTP and a raw websocket, so the
// protocol is checked without the client library the adapter uses.

func startFake(t *testing.T) *Server {
	t.Helper()
	s, err := Start(Config{HeartbeatInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.AddGuild("G1", Channel{ID: "C1", Type: ChannelText}, Channel{ID: "T1", ParentID: "C1", Type: ChannelPublicThread})
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func do(t *testing.T, s *Server, method, path, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func TestREST(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	const auth = "Bot fake-token"
	long := strings.Repeat("x", 2001)
	tests := []struct {
		name, method, path, auth, body string
		status                         int
		code                           float64 // Discord error code, 0 when none
	}{
		{"gateway", "GET", "/api/v9/gateway", auth, "", 200, 0},
		{"no token", "GET", "/api/v9/users/@me", "", "", 401, 0},
		{"token without Bot", "GET", "/api/v9/users/@me", "fake-token", "", 401, 0},
		{"me", "GET", "/api/v9/users/@me", auth, "", 200, 0},
		{"channel", "GET", "/api/v9/channels/T1", auth, "", 200, 0},
		{"unknown channel", "GET", "/api/v9/channels/X", auth, "", 404, 10003},
		{"post", "POST", "/api/v9/channels/C1/messages", auth, `{"content":"hi"}`, 200, 0},
		{"empty", "POST", "/api/v9/channels/C1/messages", auth, `{"content":" "}`, 400, 50006},
		{"too long", "POST", "/api/v9/channels/C1/messages", auth, `{"content":"` + long + `"}`, 400, 50035},
		{"unknown reference", "POST", "/api/v9/channels/C1/messages", auth, `{"content":"a","message_reference":{"message_id":"404"}}`, 400, 50035},
		{"unknown reference tolerated", "POST", "/api/v9/channels/C1/messages", auth, `{"content":"a","message_reference":{"message_id":"404","fail_if_not_exists":false}}`, 200, 0},
		{"post to unknown channel", "POST", "/api/v9/channels/X/messages", auth, `{"content":"hi"}`, 404, 10003},
		{"typing", "POST", "/api/v9/channels/C1/typing", auth, "", 204, 0},
		{"unknown route", "GET", "/api/v9/guilds/G1/members", auth, "", 404, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, s, tt.method, tt.path, tt.auth, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d (%v)", status, tt.status, body)
			}
			if tt.code != 0 && body["code"] != tt.code {
				t.Fatalf("code %v, want %v", body["code"], tt.code)
			}
		})
	}
	if n := len(s.Sent()); n != 2 {
		t.Fatalf("%d messages created, want 2", n)
	}
}

func TestRESTNonceAndFailures(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	const auth = "Bot fake-token"
	body := `{"content":"once","nonce":"n1","enforce_nonce":true}`

	s.Inject429(1500*time.Millisecond, true)
	req, _ := http.NewRequestWithContext(ctxT(t), "POST", s.URL()+"/api/v9/channels/C1/messages", strings.NewReader(body))
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("X-RateLimit-Global") != "true" || resp.Header.Get("Retry-After") != "2" ||
		resp.Header.Get("X-RateLimit-Reset-After") != "1.500" || !bytes.Contains(raw, []byte(`"retry_after":1.5`)) {
		t.Fatalf("429 answer: %d %v %s", resp.StatusCode, resp.Header, raw)
	}

	s.InjectSendError(500, true) // created, answer lost
	if status, _ := do(t, s, "POST", "/api/v9/channels/C1/messages", auth, body); status != 500 {
		t.Fatalf("status %d", status)
	}
	status, first := do(t, s, "POST", "/api/v9/channels/C1/messages", auth, body)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	if sent := s.Sent(); len(sent) != 1 || sent[0].ID != first["id"] {
		t.Fatalf("sent = %+v; the repeated nonce must return the first message %v", sent, first["id"])
	}
	if n := len(s.Attempts()); n != 3 {
		t.Fatalf("%d attempts recorded, want 3", n)
	}
}

// A nonce answers a repeat with its first message for a few minutes
// only; after that, the same nonce makes a new message.
func TestNonceWindow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, err := Start(Config{NonceWindow: 5 * time.Minute, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.AddChannel(Channel{ID: "C1", Type: ChannelDM})
	body := `{"content":"once","nonce":"n1","enforce_nonce":true}`
	post := func() string {
		status, m := do(t, s, "POST", "/api/v9/channels/C1/messages", "Bot fake-token", body)
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		return m["id"].(string)
	}
	first := post()
	mu.Lock()
	now = now.Add(4 * time.Minute)
	mu.Unlock()
	if again := post(); again != first {
		t.Fatalf("within the window a repeat made %s, want %s", again, first)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if later := post(); later == first {
		t.Fatal("past the window the nonce still answered with the first message")
	}
	if n := len(s.Sent()); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// wsClient is a minimal gateway client.
type wsClient struct {
	t  *testing.T
	ws *websocket.Conn
}

type frame struct {
	Op int             `json:"op"`
	S  int64           `json:"s"`
	T  string          `json:"t"`
	D  json.RawMessage `json:"d"`
}

func dial(t *testing.T, s *Server) *wsClient {
	t.Helper()
	url := "ws" + strings.TrimPrefix(s.URL(), "http") + "/gateway-ws/?v=9&encoding=json"
	ws, _, err := websocket.DefaultDialer.DialContext(ctxT(t), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &wsClient{t: t, ws: ws}
	hello := c.read()
	var d struct {
		HeartbeatInterval int `json:"heartbeat_interval"`
	}
	_ = json.Unmarshal(hello.D, &d)
	if hello.Op != 10 || d.HeartbeatInterval != 200 {
		t.Fatalf("first frame %+v, want HELLO with heartbeat_interval 200", hello)
	}
	return c
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(v); err != nil {
		c.t.Fatal(err)
	}
}

func (c *wsClient) read() frame {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f frame
	if err := c.ws.ReadJSON(&f); err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

// readUntil skips frames until one of type t (or op when t is "").
func (c *wsClient) readUntil(t string, op int) frame {
	c.t.Helper()
	for {
		f := c.read()
		if (t != "" && f.T == t) || (t == "" && f.Op == op) {
			return f
		}
	}
}

func identify(token string) map[string]any {
	return map[string]any{"op": 2, "d": map[string]any{"token": token, "intents": 37377,
		"properties": map[string]any{"os": "linux"}}}
}

func TestGatewayIdentifyHeartbeatResume(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	c := dial(t, s)
	c.send(identify("Bot fake-token"))
	ready := c.read()
	var r struct {
		SessionID string `json:"session_id"`
		User      struct {
			ID  string `json:"id"`
			Bot bool   `json:"bot"`
		} `json:"user"`
		ResumeURL string `json:"resume_gateway_url"`
	}
	_ = json.Unmarshal(ready.D, &r)
	if ready.T != "READY" || ready.S != 1 || r.SessionID == "" || r.User.ID != "BOT1" || !r.User.Bot || r.ResumeURL == "" {
		t.Fatalf("READY = %+v %s", ready, ready.D)
	}
	g := c.read()
	if g.T != "GUILD_CREATE" || g.S != 2 || !bytes.Contains(g.D, []byte(`"parent_id":"C1"`)) {
		t.Fatalf("GUILD_CREATE = %+v %s", g, g.D)
	}
	// The bot's managed role, and the bot's member holding it.
	type role struct {
		ID      string `json:"id"`
		Managed bool   `json:"managed"`
		Tags    struct {
			BotID string `json:"bot_id"`
		} `json:"tags"`
	}
	var guild struct {
		Roles   []role `json:"roles"`
		Members []struct {
			User  struct{ ID string } `json:"user"`
			Roles []string            `json:"roles"`
		} `json:"members"`
	}
	if err := json.Unmarshal(g.D, &guild); err != nil {
		t.Fatal(err)
	}
	botRole := slices.ContainsFunc(guild.Roles, func(r role) bool {
		return r.ID == s.BotRoleID("G1") && r.Managed && r.Tags.BotID == "BOT1"
	})
	if !botRole || len(guild.Members) != 1 || guild.Members[0].User.ID != "BOT1" || !slices.Contains(guild.Members[0].Roles, s.BotRoleID("G1")) {
		t.Fatalf("GUILD_CREATE lacks the bot's managed role and member: %s", g.D)
	}
	c.send(map[string]any{"op": 1, "d": 2})
	if ack := c.readUntil("", 11); ack.Op != 11 {
		t.Fatalf("ack = %+v", ack)
	}
	id, err := s.InjectMessage(Message{ChannelID: "C1", Author: User{ID: "U1"}, Content: "<@BOT1> hi"})
	if err != nil {
		t.Fatal(err)
	}
	m := c.readUntil("MESSAGE_CREATE", 0)
	if m.S != 3 || !bytes.Contains(m.D, []byte(`"id":"`+id+`"`)) || !bytes.Contains(m.D, []byte(`"mentions":[{`)) {
		t.Fatalf("MESSAGE_CREATE = %+v %s", m, m.D)
	}

	// Drop, miss a message, resume from seq 3: the missed one comes first,
	// then RESUMED.
	if err := s.DropConnection(); err != nil {
		t.Fatal(err)
	}
	missed, _ := s.InjectMessage(Message{ChannelID: "T1", Author: User{ID: "U1"}, Content: "while away"})
	c2 := dial(t, s)
	c2.send(map[string]any{"op": 6, "d": map[string]any{"token": "Bot fake-token", "session_id": r.SessionID, "seq": 3}})
	replay := c2.read()
	if replay.T != "MESSAGE_CREATE" || replay.S != 4 || !bytes.Contains(replay.D, []byte(missed)) {
		t.Fatalf("replay = %+v %s", replay, replay.D)
	}
	if resumed := c2.read(); resumed.T != "RESUMED" || resumed.S != 5 {
		t.Fatalf("RESUMED = %+v", resumed)
	}

	// A resume of an unknown session is refused with op 9; IDENTIFY works after.
	c3 := dial(t, s)
	c3.send(map[string]any{"op": 6, "d": map[string]any{"token": "Bot fake-token", "session_id": "nope", "seq": 1}})
	if inv := c3.read(); inv.Op != 9 || string(inv.D) != "false" {
		t.Fatalf("want op 9 d=false, got %+v", inv)
	}
	c3.send(identify("Bot fake-token"))
	if rd := c3.read(); rd.T != "READY" || rd.S != 1 {
		t.Fatalf("after op 9: %+v", rd)
	}
	st := s.Stats()
	if st.Identifies != 2 || st.Resumes != 1 || st.InvalidSessions != 1 || st.HeartbeatAcks < 1 || st.Intents != 37377 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestGatewayCloseCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cfg   Config
		first map[string]any
		code  int
	}{
		{"wrong token", Config{}, identify("Bot other"), 4004},
		{"disallowed intent", Config{DisallowMessageContent: true}, identify("Bot fake-token"), 4014},
		{"presence update before identify", Config{}, map[string]any{"op": 3, "d": nil}, 4003},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.HeartbeatInterval = 200 * time.Millisecond
			s, err := Start(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			c := dial(t, s)
			c.send(tt.first)
			_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _, err = c.ws.ReadMessage()
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != tt.code {
				t.Fatalf("read error %v, want close %d", err, tt.code)
			}
		})
	}
}

func TestMessageContentIntent(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	s.AddChannel(Channel{ID: "D1", Type: ChannelDM})
	c := dial(t, s)
	c.send(map[string]any{"op": 2, "d": map[string]any{"token": "Bot fake-token", "intents": IntentGuilds | IntentGuildMessages | IntentDirectMessages}})
	c.readUntil("GUILD_CREATE", 0)
	tests := []struct {
		channel, content string
		visible          bool
	}{
		{"C1", "plain guild chatter", false},
		{"C1", "<@BOT1> addressed", true},
		{"D1", "a direct message", true},
	}
	for _, tt := range tests {
		if _, err := s.InjectMessage(Message{ChannelID: tt.channel, Author: User{ID: "U1"}, Content: tt.content}); err != nil {
			t.Fatal(err)
		}
		m := c.readUntil("MESSAGE_CREATE", 0)
		if got := bytes.Contains(m.D, []byte(tt.content)); got != tt.visible {
			t.Fatalf("%q visible = %v, want %v", tt.content, got, tt.visible)
		}
	}
}

// Application commands, interactions and edits in Discord's wire format,
// with the refusals Discord gives.
func TestRESTCommandsAndInteractions(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	const auth = "Bot fake-token"
	cmds := `[{"name":"dream-log","type":1,"description":"the latest Dream commit","options":[{"type":3,"name":"sha","description":"a commit","autocomplete":true}]}]`
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
		code                     float64
	}{
		{"application", "GET", "/api/v9/oauth2/applications/@me", "", 200, 0},
		{"gateway bot", "GET", "/api/v9/gateway/bot", "", 200, 0},
		{"upper-case name", "PUT", "/api/v9/applications/BOT1/commands", `[{"name":"Dream","description":"x"}]`, 400, 50035},
		{"no description", "PUT", "/api/v9/applications/BOT1/commands", `[{"name":"dream"}]`, 400, 50035},
		{"another app", "PUT", "/api/v9/applications/APP2/commands", cmds, 403, 50001},
		{"register", "PUT", "/api/v9/applications/BOT1/commands", cmds, 200, 0},
		{"register in guild", "PUT", "/api/v9/applications/BOT1/guilds/G1/commands", cmds, 200, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := do(t, s, tt.method, tt.path, auth, tt.body)
			if status != tt.status || tt.code != 0 && body["code"] != tt.code {
				t.Fatalf("status %d %v, want %d code %v", status, body, tt.status, tt.code)
			}
		})
	}
	if c := s.Commands(""); len(c) != 1 || !c[0].Options[0].Autocomplete || s.CommandPuts() != 2 {
		t.Fatalf("commands %+v, puts %d", c, s.CommandPuts())
	}
	if _, err := s.InjectInteraction(Interaction{ChannelID: "C1", User: User{ID: "U1"}, Command: "help"}); err == nil {
		t.Fatal("an unregistered command was injected")
	}
	id, err := s.InjectInteraction(Interaction{ChannelID: "C1", User: User{ID: "U1"}, Command: "dream-log"})
	if err != nil {
		t.Fatal(err)
	}
	token := "itoken-" + id
	if st, _ := do(t, s, "PATCH", "/api/v9/webhooks/BOT1/"+token+"/messages/@original", "", `{"content":"early"}`); st != 400 {
		t.Fatalf("edit before the callback: %d", st)
	}
	if st, _ := do(t, s, "POST", "/api/v9/interactions/"+id+"/wrong/callback", "", `{"type":5}`); st != 404 {
		t.Fatalf("callback with a wrong token: %d", st)
	}
	if st, _ := do(t, s, "POST", "/api/v9/interactions/"+id+"/"+token+"/callback", "", `{"type":5}`); st != 204 {
		t.Fatalf("deferral: %d", st)
	}
	if st, body := do(t, s, "POST", "/api/v9/interactions/"+id+"/"+token+"/callback", "", `{"type":5}`); st != 400 || body["code"] != 40060.0 {
		t.Fatalf("second callback: %d %v", st, body)
	}
	if st, _ := do(t, s, "PATCH", "/api/v9/webhooks/BOT1/"+token+"/messages/@original", "", `{"content":"answer"}`); st != 200 {
		t.Fatalf("edit original: %d", st)
	}
	if st, _ := do(t, s, "POST", "/api/v9/webhooks/BOT1/"+token+"?wait=true", "", `{"content":"more"}`); st != 200 {
		t.Fatalf("follow-up: %d", st)
	}
	if f := s.Followups(); len(f) != 2 || !f[0].Original || f[1].Original || f[1].Content != "more" {
		t.Fatalf("follow-ups %+v", f)
	}

	// Edits: only the bot's own messages, within 2000 characters.
	_, posted := do(t, s, "POST", "/api/v9/channels/C1/messages", auth, `{"content":"draft"}`)
	mid, _ := posted["id"].(string)
	user, _ := s.InjectMessage(Message{ChannelID: "C1", Author: User{ID: "U1"}, Content: "mine"})
	if st, _ := do(t, s, "PATCH", "/api/v9/channels/C1/messages/"+mid, auth, `{"content":"final"}`); st != 200 {
		t.Fatalf("edit: %d", st)
	}
	if st, body := do(t, s, "PATCH", "/api/v9/channels/C1/messages/"+user, auth, `{"content":"x"}`); st != 403 || body["code"] != 50005.0 {
		t.Fatalf("edit of a user's message: %d %v", st, body)
	}
	// (No client asked for the Message Content intent, so the user's
	// message shows blank to the bot.)
	if got := s.Shown("C1", ""); !slices.Equal(got, []string{"final", ""}) {
		t.Fatalf("shown %q", got)
	}
}

// A channel's permission_overwrites travel as Discord sends them (ids and
// permission bits as strings), by REST and in GUILD_CREATE, whose channels
// carry no guild_id; a failing lookup answers its status; UpdateChannel
// dispatches CHANNEL_UPDATE.
func TestChannelPrivacy(t *testing.T) {
	t.Parallel()
	s := startFake(t)
	s.AddGuild("G1", Channel{ID: "CP", Type: ChannelText, Overwrites: []Overwrite{Hidden("G1")}})
	auth := "Bot " + s.Token()
	status, body := do(t, s, "GET", "/api/v9/channels/CP", auth, "")
	ows, _ := body["permission_overwrites"].([]any)
	if status != 200 || len(ows) != 1 || body["guild_id"] != "G1" {
		t.Fatalf("GET private channel = %d %v", status, body)
	}
	if ow := ows[0].(map[string]any); ow["id"] != "G1" || ow["type"] != float64(OverwriteRole) || ow["deny"] != "1024" || ow["allow"] != "0" {
		t.Errorf("overwrite = %v", ow)
	}
	if _, body := do(t, s, "GET", "/api/v9/channels/T1", auth, ""); body["permission_overwrites"] != nil {
		t.Errorf("a thread has overwrites of its own: %v", body)
	}
	s.FailChannelLookup("CP", http.StatusForbidden)
	if status, body := do(t, s, "GET", "/api/v9/channels/CP", auth, ""); status != 403 || body["code"] != float64(50001) {
		t.Errorf("failing lookup = %d %v", status, body)
	}
	s.FailChannelLookup("CP", 0)
	if status, _ := do(t, s, "GET", "/api/v9/channels/CP", auth, ""); status != 200 {
		t.Errorf("lookup after the failure ended = %d", status)
	}

	c := dial(t, s)
	c.send(identify("Bot fake-token"))
	c.readUntil("READY", 0)
	g := c.readUntil("GUILD_CREATE", 0)
	var guild struct {
		Channels []map[string]any `json:"channels"`
	}
	if err := json.Unmarshal(g.D, &guild); err != nil || len(guild.Channels) != 2 {
		t.Fatalf("GUILD_CREATE channels: %s (%v)", g.D, err)
	}
	for _, ch := range guild.Channels {
		if _, ok := ch["guild_id"]; ok {
			t.Errorf("GUILD_CREATE lists a channel with its guild_id: %v", ch)
		}
		if ch["id"] == "CP" && !bytes.Contains(mustJSON(ch["permission_overwrites"]), []byte(`"deny":"1024"`)) {
			t.Errorf("GUILD_CREATE lists CP without its overwrites: %v", ch)
		}
	}
	if everyone := fmt.Sprintf(`{"color":0,"hoist":false,"id":"G1","managed":false,"mentionable":false,"name":"@everyone","permissions":"%d"`, DefaultEveryone); !bytes.Contains(g.D, []byte(everyone)) {
		t.Errorf("GUILD_CREATE lacks @everyone with the default permissions: %s", g.D)
	}
	s.UpdateChannel(Channel{ID: "C1", GuildID: "G1", Type: ChannelText, Overwrites: []Overwrite{Hidden("G1")}})
	u := c.readUntil("CHANNEL_UPDATE", 0)
	if !bytes.Contains(u.D, []byte(`"guild_id":"G1"`)) || !bytes.Contains(u.D, []byte(`"deny":"1024"`)) {
		t.Errorf("CHANNEL_UPDATE = %s", u.D)
	}
	s.SetEveryone("G1", 0)
	r := c.readUntil("GUILD_ROLE_UPDATE", 0)
	if !bytes.Contains(r.D, []byte(`"guild_id":"G1"`)) || !bytes.Contains(r.D, []byte(`"permissions":"0"`)) {
		t.Errorf("GUILD_ROLE_UPDATE = %s", r.D)
	}
}

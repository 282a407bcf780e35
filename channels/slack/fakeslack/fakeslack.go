// Package fakeslack is a local stand-in for Slack that speaks the real wire
// protocol, for tests of the Slack adapter and end-to-end tests of the built
// binary: the Web API methods the adapter calls (auth.test,
// apps.connections.open, chat.postMessage with message metadata,
// conversations.history and conversations.replies over the accepted posts,
// users.info, reactions.add, reactions.remove) over HTTP, and Socket Mode over a
// websocket (hello, events_api envelopes, acks, PING frames, disconnect
// requests and hard drops).
//
// It binds 127.0.0.1:0, records every call, post, reaction and ack, and lets a
// test inject events, script a 429 or a 5xx on the next post (also one that
// posted before failing), drop the websocket and redeliver an envelope.
// Waits take a context; nothing sleeps.
//
// It imports nothing of ours, so any test (also outside channels/slack) can
// use it; it is not a test file so that cmd/dreamgate's end-to-end tests can
// point the binary at it.
package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Defaults used for zero fields of Config.
const (
	DefaultBotToken  = "xoxb-fake-bot-token"
	DefaultAppToken  = "xapp-fake-app-token"
	DefaultBotUserID = "UBOT"
	DefaultBotID     = "BBOT"
	DefaultTeamID    = "T0FAKE"
	DefaultAppID     = "A0FAKE"
	// MaxTextLen is the longest chat.postMessage text accepted (Slack
	// truncates at 40,000 characters; the fake refuses with msg_too_long so
	// a missing split is noticed).
	MaxTextLen = 40000
)

// ErrNotConnected is returned by Inject and friends when no Socket Mode
// client is connected.
var ErrNotConnected = errors.New("fakeslack: no socket mode connection")

// Config shapes a Server. Zero values take the defaults above; PingInterval
// defaults to 5 s (Slack's client gives up after 30 s without a PING).
type Config struct {
	BotToken, AppToken string
	BotUserID, BotID   string
	TeamID, AppID      string
	PingInterval       time.Duration
	// EchoPosts makes every accepted chat.postMessage come back over the
	// websocket as a message event from the bot, as real Slack does for
	// channels the app listens to.
	EchoPosts bool
	// NoHistoryScope makes conversations.history and conversations.replies
	// answer missing_scope, as for an app without the *:history scopes.
	NoHistoryScope bool
	// Users are the workspace's people for users.info: id -> display name
	// (the profile's display_name; real_name is "Real " + it). Others are
	// user_not_found.
	Users map[string]string
	// NoUsersScope makes users.info answer missing_scope, as for an app
	// without users:read.
	NoUsersScope bool
	// RejectMetadata makes chat.postMessage refuse any post that carries
	// message metadata (invalid_metadata_format).
	RejectMetadata bool
}

// Call is one Web API request.
type Call struct {
	Method string
	At     time.Time
	Status int    // HTTP status answered
	Error  string // Slack error code when ok=false
}

// Post is one accepted chat.postMessage.
type Post struct {
	Channel  string
	Text     string
	ThreadTS string
	Token    string
	TS       string // the ts the fake assigned
	At       time.Time
	// Metadata is the message metadata posted with it (nil when none), as
	// {"event_type": …, "event_payload": {…}}.
	Metadata map[string]any
}

// Reaction is one accepted reactions.add or reactions.remove.
type Reaction struct {
	Op        string // "add" or "remove"
	Name      string
	Channel   string
	Timestamp string
	At        time.Time
}

// Ack is one envelope acknowledgement read from the websocket.
type Ack struct {
	EnvelopeID string
	At         time.Time
}

// Event is an inner Events API event to inject. Type is "message" (default)
// or "app_mention". An empty TS gets a fresh one.
type Event struct {
	Type        string
	Channel     string
	ChannelType string // message events: "channel", "group", "im", "mpim"; "" = from the channel id
	User        string
	BotID       string
	Subtype     string
	Text        string
	TS          string
	ThreadTS    string
	Edited      bool
}

// Delivery is one events_api envelope sent to the client.
type Delivery struct {
	EnvelopeID string
	EventID    string
	Attempt    int // retry_attempt
	Event      Event
	At         time.Time
	payload    json.RawMessage
}

// Server is a running fake. Close it when done.
type Server struct {
	cfg Config
	srv *httptest.Server

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every recorded change
	closed      bool
	calls       []Call
	posts       []Post
	reactions   []Reaction
	reactionSet map[string]bool
	acks        []Ack
	deliveries  []Delivery
	tickets     map[string]bool
	conns       []*conn
	current     *conn
	hellos      int
	seq         int
	tsBase      int64
	tsSeq       int
	postScript  []scripted
	reactHold   chan struct{} // while non-nil, reactions.* wait for it to close
	done        chan struct{} // closed by Close: held requests give up
}

// scripted is a canned failure for the next chat.postMessage.
type scripted struct {
	status     int
	retryAfter time.Duration
	afterPost  bool // accept the post, then answer the failure
}

// conn is one Socket Mode websocket.
type conn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex // gorilla allows one writer at a time
	done chan struct{}
	once sync.Once
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.NetConn().Close()
	})
}

func (c *conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(b)
}

func (c *conn) writeLocked(b []byte) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return c.ws.WriteMessage(websocket.TextMessage, b)
}

// New starts a fake on 127.0.0.1:0.
func New(cfg Config) *Server {
	cfg = withDefaults(cfg)
	s := &Server{
		cfg:         cfg,
		changed:     make(chan struct{}),
		reactionSet: make(map[string]bool),
		tickets:     make(map[string]bool),
		done:        make(chan struct{}),
		tsBase:      time.Now().Unix(),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/link/", s.serveLink)
	s.srv = httptest.NewServer(mux)
	return s
}

func withDefaults(c Config) Config {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&c.BotToken, DefaultBotToken)
	def(&c.AppToken, DefaultAppToken)
	def(&c.BotUserID, DefaultBotUserID)
	def(&c.BotID, DefaultBotID)
	def(&c.TeamID, DefaultTeamID)
	def(&c.AppID, DefaultAppID)
	if c.PingInterval <= 0 {
		c.PingInterval = 5 * time.Second
	}
	return c
}

// Close drops every websocket and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	conns := append([]*conn(nil), s.conns...)
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.srv.Close()
}

// URL is the server's base URL (http://127.0.0.1:PORT).
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the Web API base with its trailing slash, for slack.OptionAPIURL.
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// BotToken, AppToken and BotUserID return the credentials the fake accepts
// and the bot identity it reports.
func (s *Server) BotToken() string  { return s.cfg.BotToken }
func (s *Server) AppToken() string  { return s.cfg.AppToken }
func (s *Server) BotUserID() string { return s.cfg.BotUserID }
func (s *Server) BotID() string     { return s.cfg.BotID }

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor blocks until cond (called with s.mu held) is true or ctx ends.
func (s *Server) waitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		s.mu.Lock()
		ok := cond()
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakeslack: waiting for %s: %w", what, ctx.Err())
		}
	}
}

// nextTSLocked returns a fresh, increasing Slack timestamp.
func (s *Server) nextTSLocked() string {
	s.tsSeq++
	return fmt.Sprintf("%d.%06d", s.tsBase+int64(s.tsSeq/1000000), s.tsSeq%1000000)
}

func (s *Server) nextIDLocked(prefix string) string {
	s.seq++
	return prefix + strconv.Itoa(s.seq)
}

// --- recorded state ---

// Calls returns every Web API request so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount counts Web API requests of one method.
func (s *Server) CallCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callCountLocked(method)
}

func (s *Server) callCountLocked(method string) int {
	n := 0
	for _, c := range s.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Posts returns the accepted chat.postMessage calls in arrival order.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

// Reactions returns the accepted reaction changes in arrival order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// Acks returns the envelope acks read so far.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ack(nil), s.acks...)
}

// Deliveries returns every envelope sent, with the time it was written.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

// Acked reports whether the envelope was acked.
func (s *Server) Acked(envelopeID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ackedLocked(envelopeID)
}

func (s *Server) ackedLocked(id string) bool {
	for _, a := range s.acks {
		if a.EnvelopeID == id {
			return true
		}
	}
	return false
}

// Unacked lists the envelope ids sent but not acked.
func (s *Server) Unacked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.deliveries {
		if !s.ackedLocked(d.EnvelopeID) {
			out = append(out, d.EnvelopeID)
		}
	}
	return out
}

// Connections counts websocket connections that got their hello.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hellos
}

// WaitPosts waits until at least n posts were accepted and returns them all.
func (s *Server) WaitPosts(ctx context.Context, n int) ([]Post, error) {
	err := s.waitFor(ctx, fmt.Sprintf("%d posts", n), func() bool { return len(s.posts) >= n })
	return s.Posts(), err
}

// WaitReactions waits until at least n reaction changes were accepted.
func (s *Server) WaitReactions(ctx context.Context, n int) ([]Reaction, error) {
	err := s.waitFor(ctx, fmt.Sprintf("%d reactions", n), func() bool { return len(s.reactions) >= n })
	return s.Reactions(), err
}

// WaitAcked waits until every listed envelope was acked.
func (s *Server) WaitAcked(ctx context.Context, envelopeIDs ...string) error {
	return s.waitFor(ctx, "acks", func() bool {
		for _, id := range envelopeIDs {
			if !s.ackedLocked(id) {
				return false
			}
		}
		return true
	})
}

// WaitConnections waits until n websocket connections got their hello (the
// first connection is 1, the first reconnection 2).
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d connections", n), func() bool { return s.hellos >= n && s.current != nil })
}

// WaitCalls waits until method was called at least n times.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d %s calls", n, method), func() bool { return s.callCountLocked(method) >= n })
}

// --- scripting ---

// RateLimitNextPost answers the next chat.postMessage with HTTP 429 and
// Retry-After (whole seconds, at least 1). Calls queue up.
func (s *Server) RateLimitNextPost(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.postScript = append(s.postScript, scripted{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// FailNextPost answers the next chat.postMessage with the HTTP status (e.g.
// 500), without accepting it. Calls queue up.
func (s *Server) FailNextPost(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.postScript = append(s.postScript, scripted{status: status})
}

// FailNextPostAfterPosting accepts the next chat.postMessage (it is in
// Posts and in the conversation's history) but answers it with the HTTP
// status, as when Slack posted and its answer was lost or failed. Calls
// queue up with FailNextPost's.
func (s *Server) FailNextPostAfterPosting(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.postScript = append(s.postScript, scripted{status: status, afterPost: true})
}

// HoldReactions makes reactions.add and reactions.remove wait, unanswered,
// until release is called (as a slow Slack would); release is safe to call
// more than once.
func (s *Server) HoldReactions() (release func()) {
	hold := make(chan struct{})
	s.mu.Lock()
	s.reactHold = hold
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.reactHold == hold {
				s.reactHold = nil
			}
			s.mu.Unlock()
			close(hold)
		})
	}
}

// --- socket mode ---

// Inject sends ev as one events_api envelope on the current connection.
func (s *Server) Inject(ev Event) (Delivery, error) {
	s.mu.Lock()
	if ev.TS == "" {
		ev.TS = s.nextTSLocked()
	}
	d := Delivery{EnvelopeID: s.nextIDLocked("env-"), EventID: s.nextIDLocked("Ev"), Event: ev}
	s.mu.Unlock()
	payload, err := s.callbackPayload(d.EventID, ev)
	if err != nil {
		return Delivery{}, err
	}
	d.payload = payload
	return s.send(d)
}

// InjectPost sends what Slack sends for one user post in a channel the app
// listens to: a message event and, when the text mentions the bot, an
// app_mention event for the same ts, as two envelopes.
func (s *Server) InjectPost(ev Event) ([]Delivery, error) {
	if ev.TS == "" {
		s.mu.Lock()
		ev.TS = s.nextTSLocked()
		s.mu.Unlock()
	}
	msg := ev
	msg.Type = "message"
	d1, err := s.Inject(msg)
	if err != nil {
		return nil, err
	}
	out := []Delivery{d1}
	if strings.Contains(ev.Text, "<@"+s.cfg.BotUserID+">") {
		m := ev
		m.Type = "app_mention"
		d2, err := s.Inject(m)
		if err != nil {
			return out, err
		}
		out = append(out, d2)
	}
	return out, nil
}

// Retry redelivers d's event as Slack does when an ack is late: a new
// envelope with the same event id and retry_attempt+1.
func (s *Server) Retry(d Delivery) (Delivery, error) {
	s.mu.Lock()
	r := Delivery{EnvelopeID: s.nextIDLocked("env-"), EventID: d.EventID, Attempt: d.Attempt + 1, Event: d.Event, payload: d.payload}
	s.mu.Unlock()
	return s.send(r)
}

// SendEnvelope sends an envelope of another type (e.g. "slash_commands")
// with the given payload and returns its envelope id.
func (s *Server) SendEnvelope(typ string, payload any) (string, error) {
	s.mu.Lock()
	id := s.nextIDLocked("env-")
	s.mu.Unlock()
	b, err := json.Marshal(map[string]any{"type": typ, "envelope_id": id, "payload": payload, "accepts_response_payload": false})
	if err != nil {
		return "", err
	}
	c := s.currentConn()
	if c == nil {
		return "", ErrNotConnected
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s.mu.Lock()
	s.deliveries = append(s.deliveries, Delivery{EnvelopeID: id, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	return id, c.writeLocked(b)
}

// RequestDisconnect sends a disconnect envelope (Slack does this before
// rotating a connection); the client is expected to reconnect.
func (s *Server) RequestDisconnect(reason string) error {
	c := s.currentConn()
	if c == nil {
		return ErrNotConnected
	}
	b, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fakeslack"}})
	return c.write(b)
}

// DropConnection closes the current websocket's TCP connection without a
// close frame, like a network failure.
func (s *Server) DropConnection() error {
	s.mu.Lock()
	c := s.current
	s.current = nil
	s.notifyLocked()
	s.mu.Unlock()
	if c == nil {
		return ErrNotConnected
	}
	c.close()
	return nil
}

func (s *Server) currentConn() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

func (s *Server) send(d Delivery) (Delivery, error) {
	env := map[string]any{
		"type":                     "events_api",
		"envelope_id":              d.EnvelopeID,
		"payload":                  d.payload,
		"accepts_response_payload": false,
		"retry_attempt":            d.Attempt,
		"retry_reason":             "",
	}
	if d.Attempt > 0 {
		env["retry_reason"] = "timeout"
	}
	b, err := json.Marshal(env)
	if err != nil {
		return Delivery{}, err
	}
	c := s.currentConn()
	if c == nil {
		return Delivery{}, ErrNotConnected
	}
	// Record under the write lock, so Deliveries lists envelopes in the
	// order they went on the wire.
	c.wmu.Lock()
	defer c.wmu.Unlock()
	d.At = time.Now()
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.notifyLocked()
	s.mu.Unlock()
	if err := c.writeLocked(b); err != nil {
		return d, fmt.Errorf("fakeslack: write envelope: %w", err)
	}
	return d, nil
}

func (s *Server) callbackPayload(eventID string, ev Event) (json.RawMessage, error) {
	typ := ev.Type
	if typ == "" {
		typ = "message"
	}
	inner := map[string]any{
		"type":     typ,
		"user":     ev.User,
		"text":     ev.Text,
		"ts":       ev.TS,
		"channel":  ev.Channel,
		"event_ts": ev.TS,
	}
	if ev.ThreadTS != "" {
		inner["thread_ts"] = ev.ThreadTS
	}
	if ev.BotID != "" {
		inner["bot_id"] = ev.BotID
	}
	if typ == "message" {
		ct := ev.ChannelType
		if ct == "" {
			ct = channelType(ev.Channel)
		}
		inner["channel_type"] = ct
		if ev.Subtype != "" {
			inner["subtype"] = ev.Subtype
		}
	}
	if ev.Edited {
		inner["edited"] = map[string]string{"user": ev.User, "ts": ev.TS}
	}
	return json.Marshal(map[string]any{
		"token":      "fake-verification-token",
		"team_id":    s.cfg.TeamID,
		"api_app_id": s.cfg.AppID,
		"type":       "event_callback",
		"event_id":   eventID,
		"event_time": time.Now().Unix(),
		"event":      inner,
	})
}

// channelType guesses Slack's channel_type from an id prefix.
func channelType(id string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "im"
	case strings.HasPrefix(id, "G"):
		return "group"
	default:
		return "channel"
	}
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com, which never matches a
	// loopback host.
	CheckOrigin: func(*http.Request) bool { return true },
}

func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket] && !s.closed
	delete(s.tickets, ticket)
	s.mu.Unlock()
	if !valid {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return
	}
	s.conns = append(s.conns, c)
	s.mu.Unlock()

	hello, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": 1,
		"debug_info":      map[string]any{"host": "fakeslack", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": s.cfg.AppID},
	})
	if err := c.write(hello); err != nil {
		c.close()
		return
	}
	s.mu.Lock()
	s.hellos++
	s.current = c
	s.notifyLocked()
	s.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { s.pingLoop(c) })
	s.readLoop(c)
	c.close()
	wg.Wait()
	s.mu.Lock()
	if s.current == c {
		s.current = nil
		s.notifyLocked()
	}
	s.mu.Unlock()
}

func (s *Server) pingLoop(c *conn) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for n := 0; ; n++ {
		if err := c.ws.WriteControl(websocket.PingMessage, []byte("ping-"+strconv.Itoa(n)), time.Now().Add(5*time.Second)); err != nil {
			return
		}
		select {
		case <-c.done:
			return
		case <-t.C:
		}
	}
}

func (s *Server) readLoop(c *conn) {
	for {
		_, b, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(b, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		s.acks = append(s.acks, Ack{EnvelopeID: ack.EnvelopeID, At: time.Now()})
		s.notifyLocked()
		s.mu.Unlock()
	}
}

// --- Web API ---

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if err := r.ParseForm(); err != nil {
		s.answer(w, method, http.StatusBadRequest, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	token := r.PostForm.Get("token")
	if token == "" {
		token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	switch method {
	case "auth.test":
		if token != s.cfg.BotToken {
			s.fail(w, method, "invalid_auth")
			return
		}
		s.answer(w, method, http.StatusOK, map[string]any{
			"ok": true, "url": "https://fake.slack.test/", "team": "Fake", "user": "dreambot",
			"team_id": s.cfg.TeamID, "user_id": s.cfg.BotUserID, "bot_id": s.cfg.BotID,
		})
	case "apps.connections.open":
		if token != s.cfg.AppToken {
			s.fail(w, method, "invalid_auth")
			return
		}
		s.mu.Lock()
		ticket := s.nextIDLocked("ticket-")
		s.tickets[ticket] = true
		s.mu.Unlock()
		u := "ws://" + r.Host + "/link/?ticket=" + ticket + "&app_id=" + s.cfg.AppID
		s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "url": u})
	case "chat.postMessage":
		s.postMessage(w, r, token)
	case "conversations.history", "conversations.replies":
		if s.botMay(w, method, token, !s.cfg.NoHistoryScope) {
			s.history(w, r, method)
		}
	case "users.info":
		if s.botMay(w, method, token, !s.cfg.NoUsersScope) {
			s.userInfo(w, r, method)
		}
	case "reactions.add", "reactions.remove":
		s.react(w, r, method, token)
	default:
		s.fail(w, method, "unknown_method")
	}
}

func (s *Server) answer(w http.ResponseWriter, method string, status int, body map[string]any) {
	call := Call{Method: method, At: time.Now(), Status: status}
	if ok, _ := body["ok"].(bool); !ok {
		call.Error, _ = body["error"].(string)
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.notifyLocked()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) fail(w http.ResponseWriter, method, code string) {
	s.answer(w, method, http.StatusOK, map[string]any{"ok": false, "error": code})
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, token string) {
	const method = "chat.postMessage"
	s.mu.Lock()
	var sc *scripted
	if len(s.postScript) > 0 {
		first := s.postScript[0]
		sc = &first
		s.postScript = s.postScript[1:]
	}
	s.mu.Unlock()
	if sc != nil && !sc.afterPost {
		if sc.status == http.StatusTooManyRequests {
			secs := max(1, int((sc.retryAfter+time.Second-1)/time.Second))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
		s.answer(w, method, sc.status, map[string]any{"ok": false, "error": http.StatusText(sc.status)})
		return
	}
	if token != s.cfg.BotToken {
		s.fail(w, method, "invalid_auth")
		return
	}
	channel, text, thread := r.PostForm.Get("channel"), r.PostForm.Get("text"), r.PostForm.Get("thread_ts")
	switch {
	case channel == "":
		s.fail(w, method, "channel_not_found")
		return
	case strings.TrimSpace(text) == "":
		s.fail(w, method, "no_text")
		return
	case len([]rune(text)) > MaxTextLen:
		s.fail(w, method, "msg_too_long")
		return
	}
	var meta map[string]any
	if raw := r.PostForm.Get("metadata"); raw != "" {
		if s.cfg.RejectMetadata {
			s.fail(w, method, "invalid_metadata_format")
			return
		}
		if err := json.Unmarshal([]byte(raw), &meta); err != nil {
			s.fail(w, method, "invalid_metadata_format")
			return
		}
	}
	s.mu.Lock()
	p := Post{Channel: channel, Text: text, ThreadTS: thread, Token: token, TS: s.nextTSLocked(), At: time.Now(), Metadata: meta}
	s.mu.Unlock()
	if s.cfg.EchoPosts {
		// Before the post is recorded and answered, so once a test sees the
		// post the echo is on the wire. Best effort, as for Slack: no
		// connection, no echo.
		_, _ = s.Inject(Event{Type: "message", Channel: channel, User: s.cfg.BotUserID, BotID: s.cfg.BotID, Text: text, TS: p.TS, ThreadTS: thread})
	}
	s.mu.Lock()
	s.posts = append(s.posts, p)
	s.mu.Unlock()
	if sc != nil {
		s.answer(w, method, sc.status, map[string]any{"ok": false, "error": http.StatusText(sc.status)})
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "channel": channel, "ts": p.TS, "message": s.postJSON(p, false)})
}

// botMay answers invalid_auth for a call without the bot token and
// missing_scope for one whose scope the app lacks; it reports whether the
// call may go on.
func (s *Server) botMay(w http.ResponseWriter, method, token string, scoped bool) bool {
	switch {
	case token != s.cfg.BotToken:
		s.fail(w, method, "invalid_auth")
	case !scoped:
		s.fail(w, method, "missing_scope")
	default:
		return true
	}
	return false
}

// userInfo answers users.info from Config.Users.
func (s *Server) userInfo(w http.ResponseWriter, r *http.Request, method string) {
	id := r.PostForm.Get("user")
	name, ok := s.cfg.Users[id]
	if !ok {
		s.fail(w, method, "user_not_found")
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "user": map[string]any{
		"id": id, "team_id": s.cfg.TeamID, "name": strings.ToLower(name), "real_name": "Real " + name,
		"profile": map[string]any{"display_name": name, "real_name": "Real " + name},
	}})
}

// postJSON renders a post as the Web API's message object.
func (s *Server) postJSON(p Post, withMetadata bool) map[string]any {
	msg := map[string]any{"type": "message", "user": s.cfg.BotUserID, "bot_id": s.cfg.BotID, "text": p.Text, "ts": p.TS}
	if p.ThreadTS != "" {
		msg["thread_ts"] = p.ThreadTS
	}
	if withMetadata && p.Metadata != nil {
		msg["metadata"] = p.Metadata
	}
	return msg
}

// history answers conversations.history (the channel's top-level posts,
// newest first) and conversations.replies (the posts in the thread of ts,
// oldest first), from the accepted posts newer than oldest, at most limit
// of them (default 100). Metadata is included only with
// include_all_metadata=1, as Slack does.
func (s *Server) history(w http.ResponseWriter, r *http.Request, method string) {
	f := r.PostForm
	channel, thread := f.Get("channel"), f.Get("ts")
	if channel == "" || (method == "conversations.replies" && thread == "") {
		s.fail(w, method, "invalid_arguments")
		return
	}
	oldest := tsMicros(f.Get("oldest"))
	limit, _ := strconv.Atoi(f.Get("limit"))
	if limit <= 0 {
		limit = 100
	}
	withMeta := f.Get("include_all_metadata") == "1"
	s.mu.Lock()
	var msgs []map[string]any
	for _, p := range s.posts {
		if p.Channel != channel || tsMicros(p.TS) <= oldest || p.ThreadTS != thread {
			continue
		}
		msgs = append(msgs, s.postJSON(p, withMeta))
	}
	s.mu.Unlock()
	if method == "conversations.history" {
		slices.Reverse(msgs)
	}
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true, "messages": msgs, "has_more": more})
}

func (s *Server) react(w http.ResponseWriter, r *http.Request, method, token string) {
	s.mu.Lock()
	hold := s.reactHold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		case <-s.done:
			http.Error(w, "server closing", http.StatusServiceUnavailable)
			return
		}
	}
	if token != s.cfg.BotToken {
		s.fail(w, method, "invalid_auth")
		return
	}
	name, channel, ts := r.PostForm.Get("name"), r.PostForm.Get("channel"), r.PostForm.Get("timestamp")
	if name == "" || channel == "" || ts == "" {
		s.fail(w, method, "invalid_arguments")
		return
	}
	key := channel + "|" + ts + "|" + name
	s.mu.Lock()
	op := "add"
	if method == "reactions.remove" {
		op = "remove"
	}
	var code string
	switch {
	case op == "add" && s.reactionSet[key]:
		code = "already_reacted"
	case op == "remove" && !s.reactionSet[key]:
		code = "no_reaction"
	default:
		s.reactionSet[key] = op == "add"
		s.reactions = append(s.reactions, Reaction{Op: op, Name: name, Channel: channel, Timestamp: ts, At: time.Now()})
	}
	s.mu.Unlock()
	if code != "" {
		s.fail(w, method, code)
		return
	}
	s.answer(w, method, http.StatusOK, map[string]any{"ok": true})
}

// Addr returns the listener address (host:port), e.g. for logs.
func (s *Server) Addr() net.Addr { return s.srv.Listener.Addr() }

// tsMicros reads a Slack ts ("1712345678.000123") exactly, as microseconds;
// 0 for "" or anything else (a float64 would round the last digits).
func tsMicros(ts string) int64 {
	sec, frac, ok := strings.Cut(ts, ".")
	if !ok || len(frac) != 6 {
		return 0
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return a*1_000_000 + b
}

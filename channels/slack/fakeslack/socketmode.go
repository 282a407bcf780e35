package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Socket Mode: the websocket apps.connections.open points at (/link/),
// hello, events_api envelopes and their acks, PING frames, disconnect
// requests and hard drops.

// conn is one Socket Mode websocket.
type conn struct {
	ws   *websocket.Conn
	n    int        // its number: the first hello is 1
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

// Inject sends ev as one events_api envelope on one of the live
// connections, chosen at random as Slack chooses among an app's Socket
// Mode connections (one connection: that one).
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
// is in (nothing for a DM between two people): a message event (to an app subscribed to message.channels,
// message.groups, message.im or message.mpim, by the channel's kind) and,
// when the text mentions the bot, an app_mention event for the same ts
// (to an app subscribed to app_mention), as two envelopes.
func (s *Server) InjectPost(ev Event) ([]Delivery, error) {
	if ev.TS == "" {
		s.mu.Lock()
		ev.TS = s.nextTSLocked()
		s.mu.Unlock()
	}
	s.mu.Lock()
	conv := s.conversationLocked(ev.Channel)
	s.mu.Unlock()
	if conv.botOut() {
		return nil, nil // Slack tells an app nothing of a DM it is not in
	}
	ct := ev.ChannelType
	if ct == "" {
		ct = conv.channelType()
	}
	var out []Delivery
	if s.Subscribed(messageSubscription(ct)) {
		msg := ev
		msg.Type = "message"
		d, err := s.Inject(msg)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if s.mentionsBot(ev.Text) && s.Subscribed("app_mention") {
		m := ev
		m.Type = "app_mention"
		d, err := s.Inject(m)
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// Retry redelivers d's event as Slack does when an ack is late: a new
// envelope with the same event id and retry_attempt+1, to a live
// connection chosen at random.
func (s *Server) Retry(d Delivery) (Delivery, error) {
	s.mu.Lock()
	r := Delivery{EnvelopeID: s.nextIDLocked("env-"), EventID: d.EventID, Attempt: d.Attempt + 1, Event: d.Event, payload: d.payload}
	s.mu.Unlock()
	return s.send(r)
}

// SendEnvelope sends an envelope of another type (e.g. "slash_commands")
// with the given payload and returns its envelope id.
func (s *Server) SendEnvelope(typ string, payload any) (string, error) {
	return s.sendEnvelope(typ, payload, false)
}

func (s *Server) sendEnvelope(typ string, payload any, acceptsResponse bool) (string, error) {
	s.mu.Lock()
	id := s.nextIDLocked("env-")
	s.mu.Unlock()
	b, err := json.Marshal(map[string]any{"type": typ, "envelope_id": id, "payload": payload, "accepts_response_payload": acceptsResponse})
	if err != nil {
		return "", err
	}
	c := s.pickConn()
	if c == nil {
		return "", ErrNotConnected
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s.mu.Lock()
	s.deliveries = append(s.deliveries, Delivery{EnvelopeID: id, At: time.Now(), Conn: c.n})
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

// DropConnection closes the current (newest) websocket's TCP connection
// without a close frame, like a network failure.
func (s *Server) DropConnection() error {
	s.mu.Lock()
	c := s.current
	s.dropLocked(c)
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

// pickConn chooses the connection an envelope goes to: one of the live
// ones at random, as Slack spreads an app's events over its connections.
func (s *Server) pickConn() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.live) == 0 {
		return nil
	}
	return s.live[rand.IntN(len(s.live))]
}

// dropLocked takes c out of the live connections; the newest one left
// becomes current. s.mu must be held.
func (s *Server) dropLocked(c *conn) {
	if c == nil {
		return
	}
	s.live = slices.DeleteFunc(s.live, func(x *conn) bool { return x == c })
	if s.current == c {
		s.current = nil
		if n := len(s.live); n > 0 {
			s.current = s.live[n-1]
		}
	}
	s.notifyLocked()
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
	for {
		c := s.pickConn()
		if c == nil {
			return Delivery{}, ErrNotConnected
		}
		d, err := s.sendOn(c, d, b)
		if err == nil {
			s.retryLater(d)
			return d, nil
		}
		// A connection that cannot be written to is gone: Slack sends
		// to another one.
		s.mu.Lock()
		s.dropLocked(c)
		s.mu.Unlock()
		c.close()
		if len(s.liveConns()) == 0 {
			return d, fmt.Errorf("fakeslack: write envelope: %w", err)
		}
	}
}

// sendOn writes envelope b of d on c, recording it under the write lock,
// so Deliveries lists envelopes in the order they went on the wire.
func (s *Server) sendOn(c *conn, d Delivery, b []byte) (Delivery, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	d.At, d.Conn = time.Now(), c.n
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.notifyLocked()
	s.mu.Unlock()
	return d, c.writeLocked(b)
}

func (s *Server) liveConns() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*conn(nil), s.live...)
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
	if ev.UserTeam != "" {
		inner["user_team"] = ev.UserTeam
	}
	s.mu.Lock()
	conv := s.conversationLocked(ev.Channel)
	if ev.User != "" && ev.BotID == "" && ev.Channel != "" {
		// Only members post: a person heard in a channel is one.
		s.addMemberLocked(ev.Channel, ev.User)
	}
	s.mu.Unlock()
	if typ == "message" {
		ct := ev.ChannelType
		if ct == "" {
			ct = conv.channelType()
		}
		inner["channel_type"] = ct
		if ev.Subtype != "" {
			inner["subtype"] = ev.Subtype
		}
	}
	if len(ev.Files) > 0 {
		files := make([]map[string]any, 0, len(ev.Files))
		s.mu.Lock()
		s.registerFilesLocked(ev.Files)
		s.mu.Unlock()
		for _, f := range ev.Files {
			files = append(files, s.fileJSON(f, f.Hidden))
		}
		inner["files"] = files
		inner["upload"] = false
	}
	if ev.Edited {
		inner["edited"] = map[string]string{"user": ev.User, "ts": ev.TS}
	}
	return s.wrapCallback(eventID, ev.Team, inner, conv.ExtShared)
}

// wrapCallback wraps an inner event in the event_callback Slack sends for
// the workspace team ("" = Config.TeamID).
func (s *Server) wrapCallback(eventID, team string, inner map[string]any, extShared bool) (json.RawMessage, error) {
	if team == "" {
		team = s.cfg.TeamID
	}
	return json.Marshal(map[string]any{
		"token":      "fake-verification-token",
		"team_id":    team,
		"api_app_id": s.cfg.AppID,
		"type":       "event_callback",
		"event_id":   eventID,
		"event_time": time.Now().Unix(),
		"event":      inner,
		// The installation the event was delivered for: the bot in that
		// workspace.
		"authorizations": []map[string]any{{
			"enterprise_id": nil, "team_id": team, "user_id": s.cfg.BotUserID,
			"is_bot": true, "is_enterprise_install": false,
		}},
		"is_ext_shared_channel": extShared,
		"event_context":         "4-fake-" + eventID,
	})
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
	c.n = len(s.conns)
	live := len(s.live) + 1
	s.mu.Unlock()

	hello, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": live,
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
	s.live = append(s.live, c)
	s.notifyLocked()
	s.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { s.pingLoop(c) })
	s.readLoop(c)
	c.close()
	wg.Wait()
	s.mu.Lock()
	s.dropLocked(c)
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

// MaxRetries is how many times an unacknowledged event is sent again
// (Config.RetryUnacked), as Slack retries one three times.
const MaxRetries = 3

// retryLater sends d's event again after Config.RetryUnacked unless its
// envelope was acked by then, as Slack retries an event a connection did
// not acknowledge (the process behind it may have died).
func (s *Server) retryLater(d Delivery) {
	wait := s.cfg.RetryUnacked
	if wait <= 0 || d.Attempt >= MaxRetries {
		return
	}
	time.AfterFunc(wait, func() {
		s.mu.Lock()
		skip := s.closed || s.ackedLocked(d.EnvelopeID)
		s.mu.Unlock()
		if !skip {
			_, _ = s.Retry(d) // no connection left: nobody to send to, as for Slack
		}
	})
}

// WaitEventAcked waits until an envelope of the event eventID was acked
// (the first, or one Slack sent again).
func (s *Server) WaitEventAcked(ctx context.Context, eventID string) error {
	return s.waitFor(ctx, "the ack of event "+eventID, func() bool {
		for _, d := range s.deliveries {
			if d.EventID == eventID && s.ackedLocked(d.EnvelopeID) {
				return true
			}
		}
		return false
	})
}

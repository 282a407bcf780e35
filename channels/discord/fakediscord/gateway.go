package fakediscord

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway close codes the fake uses.
const (
	closeNotAuthenticated     = 4003
	closeAuthenticationFailed = 4004
	closeAlreadyAuthenticated = 4005
	closeInvalidShard         = 4010
	closeDisallowedIntents    = 4014
)

// handshakeTimeout bounds how long the fake waits for IDENTIFY or RESUME.
const handshakeTimeout = 10 * time.Second

// gwConn is one gateway websocket. All writes go through an unbounded
// outbox drained by one writer goroutine, so that dispatching never blocks
// the server's lock on a slow client, frames keep their order, and the
// socket has a single writer.
type gwConn struct {
	ws *websocket.Conn

	mu     sync.Mutex
	outbox []outFrame
	ready  bool // handshake done: dispatches may be sent
	done   bool // closing: nothing more is queued
	wake   chan struct{}
	stop   chan struct{}
	once   sync.Once
}

// outFrame is a text payload, or a close frame when closeCode is set.
type outFrame struct {
	payload   []byte
	closeCode int
	closeText string
}

func newGWConn(ws *websocket.Conn) *gwConn {
	return &gwConn{ws: ws, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

func (c *gwConn) push(f outFrame) {
	c.mu.Lock()
	if !c.done {
		c.outbox = append(c.outbox, f)
		if f.closeCode != 0 {
			c.done = true
		}
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *gwConn) enqueue(payload []byte) { c.push(outFrame{payload: payload}) }

// closeWith sends a close frame with code after what is queued; the writer
// then ends the connection.
func (c *gwConn) closeWith(code int, text string) {
	c.push(outFrame{closeCode: code, closeText: text})
}

func (c *gwConn) isReady() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

func (c *gwConn) setReady() {
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
}

// writeLoop sends queued frames until the connection ends.
func (c *gwConn) writeLoop() {
	for {
		c.mu.Lock()
		batch := c.outbox
		c.outbox = nil
		c.mu.Unlock()
		for _, f := range batch {
			if f.closeCode != 0 {
				msg := websocket.FormatCloseMessage(f.closeCode, f.closeText)
				_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
				c.abort()
				return
			}
			if err := c.ws.WriteMessage(websocket.TextMessage, f.payload); err != nil {
				c.abort()
				return
			}
		}
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
	}
}

// abort closes the socket without a close frame.
func (c *gwConn) abort() {
	c.once.Do(func() {
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
		close(c.stop)
		_ = c.ws.Close()
	})
}

type gwFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

type identifyData struct {
	Token   string `json:"token"`
	Intents int    `json:"intents"`
	Shard   []int  `json:"shard"`
}

type resumeData struct {
	Token     string `json:"token"`
	SessionID string `json:"session_id"`
	Seq       int64  `json:"seq"`
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) wsURL() string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http") + "/gateway-ws"
}

// serveGateway runs one gateway connection: HELLO, IDENTIFY or RESUME, then
// heartbeats until the socket ends.
func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); q.Get("v") != "9" && q.Get("v") != "10" || q.Get("encoding") != "json" {
		http.Error(w, "unsupported gateway version or encoding", http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := newGWConn(ws)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.stats.Connections++
	stall := s.stall
	s.notifyLocked()
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	defer func() {
		c.abort()
		s.mu.Lock()
		delete(s.conns, c)
		for _, sh := range s.shards {
			if sh.conn == c {
				sh.conn = nil
			}
		}
		s.notifyLocked()
		s.mu.Unlock()
	}()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	defer func() {
		// Ends the writer after what is queued (a pending close frame wins).
		c.closeWith(websocket.CloseNormalClosure, "")
		<-writerDone
	}()

	if stall {
		// Read until the client gives up; say nothing.
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}
	interval := s.cfg.HeartbeatInterval.Milliseconds()
	c.enqueue(mustJSON(map[string]any{"op": 10, "s": nil, "t": nil, "d": map[string]any{"heartbeat_interval": interval}}))

	if !s.handshake(c) {
		return
	}
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var f gwFrame
		if json.Unmarshal(data, &f) != nil {
			c.closeWith(4002, "Error while decoding payload.")
			return
		}
		switch f.Op {
		case 1:
			s.ack(c)
		case 2:
			c.closeWith(closeAlreadyAuthenticated, "Already authenticated.")
			return
		}
	}
}

func (s *Server) ack(c *gwConn) {
	c.enqueue(mustJSON(map[string]any{"op": 11}))
	s.mu.Lock()
	s.stats.HeartbeatAcks++
	s.notifyLocked()
	s.mu.Unlock()
}

// handshake reads frames until the session is identified or resumed; it
// reports false when the connection was closed.
func (s *Server) handshake(c *gwConn) bool {
	deadline := time.Now().Add(handshakeTimeout)
	for {
		_ = c.ws.SetReadDeadline(deadline)
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return false
		}
		var f gwFrame
		if json.Unmarshal(data, &f) != nil {
			c.closeWith(4002, "Error while decoding payload.")
			return false
		}
		switch f.Op {
		case 1:
			s.ack(c)
		case 2:
			var d identifyData
			_ = json.Unmarshal(f.D, &d)
			if d.Token != "Bot "+s.cfg.Token {
				c.closeWith(closeAuthenticationFailed, "Authentication failed.")
				return false
			}
			if s.cfg.DisallowMessageContent && d.Intents&IntentMessageContent != 0 ||
				s.cfg.DisallowGuildMembers && d.Intents&IntentGuildMembers != 0 {
				c.closeWith(closeDisallowedIntents, "Disallowed intent(s).")
				return false
			}
			id, count := 0, 1
			if len(d.Shard) == 2 {
				id, count = d.Shard[0], d.Shard[1]
			}
			if count < 1 || id < 0 || id >= count {
				c.closeWith(closeInvalidShard, "Invalid shard.")
				return false
			}
			s.identify(c, d.Intents, id, count)
			_ = c.ws.SetReadDeadline(time.Time{})
			return true
		case 6:
			var d resumeData
			_ = json.Unmarshal(f.D, &d)
			if d.Token != "Bot "+s.cfg.Token {
				c.closeWith(closeAuthenticationFailed, "Authentication failed.")
				return false
			}
			if s.resume(c, d) {
				_ = c.ws.SetReadDeadline(time.Time{})
				return true
			}
			// op 9 was sent; the client must IDENTIFY on this connection.
		default:
			c.closeWith(closeNotAuthenticated, "Not authenticated.")
			return false
		}
	}
}

// identify starts a new session of shard id on c: READY, then
// GUILD_CREATE for each guild of that shard.
func (s *Server) identify(c *gwConn, intents, id, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shardCount = count
	sh := s.shardLocked(id)
	old := sh.conn
	s.sessionN++
	sh.sessionID = fmt.Sprintf("sess-%d", s.sessionN)
	sh.seq = 0
	sh.events = nil
	sh.resumable = true
	sh.intents = intents
	s.stats.Identifies++
	s.stats.Intents = intents
	s.identified = append(s.identified, ShardInfo{ID: id, Count: count})
	sh.conn = c
	c.setReady()
	var mine []string
	for _, g := range s.guilds {
		if ShardOf(g, count) == id {
			mine = append(mine, g)
		}
	}
	guilds := make([]any, 0, len(mine))
	for _, g := range mine {
		guilds = append(guilds, map[string]any{"id": g, "unavailable": true})
	}
	ready := map[string]any{
		"v":                  9,
		"session_id":         sh.sessionID,
		"resume_gateway_url": s.wsURL(),
		"user":               s.userObjectLocked(s.cfg.BotID),
		"guilds":             guilds,
		"private_channels":   []any{},
		"application":        map[string]any{"id": s.cfg.BotID, "flags": 0},
	}
	if count > 1 {
		ready["shard"] = []int{id, count}
	}
	s.dispatchShardLocked(sh, "READY", ready)
	for _, g := range mine {
		s.dispatchShardLocked(sh, "GUILD_CREATE", s.guildObjectLocked(g))
	}
	s.notifyLocked()
	if old != nil && old != c {
		old.abort()
	}
}

// resume replays what the client missed and sends RESUMED, or answers op 9
// when the session cannot be resumed.
func (s *Server) resume(c *gwConn, d resumeData) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sh *shard
	for _, x := range s.shards {
		if x.sessionID != "" && x.sessionID == d.SessionID {
			sh = x
		}
	}
	if sh == nil || !sh.resumable || sh.invalidateNext {
		if sh != nil {
			sh.invalidateNext = false
			sh.resumable = false // Discord forgets a session it refused to resume
		}
		s.stats.InvalidSessions++
		s.notifyLocked()
		c.enqueue(mustJSON(map[string]any{"op": 9, "d": false}))
		return false
	}
	old := sh.conn
	from := d.Seq - int64(sh.overlap)
	sh.overlap = 0
	for _, e := range sh.events {
		if e.seq > from {
			c.enqueue(e.payload)
		}
	}
	sh.conn = c
	c.setReady()
	s.stats.Resumes++
	s.dispatchShardLocked(sh, "RESUMED", map[string]any{"_trace": []any{"fakediscord"}})
	s.notifyLocked()
	if old != nil && old != c {
		old.abort()
	}
	return true
}

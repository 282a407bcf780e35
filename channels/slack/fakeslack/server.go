// Package fakeslack is a local stand-in for Slack that speaks the real wire
// protocol, for tests of the Slack adapter and end-to-end tests of the built
// binary: the Web API methods the adapter calls (auth.test,
// apps.connections.open, chat.postMessage with message metadata,
// chat.update, chat.delete, chat.postEphemeral, conversations.history and
// conversations.replies over the accepted posts and seeded messages,
// conversations.info (public, private, group DM, DM, shared; a DM
// between two people the bot is not in),
// conversations.members, users.info and users.list (members, guests,
// people of other organisations), files.info with url_private downloads,
// reactions.add, reactions.remove) over HTTP, slash commands'
// response_url, and Socket Mode over a websocket (hello, events_api and
// slash_commands envelopes, acks, PING frames, disconnect requests and
// hard drops).
//
// It binds 127.0.0.1:0, records every call, post, reaction and ack, and lets a
// test inject events, script a 429 or a 5xx on the next post (also one that
// posted before failing), drop the websocket and redeliver an envelope. A
// test changes channels as people do in Slack (made private or public,
// shared and unshared, a new id, people joining and leaving) and the fake
// announces each change as Slack does, only to an app subscribed to its
// event (Config.Events, a manifest's bot_events). Waits take a context;
// nothing sleeps.
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
	"strconv"
	"sync"
	"time"
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
	// (the profile's display_name; real_name is "Real " + it), full
	// members of TeamID. People describes more (guests, people of other
	// organisations; SetPerson changes them later). Others are
	// user_not_found.
	Users  map[string]string
	People []Person
	// NoUsersScope makes users.info answer missing_scope, as for an app
	// without users:read.
	NoUsersScope bool
	// RejectMetadata makes chat.postMessage refuse any post that carries
	// message metadata (invalid_metadata_format).
	RejectMetadata bool
	// NoFilesScope makes files.info answer missing_scope and downloads
	// get the sign-in page, as for an app without files:read.
	NoFilesScope bool
	// Conversations describe channels for conversations.info and the
	// events in them (SetConversation changes them later).
	Conversations []Conversation
	// NoConversationsScope makes conversations.info and
	// conversations.members answer missing_scope, as for an app without
	// channels:read, groups:read, mpim:read and im:read.
	NoConversationsScope bool
	// RetryUnacked, when set, is how long an events_api envelope waits
	// for its ack before Slack sends the event again, as a new envelope
	// with retry_attempt one higher, to a live connection chosen at
	// random, up to MaxRetries times (Slack retries an unacknowledged
	// event three times). Zero sends nothing again by itself (Retry
	// still does).
	RetryUnacked time.Duration
	// Events are the app's bot event subscriptions, as its manifest's
	// settings.event_subscriptions.bot_events lists them ("app_mention",
	// "message.im", "message.channels", "channel_shared", …). A post
	// (InjectPost) and a change to a channel (ConvertToPrivate, Join, …)
	// send only the events subscribed to, as Slack does; nil subscribes to
	// every one. Inject sends what it is given whatever the subscriptions.
	Events []string
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
	ChannelType string // message events: "channel", "group", "im", "mpim"; "" = from the conversation
	// Team is the workspace the event comes from (the envelope's team_id
	// and authorizations); "" = Config.TeamID. UserTeam, when set, is the
	// sender's own workspace (user_team), as Slack says for a person of
	// another organisation in a shared channel.
	Team, UserTeam string
	User           string
	BotID          string
	Subtype        string
	Text           string
	TS             string
	ThreadTS       string
	Edited         bool
	// Files are shared with the post (Slack sends subtype "file_share" on
	// the message event; set Subtype to match); a file-only post has no
	// Text.
	Files []File
}

// Delivery is one events_api envelope sent to the client.
type Delivery struct {
	EnvelopeID string
	EventID    string
	Attempt    int // retry_attempt
	Event      Event
	At         time.Time
	// Conn is the connection it went to: 1 for the first that said
	// hello, 2 for the next, and so on.
	Conn    int
	payload json.RawMessage
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
	live        []*conn // connections open now, in the order they said hello
	current     *conn   // the newest live connection
	hellos      int
	seq         int
	tsBase      int64
	tsSeq       int
	postScript  []scripted
	storms      map[string]*storm // channel -> chat.postMessage rate limit
	reactHold   chan struct{}     // while non-nil, reactions.* wait for it to close
	done        chan struct{}     // closed by Close: held requests give up

	responses    []Response
	ephemerals   []Ephemeral
	updates      []Update
	deleted      []Update
	updateScript []scripted
	ephemScript  []scripted // answers of the next chat.postEphemeral calls
	seeded       []Message
	files        map[string]File
	// conversations are the channels described by Config.Conversations
	// and SetConversation; members their members, in the order they
	// joined (the bot first).
	conversations map[string]Conversation
	members       map[string][]string
	people        map[string]Person
	downloads     int
}

// scripted is a canned failure for the next chat.postMessage.
// storm rate-limits one channel's posts.
type storm struct {
	left       int // posts still refused; < 0: every one
	retryAfter time.Duration
}

type scripted struct {
	status     int
	retryAfter time.Duration
	afterPost  bool // accept the post, then answer the failure
}

// New starts a fake on 127.0.0.1:0.
func New(cfg Config) *Server {
	cfg = withDefaults(cfg)
	s := &Server{
		cfg:         cfg,
		changed:     make(chan struct{}),
		reactionSet: make(map[string]bool),
		tickets:     make(map[string]bool),
		files:       make(map[string]File),
		done:        make(chan struct{}),
		tsBase:      time.Now().Unix(),
	}
	for _, c := range cfg.Conversations {
		s.SetConversation(c)
	}
	for _, p := range cfg.People {
		s.SetPerson(p)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/link/", s.serveLink)
	mux.HandleFunc("/commands/", s.serveResponseURL)
	mux.HandleFunc("/files-pri/", s.serveFile)
	mux.HandleFunc("/signin/", serveSignIn)
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

// LiveConnections counts the connections open now (Slack allows an app up
// to 10).
func (s *Server) LiveConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live)
}

// WaitLiveConnections waits until exactly n connections are open.
func (s *Server) WaitLiveConnections(ctx context.Context, n int) error {
	return s.waitFor(ctx, fmt.Sprintf("%d live connections", n), func() bool { return len(s.live) == n })
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

// RateLimitChannel answers the next n chat.postMessage calls to channel
// (n < 0: every one, until RateLimitChannel is called again) with HTTP 429
// and Retry-After, as Slack limits posting per channel; posts to other
// channels go through. n == 0 ends the storm. Scripted answers of the
// RateLimitNextPost family come first.
func (s *Server) RateLimitChannel(channel string, n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(s.storms, channel)
		return
	}
	if s.storms == nil {
		s.storms = map[string]*storm{}
	}
	s.storms[channel] = &storm{left: n, retryAfter: retryAfter}
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

// Addr returns the listener address (host:port), e.g. for logs.
func (s *Server) Addr() net.Addr { return s.srv.Listener.Addr() }

// Package fakediscord is a local stand-in for Discord, speaking its real wire
// protocol so that the discord adapter (and the end-to-end tests of the built
// binary) can run offline: the REST API v9 that a bot uses (gateway lookup
// with the recommended shard count, current user and application, channels
// with their permission overwrites, messages with their history, edits and deletions, typing, application
// command registration, interaction callbacks and interaction webhooks), the
// CDN serving attachments, and the Gateway websocket (HELLO, IDENTIFY with
// shards, READY, dispatches with sequence numbers per shard, heartbeat ACKs,
// RESUME with replay, INVALID_SESSION, RECONNECT). Guild events go to the
// shard (guild_id >> 22) % shard_count, direct messages to shard 0, as
// Discord routes them.
//
// It records everything a client did and lets a test script what Discord
// would do: inject messages (with files), slash command uses and
// autocompletes, thread creations; answer the next send with a 429 or a
// server error; hold typing calls; drop the websocket, invalidate the
// session, deliver a message twice. It binds 127.0.0.1:0 only.
//
// It is not a test file so that cmd/dreamgate can drive a built binary
// against it. It imports nothing of ours and no Discord client library: what
// it sends is plain JSON written here, so a shared misunderstanding with the
// client library cannot hide a bug.
package fakediscord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Channel types (Discord's numbering).
const (
	ChannelText          = 0
	ChannelDM            = 1
	ChannelNewsThread    = 10
	ChannelPublicThread  = 11
	ChannelPrivateThread = 12
	ChannelForum         = 15
)

// Message types (Discord's numbering); only a few are named.
const (
	MessageDefault         = 0
	MessageGuildMemberJoin = 7
	MessageThreadCreated   = 18
	MessageReply           = 19
)

// Gateway intents the fake looks at.
const (
	IntentGuilds         = 1 << 0
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// Config describes the bot the fake serves. Zero values take the defaults.
type Config struct {
	Token             string        // the bot token without "Bot "; default "fake-token"
	BotID             string        // default "BOT1"
	BotName           string        // default "fakebot"
	HeartbeatInterval time.Duration // sent in HELLO; default 1 s
	// DisallowMessageContent makes the app behave as if the Message Content
	// intent were not enabled in the developer portal: an IDENTIFY asking for
	// it is closed with 4014 (disallowed intents).
	DisallowMessageContent bool
	// TypingResetAfter is the X-RateLimit-Reset-After of a typing answer
	// (the bucket has 5 calls); default 5 s, as Discord's.
	TypingResetAfter time.Duration
	// RecommendedShards is GET /gateway/bot's "shards"; default 1.
	RecommendedShards int
}

// Channel is a channel the fake knows: a guild text channel, a thread (with
// its parent) or a DM.
type Channel struct {
	ID       string
	GuildID  string // "" for DMs
	ParentID string // a thread's parent channel
	Name     string
	Type     int
	// Overwrites are the channel's permission_overwrites; a private
	// channel has one denying PermViewChannel to the @everyone role,
	// whose id is the guild's (Hidden writes it).
	Overwrites []Overwrite
}

// Overwrite is one permission overwrite of a channel: for a role
// (OverwriteRole; the @everyone role's id is the guild's) or a member
// (OverwriteMember), the permission bits allowed and denied.
type Overwrite struct {
	ID          string
	Type        int
	Allow, Deny int64
}

// Overwrite types and the permission the adapter's audience depends on.
const (
	OverwriteRole   = 0
	OverwriteMember = 1
	PermViewChannel = 1 << 10
)

// DefaultEveryone is the @everyone role's permissions in a new server:
// view channels, send messages, read their history, add reactions, embed
// links, attach files, use application commands.
const DefaultEveryone = PermViewChannel | 1<<11 | 1<<16 | 1<<6 | 1<<14 | 1<<15 | 1<<31

// Hidden is the overwrite that makes a channel of guild private: @everyone
// may not view it.
func Hidden(guild string) Overwrite {
	return Overwrite{ID: guild, Type: OverwriteRole, Deny: PermViewChannel}
}

// User is a message author.
type User struct {
	ID       string
	Username string
	Bot      bool
}

// Message is a message a user posts, injected with InjectMessage.
type Message struct {
	ID        string // "" assigns a new snowflake
	ChannelID string
	Author    User
	Content   string
	Type      int      // MessageDefault unless set; MessageReply is implied by ReplyTo
	Mentions  []string // user ids mentioned besides the <@id> found in Content
	ReplyTo   string   // id of the message this one replies to (without pinging its author)
	// Attachments are served at the URL the message object gives, as
	// Discord's CDN serves them (no token needed).
	Attachments []File
}

// File is an attachment of an injected message.
type File struct {
	Name        string
	ContentType string // "" = none, as Discord sends for types it does not know
	Data        []byte
	// Size is the size the message object claims; 0 means len(Data).
	Size int
}

// Sent is one message the bot created through POST /channels/{id}/messages.
type Sent struct {
	ID            string
	ChannelID     string
	Content       string
	ReplyTo       string   // message_reference.message_id, "" when absent
	RepliedUser   *bool    // allowed_mentions.replied_user, nil when absent
	AllowedParse  []string // allowed_mentions.parse
	Nonce         string
	Authorization string
	At            time.Time
	// TypingHeld counts the typing calls held (HoldTyping) when this
	// message arrived: a reply that did not wait for them.
	TypingHeld int
}

// Edit is one PATCH /channels/{id}/messages/{mid} that changed a message.
type Edit struct {
	ChannelID string
	MessageID string
	Content   string
	At        time.Time
}

// Attempt is one POST /channels/{id}/messages, whatever its outcome.
type Attempt struct {
	ChannelID string
	Status    int
	Nonce     string
	At        time.Time
}

// Typing is one POST /channels/{id}/typing.
type Typing struct {
	ChannelID     string
	Authorization string
	At            time.Time
}

// Request is one REST request, for debugging tests.
type Request struct {
	Method string
	Path   string
	Status int
}

// Stats counts gateway activity.
type Stats struct {
	Connections     int // websocket upgrades
	Identifies      int // sessions started with IDENTIFY (READY sent)
	Resumes         int // sessions resumed (RESUMED sent)
	InvalidSessions int // RESUMEs answered with op 9
	HeartbeatAcks   int
	Intents         int // intents of the last IDENTIFY
}

type failure struct {
	status      int
	retryAfter  time.Duration
	global      bool
	afterCreate bool
}

// storm rate-limits one channel's messages.
type storm struct {
	left       int // sends still refused; < 0: every one
	retryAfter time.Duration
}

// Server is a running fake. All methods are safe for concurrent use.
type Server struct {
	cfg  Config
	http *httptest.Server

	wg sync.WaitGroup // websocket goroutines

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every recorded change
	closed   bool
	nextID   int64
	channels map[string]Channel
	guilds   []string // in the order added
	users    map[string]User
	messages map[string]map[string]any // id -> message object as dispatched
	history  map[string][]string       // channel id -> its message ids, oldest first
	files    map[string]File           // attachment id -> file
	nonces   map[string]string         // nonce -> message id
	// lookupFails answers GET /channels/{id} of these channels with the
	// status (FailChannelLookup).
	lookupFails map[string]int
	// everyone holds the @everyone role's permissions of the guilds
	// where they are not DefaultEveryone (SetEveryone).
	everyone map[string]int64

	sent     []Sent
	attempts []Attempt
	typing   []Typing
	edits    []Edit
	deleted  []string
	requests []Request
	failures []failure
	storms   map[string]*storm // channel id -> its message route's rate limit
	stats    Stats

	commands     map[string][]map[string]any // guild ("" = global) -> registered commands
	commandPuts  int
	interactions map[string]*interaction
	callbacks    []Callback
	followups    []Followup

	typingGate chan struct{} // non-nil: typing calls wait until it is closed
	typingHeld int           // typing calls waiting at the gate

	// the gateway sessions, one per shard
	conns      map[*gwConn]struct{}
	shards     map[int]*shard
	shardCount int // of the last IDENTIFY; guilds are routed by it
	sessionN   int
	identified []ShardInfo
	stall      bool
}

// shard is the gateway session of one shard.
type shard struct {
	id             int
	conn           *gwConn
	sessionID      string
	seq            int64
	events         []event // dispatches of the current session, for RESUME
	resumable      bool
	invalidateNext bool
	overlap        int
	intents        int
}

// ShardInfo is the shard an IDENTIFY asked for.
type ShardInfo struct{ ID, Count int }

// shardLocked returns shard id's session state, creating it.
func (s *Server) shardLocked(id int) *shard {
	sh := s.shards[id]
	if sh == nil {
		sh = &shard{id: id}
		s.shards[id] = sh
	}
	return sh
}

// ShardOf is the shard Discord routes a guild's events to:
// (guild_id >> 22) % count. DMs (and ids that are not snowflakes) go to
// shard 0.
func ShardOf(guildID string, count int) int {
	id, err := strconv.ParseUint(guildID, 10, 64)
	if err != nil || count <= 1 {
		return 0
	}
	return int((id >> 22) % uint64(count))
}

type event struct {
	seq     int64
	payload []byte
}

// maxEvents bounds the replay log of a session.
const maxEvents = 10000

// Start runs a fake on 127.0.0.1:0.
func Start(cfg Config) (*Server, error) {
	if cfg.Token == "" {
		cfg.Token = "fake-token"
	}
	if cfg.BotID == "" {
		cfg.BotID = "BOT1"
	}
	if cfg.BotName == "" {
		cfg.BotName = "fakebot"
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.RecommendedShards <= 0 {
		cfg.RecommendedShards = 1
	}
	if cfg.TypingResetAfter <= 0 {
		cfg.TypingResetAfter = 5 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{
		cfg:          cfg,
		changed:      make(chan struct{}),
		nextID:       1_100_000_000_000_000_000,
		channels:     map[string]Channel{},
		users:        map[string]User{cfg.BotID: {ID: cfg.BotID, Username: cfg.BotName, Bot: true}},
		messages:     map[string]map[string]any{},
		history:      map[string][]string{},
		files:        map[string]File{},
		nonces:       map[string]string{},
		conns:        map[*gwConn]struct{}{},
		shards:       map[int]*shard{},
		commands:     map[string][]map[string]any{},
		interactions: map[string]*interaction{},
		shardCount:   1,
	}
	s.http = httptest.NewUnstartedServer(s.routes())
	s.http.Listener.Close()
	s.http.Listener = ln
	s.http.Start()
	return s, nil
}

// URL is the base URL to configure as the adapter's apiURL.
func (s *Server) URL() string { return s.http.URL }

// BotID is the id of the bot user.
func (s *Server) BotID() string { return s.cfg.BotID }

// Token is the bot token the fake accepts (without "Bot ").
func (s *Server) Token() string { return s.cfg.Token }

// Close drops every connection and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*gwConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	for _, sh := range s.shards {
		sh.conn = nil
	}
	if s.typingGate != nil {
		close(s.typingGate)
		s.typingGate = nil
	}
	s.notifyLocked()
	s.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
	s.http.Close()
	s.wg.Wait()
}

// AddGuild registers a guild and its channels (threads included); for a
// guild it knows, it adds or replaces channels. A guild added before the
// bot connects is announced with GUILD_CREATE after READY; one added later
// is dispatched at once.
func (s *Server) AddGuild(id string, chans ...Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.guilds, id) {
		s.guilds = append(s.guilds, id)
	}
	for _, c := range chans {
		c.GuildID = id
		s.channels[c.ID] = c
	}
	if sh := s.shards[ShardOf(id, s.shardCount)]; sh != nil && sh.conn != nil && sh.conn.isReady() {
		s.dispatchLocked(id, "GUILD_CREATE", s.guildObjectLocked(id))
	}
}

// AddChannel registers a channel silently: REST knows it (GET
// /channels/{id}), the gateway announces nothing. Use it for DMs and for
// threads the client has to look up.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
}

// UpdateChannel replaces what the fake knows of a channel (its
// overwrites: a channel made private) and dispatches CHANNEL_UPDATE, or
// THREAD_UPDATE for a thread.
func (s *Server) UpdateChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[c.ID] = c
	event := "CHANNEL_UPDATE"
	if isThread(c.Type) {
		event = "THREAD_UPDATE"
	}
	s.dispatchLocked(c.GuildID, event, channelObject(c))
}

// SetEveryone sets the permissions of guild's @everyone role (its id is
// the guild's): without PermViewChannel, only channels that allow it to
// @everyone (or to a role) are seen. For a guild already added it
// dispatches GUILD_ROLE_UPDATE.
func (s *Server) SetEveryone(guild string, perms int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.everyone == nil {
		s.everyone = map[string]int64{}
	}
	s.everyone[guild] = perms
	if slices.Contains(s.guilds, guild) {
		s.dispatchLocked(guild, "GUILD_ROLE_UPDATE", map[string]any{"guild_id": guild, "role": s.everyoneRoleLocked(guild)})
	}
}

func (s *Server) everyoneRoleLocked(guild string) map[string]any {
	perms, ok := s.everyone[guild]
	if !ok {
		perms = DefaultEveryone
	}
	return map[string]any{"id": guild, "name": "@everyone", "managed": false, "mentionable": false,
		"permissions": strconv.FormatInt(perms, 10), "position": 0, "color": 0, "hoist": false}
}

// FailChannelLookup makes GET /channels/{id} answer status for channel id
// (403 Missing Access, 500, …) until it is called again with status 0.
func (s *Server) FailChannelLookup(id string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lookupFails == nil {
		s.lookupFails = map[string]int{}
	}
	if status == 0 {
		delete(s.lookupFails, id)
		return
	}
	s.lookupFails[id] = status
}

// CreateThread registers a thread and dispatches THREAD_CREATE.
func (s *Server) CreateThread(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Type == 0 {
		c.Type = ChannelPublicThread
	}
	if c.GuildID == "" {
		c.GuildID = s.channels[c.ParentID].GuildID
	}
	s.channels[c.ID] = c
	obj := channelObject(c)
	obj["newly_created"] = true
	s.dispatchLocked(c.GuildID, "THREAD_CREATE", obj)
}

// InjectMessage posts m as a user would: the message is stored and a
// MESSAGE_CREATE is dispatched (queued for replay when no client is
// connected). It returns the message id.
func (s *Server) InjectMessage(m Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.channels[m.ChannelID]
	if !ok {
		return "", fmt.Errorf("inject message: unknown channel %q", m.ChannelID)
	}
	if m.ID == "" {
		m.ID = s.newIDLocked()
	}
	if m.Author.Username == "" {
		m.Author.Username = m.Author.ID
	}
	s.users[m.Author.ID] = m.Author
	obj := s.messageObjectLocked(m, c)
	if c.GuildID != "" && s.shardLocked(ShardOf(c.GuildID, s.shardCount)).intents&IntentMessageContent == 0 && !mentions(obj, s.cfg.BotID) && m.Author.ID != s.cfg.BotID {
		// Without the privileged intent Discord blanks the content of guild
		// messages that do not mention the bot.
		obj["content"] = ""
	}
	s.storeLocked(obj)
	s.dispatchLocked(c.GuildID, "MESSAGE_CREATE", obj)
	return m.ID, nil
}

// Redeliver dispatches MESSAGE_CREATE for an already delivered message again,
// as Discord may after a resume.
func (s *Server) Redeliver(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.messages[id]
	if !ok {
		return fmt.Errorf("redeliver: unknown message %q", id)
	}
	g, _ := obj["guild_id"].(string)
	s.dispatchLocked(g, "MESSAGE_CREATE", obj)
	return nil
}

// Inject429 makes the next POST /channels/{id}/messages answer 429 with this
// retry_after (global when global is set), without creating the message.
func (s *Server) Inject429(retryAfter time.Duration, global bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{status: http.StatusTooManyRequests, retryAfter: retryAfter, global: global})
}

// RateLimitChannel answers the next n POST /channels/{id}/messages to
// channelID (n < 0: every one, until RateLimitChannel is called again) with
// a 429 of this retry_after, as Discord limits each channel's message route
// on its own; sends to other channels go through. n == 0 ends the storm.
// Failures queued by Inject429 and InjectSendError come first.
func (s *Server) RateLimitChannel(channelID string, n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == 0 {
		delete(s.storms, channelID)
		return
	}
	if s.storms == nil {
		s.storms = map[string]*storm{}
	}
	s.storms[channelID] = &storm{left: n, retryAfter: retryAfter}
}

// InjectSendError makes the next POST /channels/{id}/messages answer status.
// With afterCreate the message is created first and only the answer is lost,
// as when a response times out.
func (s *Server) InjectSendError(status int, afterCreate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, failure{status: status, afterCreate: afterCreate})
}

// DropConnection cuts the current websocket (of shard 0) without a close
// frame, as a network failure would. The session stays resumable.
func (s *Server) DropConnection() error {
	s.mu.Lock()
	sh := s.shardLocked(0)
	c := sh.conn
	sh.conn = nil
	s.mu.Unlock()
	if c == nil {
		return errors.New("drop connection: no client connected")
	}
	c.abort()
	return nil
}

// RequestReconnect sends op 7 RECONNECT on the current websocket.
func (s *Server) RequestReconnect() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.shardLocked(0).conn
	if c == nil {
		return errors.New("request reconnect: no client connected")
	}
	c.enqueue(mustJSON(map[string]any{"op": 7, "d": nil}))
	return nil
}

// InvalidateSession makes the next RESUME fail with op 9 INVALID_SESSION
// (d=false), so the client has to IDENTIFY again.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shardLocked(0).invalidateNext = true
}

// ReplayOverlap makes the next successful RESUME also replay the last n
// dispatches the client had already received, as Discord's at-least-once
// delivery may.
func (s *Server) ReplayOverlap(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shardLocked(0).overlap = n
}

// StallGateway makes new websocket connections hang before HELLO while on,
// as an overloaded or half-broken gateway would.
func (s *Server) StallGateway(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = on
}

// HoldTyping makes typing calls wait, unanswered, until ReleaseTyping (or
// until the client gives up on them), as a slow Discord would.
func (s *Server) HoldTyping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.typingGate == nil {
		s.typingGate = make(chan struct{})
	}
}

// ReleaseTyping answers the held typing calls and stops holding new ones.
func (s *Server) ReleaseTyping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.typingGate != nil {
		close(s.typingGate)
		s.typingGate = nil
	}
}

// WaitTypingHeld waits until n typing calls are held at once.
func (s *Server) WaitTypingHeld(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.typingHeld >= n })
	if err != nil {
		return fmt.Errorf("wait for %d held typing calls: %w", n, err)
	}
	return nil
}

// Identified returns the shard of every IDENTIFY, in order.
func (s *Server) Identified() []ShardInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ShardInfo(nil), s.identified...)
}

// Sent returns the messages the bot created, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Attempts returns every POST /channels/{id}/messages, in order.
func (s *Server) Attempts() []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Attempt(nil), s.attempts...)
}

// Edits returns the message edits, in order.
func (s *Server) Edits() []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.edits...)
}

// WaitEdits waits until at least n edits were made and returns them all.
func (s *Server) WaitEdits(ctx context.Context, n int) ([]Edit, error) {
	var out []Edit
	err := s.waitFor(ctx, func() bool {
		if len(s.edits) < n {
			return false
		}
		out = append([]Edit(nil), s.edits...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d edits: %w", n, err)
	}
	return out, nil
}

// Deleted returns the ids of deleted messages, in order.
func (s *Server) Deleted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deleted...)
}

// Shown returns what a channel shows now: the content of its messages,
// oldest first, after edits and deletions. from, when set, skips messages
// up to and including that id.
func (s *Server) Shown(channelID, from string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.history[channelID] {
		if from != "" && !snowflakeLess(from, id) {
			continue
		}
		c, _ := s.messages[id]["content"].(string)
		out = append(out, c)
	}
	return out
}

// Typing returns the typing calls, in order.
func (s *Server) Typing() []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Typing(nil), s.typing...)
}

// Requests returns every REST request, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Stats returns the gateway counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// WaitSent waits until the bot has created at least n messages and returns
// them all.
func (s *Server) WaitSent(ctx context.Context, n int) ([]Sent, error) {
	var out []Sent
	err := s.waitFor(ctx, func() bool {
		if len(s.sent) < n {
			return false
		}
		out = append([]Sent(nil), s.sent...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d sent messages (have %d): %w", n, len(s.Sent()), err)
	}
	return out, nil
}

// WaitTyping waits until at least n typing calls were made.
func (s *Server) WaitTyping(ctx context.Context, n int) ([]Typing, error) {
	var out []Typing
	err := s.waitFor(ctx, func() bool {
		if len(s.typing) < n {
			return false
		}
		out = append([]Typing(nil), s.typing...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wait for %d typing calls: %w", n, err)
	}
	return out, nil
}

// WaitSessions waits until n gateway handshakes (READY or RESUMED) have
// completed in total.
func (s *Server) WaitSessions(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.stats.Identifies+s.stats.Resumes >= n })
	if err != nil {
		return fmt.Errorf("wait for %d gateway sessions: %w", n, err)
	}
	return nil
}

// WaitConnections waits until n websockets have been opened in total.
func (s *Server) WaitConnections(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.stats.Connections >= n })
	if err != nil {
		return fmt.Errorf("wait for %d gateway connections: %w", n, err)
	}
	return nil
}

// WaitHeartbeats waits until n heartbeats have been acknowledged in total.
func (s *Server) WaitHeartbeats(ctx context.Context, n int) error {
	err := s.waitFor(ctx, func() bool { return s.stats.HeartbeatAcks >= n })
	if err != nil {
		return fmt.Errorf("wait for %d heartbeat ACKs: %w", n, err)
	}
	return nil
}

// WaitRequest waits until a REST request with this method and path was made.
func (s *Server) WaitRequest(ctx context.Context, method, path string) error {
	err := s.waitFor(ctx, func() bool {
		for _, r := range s.requests {
			if r.Method == method && r.Path == path {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("wait for %s %s: %w", method, path, err)
	}
	return nil
}

// waitFor calls cond under the lock after every change until it holds.
func (s *Server) waitFor(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		if cond() {
			s.mu.Unlock()
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// newIDLocked returns a new snowflake-like id (digits, increasing).
func (s *Server) newIDLocked() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

// dispatchLocked sends an op 0 dispatch about a guild ("" for DMs) to the
// shard that owns it.
func (s *Server) dispatchLocked(guildID, t string, d any) {
	s.dispatchShardLocked(s.shardLocked(ShardOf(guildID, s.shardCount)), t, d)
}

// dispatchShardLocked sends an op 0 dispatch with the shard's next sequence
// number and keeps it for replay.
func (s *Server) dispatchShardLocked(sh *shard, t string, d any) {
	sh.seq++
	payload := mustJSON(map[string]any{"op": 0, "s": sh.seq, "t": t, "d": d})
	sh.events = append(sh.events, event{seq: sh.seq, payload: payload})
	if len(sh.events) > maxEvents {
		sh.events = sh.events[len(sh.events)-maxEvents:]
	}
	if sh.conn != nil && sh.conn.isReady() {
		sh.conn.enqueue(payload)
	}
}

var (
	mentionRE     = regexp.MustCompile(`<@!?([0-9A-Za-z_]+)>`)
	roleMentionRE = regexp.MustCompile(`<@&([0-9A-Za-z_]+)>`)
)

// BotRoleID is the id of the role Discord makes for the bot in a guild it
// joins ("managed", tagged with the bot's id); GUILD_CREATE carries it and
// the bot's member holding it.
func (s *Server) BotRoleID(guild string) string { return "R" + guild }

func (s *Server) userObjectLocked(id string) map[string]any {
	u, ok := s.users[id]
	if !ok {
		u = User{ID: id, Username: id}
	}
	obj := map[string]any{"id": u.ID, "username": u.Username, "global_name": nil, "discriminator": "0", "avatar": nil}
	if u.Bot {
		obj["bot"] = true
	}
	return obj
}

func (s *Server) messageObjectLocked(m Message, c Channel) map[string]any {
	seen := map[string]bool{}
	var ments []any
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ments = append(ments, s.userObjectLocked(id))
		}
	}
	for _, sub := range mentionRE.FindAllStringSubmatch(m.Content, -1) {
		add(sub[1])
	}
	for _, id := range m.Mentions {
		add(id)
	}
	if ments == nil {
		ments = []any{}
	}
	typ := m.Type
	if m.ReplyTo != "" && typ == MessageDefault {
		typ = MessageReply
	}
	atts := []any{}
	for _, f := range m.Attachments {
		id := s.newIDLocked()
		s.files[id] = f
		size := f.Size
		if size == 0 {
			size = len(f.Data)
		}
		u := s.http.URL + "/attachments/" + m.ChannelID + "/" + id + "/" + url.PathEscape(f.Name)
		att := map[string]any{"id": id, "filename": f.Name, "size": size, "url": u, "proxy_url": u}
		if f.ContentType != "" {
			att["content_type"] = f.ContentType
		}
		atts = append(atts, att)
	}
	obj := map[string]any{
		"id":               m.ID,
		"channel_id":       m.ChannelID,
		"author":           s.userObjectLocked(m.Author.ID),
		"content":          m.Content,
		"timestamp":        time.Now().UTC().Format(time.RFC3339Nano),
		"edited_timestamp": nil,
		"tts":              false,
		"mention_everyone": false,
		"mentions":         ments,
		"mention_roles":    roleMentions(m.Content),
		"attachments":      atts,
		"embeds":           []any{},
		"pinned":           false,
		"type":             typ,
	}
	if c.GuildID != "" {
		obj["guild_id"] = c.GuildID
		obj["member"] = map[string]any{"roles": []any{}, "joined_at": "2024-01-01T00:00:00Z", "deaf": false, "mute": false}
	}
	if m.ReplyTo != "" {
		ref := map[string]any{"type": 0, "message_id": m.ReplyTo, "channel_id": m.ChannelID}
		if c.GuildID != "" {
			ref["guild_id"] = c.GuildID
		}
		obj["message_reference"] = ref
		if orig, ok := s.messages[m.ReplyTo]; ok {
			// Discord nests one level only.
			cp := make(map[string]any, len(orig))
			for k, v := range orig {
				cp[k] = v
			}
			delete(cp, "referenced_message")
			obj["referenced_message"] = cp
		} else {
			obj["referenced_message"] = nil
		}
	}
	return obj
}

// storeLocked keeps a message object for REST reads and replies.
func (s *Server) storeLocked(obj map[string]any) {
	id, _ := obj["id"].(string)
	ch, _ := obj["channel_id"].(string)
	if _, ok := s.messages[id]; !ok {
		s.history[ch] = append(s.history[ch], id)
	}
	s.messages[id] = obj
}

// roleMentions lists the roles mentioned in content, as Discord fills
// mention_roles.
func roleMentions(content string) []any {
	out := []any{}
	for _, sub := range roleMentionRE.FindAllStringSubmatch(content, -1) {
		out = append(out, sub[1])
	}
	return out
}

func mentions(obj map[string]any, id string) bool {
	ms, _ := obj["mentions"].([]any)
	for _, m := range ms {
		if u, ok := m.(map[string]any); ok && u["id"] == id {
			return true
		}
	}
	return false
}

func channelObject(c Channel) map[string]any {
	obj := map[string]any{"id": c.ID, "type": c.Type, "name": c.Name}
	if c.GuildID != "" {
		obj["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		obj["parent_id"] = c.ParentID
	}
	if isThread(c.Type) {
		obj["thread_metadata"] = map[string]any{"archived": false, "auto_archive_duration": 1440, "locked": false}
	}
	if c.GuildID != "" && !isThread(c.Type) {
		ows := []any{}
		for _, o := range c.Overwrites {
			ows = append(ows, map[string]any{"id": o.ID, "type": o.Type,
				"allow": strconv.FormatInt(o.Allow, 10), "deny": strconv.FormatInt(o.Deny, 10)})
		}
		obj["permission_overwrites"] = ows
	}
	return obj
}

// guildChannelObject is a channel as GUILD_CREATE lists it: without its
// guild_id, which the guild around it gives.
func guildChannelObject(c Channel) map[string]any {
	obj := channelObject(c)
	delete(obj, "guild_id")
	return obj
}

func isThread(t int) bool {
	return t == ChannelNewsThread || t == ChannelPublicThread || t == ChannelPrivateThread
}

func (s *Server) guildObjectLocked(id string) map[string]any {
	chans, threads := []any{}, []any{}
	for _, c := range s.channels {
		if c.GuildID != id {
			continue
		}
		if isThread(c.Type) {
			threads = append(threads, channelObject(c))
		} else {
			chans = append(chans, guildChannelObject(c))
		}
	}
	bot := s.userObjectLocked(s.cfg.BotID)
	roles := []any{
		s.everyoneRoleLocked(id),
		map[string]any{"id": s.BotRoleID(id), "name": bot["username"], "managed": true, "mentionable": true,
			"permissions": "0", "position": 1, "tags": map[string]any{"bot_id": s.cfg.BotID}},
	}
	members := []any{map[string]any{"user": bot, "roles": []any{s.BotRoleID(id)},
		"joined_at": "2024-01-01T00:00:00Z", "deaf": false, "mute": false}}
	return map[string]any{
		"id": id, "name": "guild " + id, "unavailable": false, "member_count": 2,
		"channels": chans, "threads": threads, "roles": roles, "emojis": []any{},
		"members": members, "presences": []any{}, "voice_states": []any{},
		"joined_at": "2024-01-01T00:00:00Z", "large": false, "owner_id": "OWNER",
	}
}

// mustJSON encodes v as Discord does, without escaping <, > and & (mentions
// arrive as "<@id>").
func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakediscord: marshal: %v", err)) // only our own maps are marshalled
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

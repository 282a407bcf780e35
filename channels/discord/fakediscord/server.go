// Package fakediscord is a local stand-in for Discord, speaking its real wire
// protocol so that the discord adapter (and the end-to-end tests of the built
// binary) can run offline: the REST API v9 that a bot uses (gateway lookup
// with the recommended shard count, current user and application, channels
// with their permission overwrites, guilds with their roles and owner,
// members with their roles, messages with their history, edits and
// deletions, typing, application command registration, interaction
// callbacks and interaction webhooks), the CDN serving attachments, and the
// Gateway websocket (HELLO, IDENTIFY with shards and intents, READY,
// GUILD_CREATE with channels, roles and, for the Server Members intent,
// members; CHANNEL_, THREAD_, GUILD_ROLE_, GUILD_MEMBER_ and GUILD_UPDATE
// dispatches; interactions with their context and authorizing
// installations; sequence numbers per shard, heartbeat ACKs, RESUME with
// replay, INVALID_SESSION, RECONNECT). Guild events go to the shard
// (guild_id >> 22) % shard_count, direct messages to shard 0, as Discord
// routes them; the bot is sent and may read nothing of a guild it is not in
// or of a DM between other people.
//
// It records everything a client did and lets a test script what Discord
// would do: inject messages (with files), slash command uses and
// autocompletes, thread creations, channel, role, member and owner
// changes; answer the next send with a 429 or a
// server error; hold typing calls; drop the websocket, invalidate the
// session, deliver a message twice. It binds 127.0.0.1:0 only.
//
// It is not a test file so that cmd/dreamgate can drive a built binary
// against it. It imports nothing of ours and no Discord client library: what
// it sends is plain JSON written here, so a shared misunderstanding with the
// client library cannot hide a bug.
package fakediscord

import (
	"fmt"
	"net"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Channel types (Discord's numbering).
const (
	ChannelText          = 0
	ChannelDM            = 1
	ChannelGroupDM       = 3
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
	// DisallowGuildMembers does the same for the Server Members intent.
	DisallowGuildMembers bool
	// TypingResetAfter is the X-RateLimit-Reset-After of a typing answer
	// (the bucket has 5 calls); default 5 s, as Discord's.
	TypingResetAfter time.Duration
	// RecommendedShards is GET /gateway/bot's "shards"; default 1.
	RecommendedShards int
	// NonceWindow is how long a message's nonce, posted with
	// enforce_nonce, answers a second post of it with the first message
	// instead of a new one: "a few minutes" for Discord; default 5 min.
	NonceWindow time.Duration
	// Now is the fake's clock for the nonce window; nil is time.Now.
	Now func() time.Time
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
	// Recipients are the people of a DM or group DM (ChannelDM,
	// ChannelGroupDM). Empty is a DM with the bot; a DM whose recipients
	// do not include the bot is one between people, where the bot is
	// reached only through its user-installed commands (interaction
	// context 2) and cannot read the channel.
	Recipients []string
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
	// GlobalName is the display name a user chose for every server
	// (Discord's global_name), "" for none.
	GlobalName string
	Bot        bool
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
	nonces   map[string]nonceUse       // enforced nonces seen
	// lookupFails answers GET /channels/{id} of these channels with the
	// status (FailChannelLookup).
	lookupFails map[string]int
	// everyone holds the @everyone role's permissions of the guilds
	// where they are not DefaultEveryone (SetEveryone).
	everyone map[string]int64
	// guildStates hold the guilds' owners, roles and members.
	guildStates map[string]*guildState

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
		nonces:       map[string]nonceUse{},
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

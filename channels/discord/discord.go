// Package discord is the Discord channel: a bot on the Gateway (intents
// GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT) that turns the
// messages meant for it into channels.Inbound and posts replies over REST.
//
// It is responsible for Discord's side of a conversation: filtering (its own
// messages, system messages, duplicates and replays, allowFrom,
// allowChannels, the mention policy), stripping the bot mention, session keys
// (`discord:<channel>` and `discord:<parent>:thread:<thread>`), splitting
// replies at 2000 characters, rate limits, the typing indicator (which never
// holds a reply up), streaming replies by throttled edits, text attachments
// read into the turn, the earlier messages handed over as context (a replied
// message, a thread's recent messages), the gateway's commands as slash
// commands (declared when changed, deferred answers through the interaction
// webhook, sha autocomplete), sharding, and reconnecting with backoff.
// Each Inbound carries its audience (a DM, a private channel or thread, a
// server, a place only a user installation reaches): a channel is the
// server's only when every member may view it, computed from the server's
// roles and the channel's permission overwrites as Discord computes
// permissions, and kept current from the gateway's channel, role, member
// and guild updates.
// discordgo types never leave this package.
//
// Of ours it imports only the channels contract (with its shared Delivery)
// and the audience and internal/backoff leaves; never the gateway or any
// other package of dreamgate.
package discord

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/gorilla/websocket"
)

// Name is the adapter name used in Inbound.Channel and session keys.
const Name = "discord"

// Group policies for guild channels.
const (
	PolicyMention   = "mention"   // answer only when the bot is mentioned or replied to
	PolicyOpen      = "open"      // answer every message
	PolicyAllowlist = "allowlist" // answer every message in allowChannels
)

// AutoShards as Config.ShardCount uses the shard count Discord recommends
// (GET /gateway/bot).
const AutoShards = -1

// MaxMessageLen is Discord's limit on a message, in characters.
const MaxMessageLen = 2000

// intents are the gateway intents the bot asks for; MESSAGE_CONTENT is
// privileged and must be enabled in the developer portal.
const intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// discordgo has no level below LogError; one below silences it without
// touching its package-level Logger.
const quietLogLevel = discordgo.LogError - 1

// Config configures the adapter.
type Config struct {
	Token         string   // bot token, without the "Bot " prefix (one is tolerated)
	APIURL        string   // "" = Discord's; else e.g. http://127.0.0.1:PORT: REST goes there and the gateway URL comes from its GET /api/v9/gateway
	AllowFrom     []string // user ids allowed to talk to the bot; empty (or "*") = everyone
	GroupPolicy   string   // mention (default) | open | allowlist
	AllowChannels []string // channel ids answered in guilds; empty = all; a thread's parent counts; DMs are exempt
	// Commands are declared to Discord as application (slash) commands on
	// start, globally or, when CommandGuilds lists guild ids, in those
	// guilds only (where changes show at once). Nil declares none.
	Commands      []channels.Command
	CommandGuilds []string
	// DreamLog lists up to limit recent Dream commits the asker's
	// audience may see, newest first, for the autocomplete of a "sha"
	// option; nil offers none.
	DreamLog func(ctx context.Context, asker audience.Audience, limit int) ([]DreamCommit, error)
	// ShardID and ShardCount split a large bot's guilds between processes:
	// this one connects as shard ShardID of ShardCount, and Discord sends
	// it the events of the guilds with (guild_id >> 22) % ShardCount ==
	// ShardID (direct messages go to shard 0). ShardCount 0 means no
	// sharding; AutoShards takes Discord's recommended count.
	ShardID    int
	ShardCount int
	// ShardLeases, when set, share the shards with the other processes
	// of one store (shards.go): this process connects as ShardID (or, as
	// AnyShard, a free one) only while it holds its lease, and stands by
	// otherwise, trying every StandbyPoll (0: 5 s).
	ShardLeases ShardLeases
	StandbyPoll time.Duration
	// GuildMembers asks for the privileged Server Members intent (switch
	// it on in the developer portal first), so that members' roles can be
	// followed: a channel hidden by a member overwrite from an
	// administrator or the owner, who see it anyway, stays the server's.
	// Without it such a channel is private to itself.
	GuildMembers bool
	// Stream shows long replies as they are written (throttled edits).
	Stream bool
	// MaxFileBytes caps a text attachment read into a turn; 0 means
	// DefaultMaxFileBytes. Larger files are named, not read.
	MaxFileBytes int
	// Images downloads image attachments (PNG, JPEG, GIF, WebP, up to
	// channels.MaxImageBytes) into Inbound.Images, for a model that reads
	// images; false names them with a marker.
	Images bool
	// SendRetry is how long a message that meets rate limits or server
	// errors is retried before it is dropped; 0 means
	// channels.DefaultSendRetry.
	SendRetry time.Duration
	// Posts, when set, records the parts of answers posted (by their
	// channels.PostKey, also their nonce), shared with the other
	// processes of one store; an answer sent again skips what it holds.
	Posts channels.PostLog
	// Handles, when set, keep slash commands' interaction tokens from the
	// deferral until they expire, shared with the other processes of one
	// store and kept across a restart, so a command deferred before a
	// restart is answered through its interaction after it. Nil keeps
	// them in this process's memory.
	Handles channels.ReplyHandles
	Logger  *slog.Logger
}

// tuning holds the timings; tests shorten them.
type tuning struct {
	backoffBase         time.Duration // first reconnect delay
	backoffMax          time.Duration // reconnect delay cap
	healthyAfter        time.Duration // a connection this old resets the backoff
	openTimeout         time.Duration // bound on one gateway handshake
	sendBackoff         time.Duration // first delay between send retries
	typingEvery         time.Duration // typing indicator refresh
	typingTimeout       time.Duration // bound on one typing call
	downloadTimeout     time.Duration // bound on one attachment download
	streamEvery         time.Duration // least time between a stream's posts and edits
	streamCallTimeout   time.Duration // bound on one streaming post or edit, or an interaction answer
	autocompleteTimeout time.Duration // bound on listing Dream commits for autocomplete
	// now, when set, is the clock of the interactions' 15 minutes.
	now func() time.Time
}

var defaultTuning = tuning{
	backoffBase:         time.Second,
	backoffMax:          30 * time.Second,
	healthyAfter:        30 * time.Second,
	openTimeout:         30 * time.Second,
	sendBackoff:         time.Second,
	typingEvery:         8 * time.Second,
	typingTimeout:       10 * time.Second,
	downloadTimeout:     30 * time.Second,
	streamEvery:         time.Second,
	streamCallTimeout:   10 * time.Second,
	autocompleteTimeout: 2 * time.Second,
}

// Adapter is the Discord channel.
type Adapter struct {
	log           *slog.Logger
	session       *discordgo.Session
	policy        string
	allowFrom     map[string]bool // nil = everyone
	allowChannels map[string]bool // nil = all
	tune          tuning
	watch         *openWatch
	maxFileBytes  int
	images        bool // download image attachments for the model (Config.Images)
	stream        bool
	posts         channels.PostLog // Config.Posts

	commands      []channels.Command
	commandGuilds []string
	dreamLog      func(ctx context.Context, asker audience.Audience, limit int) ([]DreamCommit, error)
	appID         atomic.Value // string; from GET /oauth2/applications/@me
	wantShard     int          // as configured: a shard, or AnyShard
	shardID       int          // the shard connected as
	shardCount    int          // as configured: 0, n or AutoShards
	shardLeases   ShardLeases
	standbyPoll   time.Duration

	ixMu         sync.Mutex
	interactions map[string]*interaction // by Inbound.MessageID
	// handles keep the interactions' tokens for whichever process answers
	// (Config.Handles, or this process's memory); localHandles those the
	// store could not keep.
	handles      channels.ReplyHandles
	localHandles channels.MemoryReplyHandles

	bg sync.WaitGroup // interaction answers, owned by Run

	streamsMu sync.Mutex
	streams   map[string]*stream // by channel and the message answered

	running atomic.Bool
	botID   atomic.Value // string; from GET /users/@me and READY

	chans *channelCache
	// names are people's and channels' names, for the memory page
	// (pagenames.go).
	names *channels.TTLCache[string]
	seen  *channels.RecentSet // message ids already handled
	// threadsRead holds the threads whose earlier messages were read into
	// a context already.
	threadsRead *channels.RecentSet
	refused     *channels.RecentSet // users already told they are not allowed

	servers *servers // roles, owners, the bot's roles, tracked members
	members bool     // the Server Members intent is asked for (Config.GuildMembers)

	health    *channels.HealthTracker
	sendRetry channels.SendRetry     // window from Config.SendRetry; tests inject a clock
	onQueued  func(messageID string) // test hook, called once a message is queued
}

var (
	_ channels.Channel        = (*Adapter)(nil)
	_ channels.Typer          = (*Adapter)(nil)
	_ channels.Streamer       = (*Adapter)(nil)
	_ channels.HealthReporter = (*Adapter)(nil)
)

// configError names the offending field.
type configError struct{ field, problem string }

func (e *configError) Error() string { return "discord." + e.field + ": " + e.problem }
func (e *configError) Unwrap() error { return ErrInvalidConfig }

// normalized checks cfg, naming the field at fault, and returns it with
// its defaults: the token without "Bot ", the mention policy, the file
// limit.
func (cfg Config) normalized() (Config, error) {
	cfg.Token = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cfg.Token), "Bot "))
	if cfg.Token == "" {
		return cfg, &configError{"token", "required (or set DISCORD_BOT_TOKEN)"}
	}
	if strings.ContainsAny(cfg.Token, " \t\r\n") {
		return cfg, &configError{"token", "must not contain whitespace"}
	}
	policy := strings.TrimSpace(cfg.GroupPolicy)
	switch policy {
	case "":
		policy = PolicyMention
	case PolicyMention, PolicyOpen, PolicyAllowlist:
	default:
		return cfg, &configError{"groupPolicy", fmt.Sprintf("must be %q, %q or %q, not %q", PolicyMention, PolicyOpen, PolicyAllowlist, cfg.GroupPolicy)}
	}
	cfg.GroupPolicy = policy
	if policy == PolicyAllowlist && idSet(cfg.AllowChannels) == nil {
		return cfg, &configError{"allowChannels", `must list at least one channel id when groupPolicy is "allowlist"`}
	}
	if cfg.MaxFileBytes < 0 {
		return cfg, &configError{"maxFileBytes", fmt.Sprintf("must not be negative, got %d", cfg.MaxFileBytes)}
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.SendRetry < 0 {
		return cfg, &configError{"sendRetry", fmt.Sprintf("must not be negative, got %s", cfg.SendRetry)}
	}
	switch {
	case cfg.ShardCount < AutoShards:
		return cfg, &configError{"shardCount", fmt.Sprintf(`must be a positive number or "auto", got %d`, cfg.ShardCount)}
	case cfg.ShardID == AnyShard && (cfg.ShardLeases == nil || cfg.ShardCount == 0):
		return cfg, &configError{"shardID", "any shard needs shardCount and a store whose processes share the shards"}
	case cfg.ShardID < AnyShard:
		return cfg, &configError{"shardID", fmt.Sprintf("must not be negative, got %d", cfg.ShardID)}
	case cfg.ShardCount > 0 && cfg.ShardID >= cfg.ShardCount:
		return cfg, &configError{"shardID", fmt.Sprintf("must be below shardCount (%d), got %d", cfg.ShardCount, cfg.ShardID)}
	case cfg.ShardCount == 0 && cfg.ShardID != 0:
		return cfg, &configError{"shardID", "needs shardCount"}
	}
	return cfg, nil
}

// apiTransport carries REST calls to Discord, or to apiURL when set.
func apiTransport(apiURL string) (http.RoundTripper, error) {
	var transport http.RoundTripper = newTransport()
	if apiURL == "" {
		return transport, nil
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not shown: it may hold credentials.
		return nil, &configError{"apiURL", "must be an http(s) URL such as http://127.0.0.1:8080"}
	}
	return rewriteTransport{base: u, next: transport}, nil
}

// New validates cfg and builds an adapter; it does not connect.
func New(cfg Config) (*Adapter, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, err
	}
	transport, err := apiTransport(cfg.APIURL)
	if err != nil {
		return nil, err
	}
	token, policy, allowChannels := cfg.Token, cfg.GroupPolicy, idSet(cfg.AllowChannels)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("create discord session: %w", err)
	}
	a := &Adapter{
		log:           logger.With("channel", Name),
		session:       s,
		policy:        policy,
		allowFrom:     idSet(cfg.AllowFrom),
		allowChannels: allowChannels,
		tune:          defaultTuning,
		watch:         &openWatch{},
		chans:         newChannelCache(maxCachedChannels, nil),
		names:         channels.NewTTLCache[string](maxCachedChannels, nil),
		seen:          channels.NewRecentSet(recentMessages),
		threadsRead:   channels.NewRecentSet(recentThreadsKnown),
		maxFileBytes:  cfg.MaxFileBytes,
		images:        cfg.Images,
		stream:        cfg.Stream,
		posts:         cfg.Posts,
		streams:       map[string]*stream{},
		commands:      cfg.Commands,
		commandGuilds: nonEmpty(cfg.CommandGuilds),
		dreamLog:      cfg.DreamLog,
		wantShard:     cfg.ShardID,
		shardID:       max(cfg.ShardID, 0),
		shardCount:    cfg.ShardCount,
		shardLeases:   cfg.ShardLeases,
		standbyPoll:   cfg.StandbyPoll,
		interactions:  map[string]*interaction{},
		handles:       cfg.Handles,
		refused:       channels.NewRecentSet(recentRefusals),
		servers:       newServers(nil),
		members:       cfg.GuildMembers,
		health:        channels.NewHealthTracker(),
		sendRetry:     channels.SendRetry{Window: cfg.SendRetry},
	}
	a.botID.Store("")
	a.appID.Store("")

	s.Client = &http.Client{Timeout: 20 * time.Second, Transport: transport}
	s.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 15 * time.Second,
		NetDialContext:   a.watch.dial,
	}
	s.LogLevel = quietLogLevel
	// Handlers run in the gateway's read loop, in order: messages of one
	// conversation must reach the gateway in the order they were posted.
	s.SyncEvents = true
	// The adapter keeps the little channel state it needs (thread parents).
	s.StateEnabled = false
	// The adapter owns reconnection (backoff with jitter, cancellable);
	// discordgo still resumes the session on the next Open.
	s.ShouldReconnectOnError = false
	s.ShouldReconnectVoiceOnSessionError = false
	// Send decides about 429s and retries itself, cancellably.
	s.ShouldRetryOnRateLimit = false
	s.MaxRestRetries = 0
	s.Identify.Intents = intents
	if cfg.GuildMembers {
		s.Identify.Intents |= discordgo.IntentsGuildMembers
	}
	return a, nil
}

func nonEmpty(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// idSet turns a list of ids into a set; nil means "no restriction" (empty
// list, or "*").
func idSet(ids []string) map[string]bool {
	set := map[string]bool{}
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "*" {
			return nil
		}
		if id != "" {
			set[id] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	return set
}

// Name implements channels.Channel.
func (a *Adapter) Name() string { return Name }

// Health implements channels.HealthReporter.
func (a *Adapter) Health() channels.Health { return a.health.Health() }

func (a *Adapter) bot() string { return a.botID.Load().(string) }

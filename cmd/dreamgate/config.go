package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/dreamgate/dreamgate/channels/discord"
	"github.com/dreamgate/dreamgate/channels/slack"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// Config is config.json. Every key is optional; defaultConfig holds the
// defaults, which docs/config.md lists.
type Config struct {
	Workspace string        `json:"workspace"`
	StateDir  string        `json:"stateDir"`
	LLM       LLMConfig     `json:"llm"`
	Agent     AgentConfig   `json:"agent"`
	Dream     DreamConfig   `json:"dream"`
	Memory    MemoryConfig  `json:"memory"`
	Admins    []string      `json:"admins"`
	Gateway   GatewayConfig `json:"gateway"`
	Web       WebConfig     `json:"web"`
	Channels  ChannelsCfg   `json:"channels"`
	Tools     ToolsConfig   `json:"tools"`
	Store     StoreConfig   `json:"store"`
	// Models are named models; Use says which serve each purpose. Without
	// them the llm keys are the one model of every purpose.
	Models map[string]ModelConfig `json:"models"`
	Use    UseConfig              `json:"use"`

	// path is the file the config came from ("" when none existed).
	path string
	// getenv resolves "${NAME}" in MCP server settings when they start.
	getenv func(string) string
	// fromEnv maps a field ("llm.baseURL") to the environment variable
	// that set it, so an error names what the user actually wrote.
	fromEnv map[string]string
	// withoutSecrets is set for a command that runs no channel and no
	// memory page (every command but the gateway): their tokens are
	// neither needed nor checked.
	withoutSecrets bool
}

// StoreConfig chooses where program state is kept: the files of the
// workspace and the state directory (the embedded engine, the default) or
// a PostgreSQL database.
type StoreConfig struct {
	// Postgres is the database's DSN (postgres://… or key=value pairs);
	// empty keeps the embedded engine. Never logged: it may hold a
	// password.
	Postgres string `json:"postgres"`
	// LeaseSeconds bounds how long the conversations and leases of a
	// gateway that died (or lost the database) stay its own before
	// another process on the database takes them over.
	LeaseSeconds int `json:"leaseSeconds"`
}

type LLMConfig struct {
	BaseURL        string  `json:"baseURL"`
	APIKey         string  `json:"apiKey"`
	Model          string  `json:"model"`
	ContextWindow  int     `json:"contextWindow"`
	MaxTokens      int     `json:"maxTokens"`
	Temperature    float32 `json:"temperature"`
	TimeoutSeconds int     `json:"timeoutSeconds"`
	// FirstByteSeconds bounds the wait for a streamed reply to begin when
	// another model of the chain can be asked (llm.Config.FirstByte).
	FirstByteSeconds int `json:"firstByteSeconds"`
	// Images shows the images people send to the model (it must read
	// image input); false names them with a marker instead.
	Images bool `json:"images"`
	// PromptCacheKey sends OpenAI's prompt_cache_key to an endpoint other
	// than api.openai.com (which always gets it).
	PromptCacheKey bool `json:"promptCacheKey"`
}

type AgentConfig struct {
	MaxToolIterations int     `json:"maxToolIterations"`
	ConsolidateRatio  float64 `json:"consolidateRatio"`
	TargetRatio       float64 `json:"targetRatio"`
	// ConversationTokens is the conversation's budget apart from the
	// window (consolidator.Config.ConversationTokens); 0 is nanobot's
	// rule, the ratios of the window alone.
	ConversationTokens      int `json:"conversationTokens"`
	IdleCompactAfterMinutes int `json:"idleCompactAfterMinutes"`
}

type DreamConfig struct {
	Enabled       bool   `json:"enabled"`
	Cron          string `json:"cron"`
	Timezone      string `json:"timezone"`
	Model         string `json:"model"`
	MaxBatchSize  int    `json:"maxBatchSize"`
	MaxIterations int    `json:"maxIterations"`
	// MaxBatchesPerRun bounds how many batches one run reads when a
	// backlog waits.
	MaxBatchesPerRun int `json:"maxBatchesPerRun"`
	// EphemeralDays is the age in days (since last confirmed) past which
	// an ephemeral memory line retires to cold memory.
	EphemeralDays int `json:"ephemeralDays"`
	// DeepEvery is the number of a scope's Dreams between two of its deep
	// Dreams; DeepAtShare the share of memory.hotTokens past which a
	// scope gets one at once, and which it is compacted back under.
	DeepEvery   int     `json:"deepEvery"`
	DeepAtShare float64 `json:"deepAtShare"`
}

// MemoryConfig is how memory is kept across audiences.
type MemoryConfig struct {
	// Scoped keeps memory per audience (a team, a person's DMs, a private
	// channel); false keeps one memory, the workspace root's, for every
	// conversation: everything anyone says may reach everyone.
	Scoped bool `json:"scoped"`
	// HotTokens is each scope's budget of memory in a chat prompt, which
	// Dream compacts a scope to; 0 is workspace.DefaultHotTokens of the
	// chat model's window (hotTokens gives the number in force).
	HotTokens int `json:"hotTokens"`
}

// hotTokens is the hot-memory budget of each scope in force: the config's,
// or the default for the smallest window of the chat chain (whichever
// model answers, the prompt fits it).
func (c *Config) hotTokens() int {
	if c.Memory.HotTokens > 0 {
		return c.Memory.HotTokens
	}
	return workspace.DefaultHotTokens(c.budget(llm.PurposeChat).window)
}

type GatewayConfig struct {
	HealthAddr         string `json:"healthAddr"`
	MaxConcurrentTurns int    `json:"maxConcurrentTurns"`
	MaxMessageBytes    int    `json:"maxMessageBytes"`
	// AnswerPendingMinutes: at start, messages a crash left unanswered
	// are answered when younger than this, else asked to be sent again;
	// 0 turns the search off.
	AnswerPendingMinutes int `json:"answerPendingMinutes"`
}

// WebConfig is the memory page (web.go).
type WebConfig struct {
	Enabled bool `json:"enabled"`
	// Addr is where it listens: loopback unless a token is set.
	Addr string `json:"addr"`
	// Token is the operator's access token; TokenEnv names an environment
	// variable to read it from instead (it wins over Token).
	Token    string `json:"token"`
	TokenEnv string `json:"tokenEnv"`
	// URL is where people's browsers reach the page (a proxy's address),
	// for the links /web-link sends; "" is http://addr.
	URL string `json:"url"`
}

type ChannelsCfg struct {
	Terminal TerminalConfig `json:"terminal"`
	Slack    SlackConfig    `json:"slack"`
	Discord  DiscordConfig  `json:"discord"`
}

type TerminalConfig struct {
	Enabled bool `json:"enabled"`
}

type SlackConfig struct {
	Enabled       bool     `json:"enabled"`
	BotToken      string   `json:"botToken"`
	AppToken      string   `json:"appToken"`
	APIURL        string   `json:"apiURL"`
	AllowFrom     []string `json:"allowFrom"`
	GroupPolicy   string   `json:"groupPolicy"`
	AllowChannels []string `json:"allowChannels"`
	ReplyInThread bool     `json:"replyInThread"`
	CommandPrefix string   `json:"commandPrefix"`
	MaxFileBytes  int64    `json:"maxFileBytes"`
	// SendRetryMinutes bounds the retries of one message through rate
	// limits and server errors.
	SendRetryMinutes int `json:"sendRetryMinutes"`
}

type DiscordConfig struct {
	Enabled       bool       `json:"enabled"`
	Token         string     `json:"token"`
	APIURL        string     `json:"apiURL"`
	AllowFrom     []string   `json:"allowFrom"`
	GroupPolicy   string     `json:"groupPolicy"`
	AllowChannels []string   `json:"allowChannels"`
	SlashCommands bool       `json:"slashCommands"`
	CommandGuilds []string   `json:"commandGuilds"`
	GuildMembers  bool       `json:"guildMembers"`
	MaxFileBytes  int        `json:"maxFileBytes"`
	Stream        bool       `json:"stream"`
	ShardID       ShardID    `json:"shardID"`
	ShardCount    ShardCount `json:"shardCount"`
	// SendRetryMinutes bounds the retries of one message through rate
	// limits and server errors.
	SendRetryMinutes int `json:"sendRetryMinutes"`
}

// ShardCount is channels.discord.shardCount: a number of shards, or "auto"
// (Discord's recommendation), kept as discord.AutoShards.
type ShardCount int

// UnmarshalJSON accepts a number or "auto".
func (n *ShardCount) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if strings.EqualFold(strings.TrimSpace(s), "auto") {
			*n = ShardCount(discord.AutoShards)
			return nil
		}
		return fmt.Errorf(`shardCount must be a number or "auto", not %q`, s)
	}
	var i int
	if err := json.Unmarshal(b, &i); err != nil {
		return fmt.Errorf(`shardCount must be a number or "auto": %w`, err)
	}
	*n = ShardCount(i)
	return nil
}

// MarshalJSON writes "auto" back as such.
func (n ShardCount) MarshalJSON() ([]byte, error) {
	if n == ShardCount(discord.AutoShards) {
		return []byte(`"auto"`), nil
	}
	return json.Marshal(int(n))
}

// ShardID is channels.discord.shardID: a shard, or "any" (the gateways on
// one database share the shards by lease), kept as discord.AnyShard.
type ShardID int

// UnmarshalJSON accepts a number or "any".
func (n *ShardID) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if strings.EqualFold(strings.TrimSpace(s), "any") {
			*n = ShardID(discord.AnyShard)
			return nil
		}
		return fmt.Errorf(`shardID must be a number or "any", not %q`, s)
	}
	var i int
	if err := json.Unmarshal(b, &i); err != nil {
		return fmt.Errorf(`shardID must be a number or "any": %w`, err)
	}
	*n = ShardID(i)
	return nil
}

// MarshalJSON writes "any" back as such.
func (n ShardID) MarshalJSON() ([]byte, error) {
	if n == ShardID(discord.AnyShard) {
		return []byte(`"any"`), nil
	}
	return json.Marshal(int(n))
}

// defaultConversationTokens is the conversation budget of a new config: a
// chat prompt then costs the system prompt plus 6–12K tokens of
// conversation, not up to half of a hosted model's window (64K of 128K).
// docs/config.md gives the measured trade-off.
const defaultConversationTokens = 12000

// minConversationTokens is the smallest conversation budget: below it a
// few long messages would be archived turn after turn.
const minConversationTokens = 2048

func defaultConfig() Config {
	return Config{
		Workspace: "~/.dreamgate/workspace",
		StateDir:  "~/.dreamgate",
		LLM: LLMConfig{
			BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.2",
			ContextWindow: 128000, MaxTokens: 4096, Temperature: 0.2, TimeoutSeconds: 120, FirstByteSeconds: 30,
		},
		Agent: AgentConfig{MaxToolIterations: 20, ConsolidateRatio: 0.5, TargetRatio: 0.3,
			ConversationTokens: defaultConversationTokens, IdleCompactAfterMinutes: 15},
		Dream: DreamConfig{Enabled: true, Cron: "0 */2 * * *", Timezone: "UTC", MaxBatchSize: 20, MaxIterations: 10, MaxBatchesPerRun: 5,
			EphemeralDays: dream.DefaultEphemeralDays, DeepEvery: dream.DefaultDeepEvery, DeepAtShare: dream.DefaultDeepAtShare},
		Memory: MemoryConfig{Scoped: true},
		Gateway: GatewayConfig{
			HealthAddr: "127.0.0.1:18790", MaxConcurrentTurns: 8, MaxMessageBytes: 64 << 10, AnswerPendingMinutes: 10,
		},
		Web:   WebConfig{Addr: defaultWebAddr},
		Store: StoreConfig{LeaseSeconds: defaultLeaseSeconds},
		Channels: ChannelsCfg{
			Terminal: TerminalConfig{Enabled: true},
			Slack: SlackConfig{GroupPolicy: "mention", ReplyInThread: true, MaxFileBytes: slack.DefaultMaxFileBytes,
				SendRetryMinutes: defaultSendRetryMinutes},
			Discord: DiscordConfig{GroupPolicy: "mention", SlashCommands: true, MaxFileBytes: discord.DefaultMaxFileBytes, Stream: true,
				SendRetryMinutes: defaultSendRetryMinutes},
		},
	}
}

// configError is an invalid config: it names the file and the field, and
// makes the process exit with code 2.
type configError struct {
	path, field, msg string
	// env is the environment variable the bad value came from, if any.
	env string
}

func (e *configError) Error() string {
	if e.env != "" {
		return fmt.Sprintf("environment variable %s: %s", e.env, e.msg)
	}
	where := e.path
	if where == "" {
		where = "config"
	}
	if e.field == "" {
		return fmt.Sprintf("%s: %s", where, e.msg)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.field, e.msg)
}

// defaultConfigPath is ~/.dreamgate/config.json.
func defaultConfigPath() string {
	return expandHome("~/.dreamgate/config.json")
}

// loadConfig reads path (a missing file means all defaults), applies the
// environment and validates, secrets included. Errors are *configError.
func loadConfig(path string, getenv func(string) string) (Config, error) {
	return loadConfigFor(path, getenv, true)
}

// loadConfigFor is loadConfig for a command that uses the channels' and
// the memory page's secrets (secrets) or not.
func loadConfigFor(path string, getenv func(string) string, secrets bool) (Config, error) {
	cfg := defaultConfig()
	cfg.path = path
	cfg.withoutSecrets = !secrets
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// Docker's short bind-mount syntax makes a directory of a file
		// missing on the host; say so rather than "is a directory".
		return cfg, &configError{path: path, msg: "is a directory, not a config file. In a container this happens when the " +
			"config.json bind-mounted there did not exist on the host (Docker created a directory in its place): " +
			"remove that directory, create the file (`{}` is a valid config) and start again"}
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		cfg.path = ""
	case err != nil:
		return cfg, &configError{path: path, msg: "cannot read: " + err.Error()}
	default:
		if err := decodeConfig(data, &cfg); err != nil {
			var ce *configError
			if !errors.As(err, &ce) {
				ce = &configError{msg: err.Error()}
			}
			ce.path = path
			return cfg, ce
		}
	}
	applyEnv(&cfg, getenv)
	if err := applyWebTokenEnv(&cfg, getenv); err != nil {
		err.path = path
		return cfg, err
	}
	if v := getenv(logLevelVar); v != "" {
		if _, err := parseLogLevel(v); err != nil {
			return cfg, &configError{path: path, env: logLevelVar, msg: err.Error()}
		}
	}
	cfg.getenv = getenv
	if err := resolveDirs(&cfg); err != nil {
		err.path = path
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		var ce *configError
		if errors.As(err, &ce) {
			ce.path = path
			ce.env = cfg.fromEnv[ce.field]
		}
		return cfg, err
	}
	return cfg, nil
}

// envVars are the environment variables that set config keys, in the
// order they are applied: a later one for the same key wins. They win over
// the file. docs/config.md lists them.
var envVars = []struct{ name, field string }{
	{"OPENAI_API_KEY", "llm.apiKey"},
	{"OPENAI_BASE_URL", "llm.baseURL"},
	{"OPENAI_MODEL", "llm.model"},
	{"DREAMGATE_MODEL", "llm.model"},
	{"SLACK_BOT_TOKEN", "channels.slack.botToken"},
	{"SLACK_APP_TOKEN", "channels.slack.appToken"},
	{"DISCORD_BOT_TOKEN", "channels.discord.token"},
	// The container image sets it: its health and metrics address must
	// be reachable from outside the container, whatever config is mounted.
	{"DREAMGATE_HEALTH_ADDR", "gateway.healthAddr"},
	// A DSN with a password is better kept out of the config file.
	{"DREAMGATE_POSTGRES_URL", "store.postgres"},
}

// applyEnv lets secrets, the endpoint and the model come from the
// environment, and remembers which variable set which field.
func applyEnv(cfg *Config, getenv func(string) string) {
	fields := map[string]*string{
		"llm.apiKey":              &cfg.LLM.APIKey,
		"llm.baseURL":             &cfg.LLM.BaseURL,
		"llm.model":               &cfg.LLM.Model,
		"channels.slack.botToken": &cfg.Channels.Slack.BotToken,
		"channels.slack.appToken": &cfg.Channels.Slack.AppToken,
		"channels.discord.token":  &cfg.Channels.Discord.Token,
		"gateway.healthAddr":      &cfg.Gateway.HealthAddr,
		"store.postgres":          &cfg.Store.Postgres,
	}
	for _, ev := range envVars {
		if v := getenv(ev.name); v != "" {
			*fields[ev.field] = v
			if cfg.fromEnv == nil {
				cfg.fromEnv = map[string]string{}
			}
			cfg.fromEnv[ev.field] = ev.name
		}
	}
}

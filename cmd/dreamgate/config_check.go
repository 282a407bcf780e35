package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord"
	"github.com/dreamgate/dreamgate/channels/slack"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// Validate checks every field and names the first bad one. The secrets of
// the chat platforms and of a memory page open to the network are checked
// only when the config was loaded for the command that uses them (the
// gateway): every other command runs without them (forCommand).
func (c *Config) Validate() error {
	for _, check := range []func() error{c.validateDirs, c.validateLLM, c.validateAgent, c.validateDream, c.validateGateway, c.validateChannels} {
		if err := check(); err != nil {
			return err
		}
	}
	if c.withoutSecrets {
		return nil
	}
	return c.validateSecrets()
}

// bad is a configError naming field.
func bad(field, format string, args ...any) error {
	return &configError{field: field, msg: fmt.Sprintf(format, args...)}
}

func (c *Config) validateDirs() error {
	if strings.TrimSpace(c.Workspace) == "" {
		return bad("workspace", "must not be empty")
	}
	if strings.TrimSpace(c.StateDir) == "" {
		return bad("stateDir", "must not be empty")
	}
	return checkStateDir(c)
}

func (c *Config) validateLLM() error {
	if err := checkURL("llm.baseURL", c.LLM.BaseURL); err != nil {
		return err
	}
	if strings.TrimSpace(c.LLM.Model) == "" {
		return bad("llm.model", "must name a model")
	}
	if c.LLM.ContextWindow < 2048 {
		return bad("llm.contextWindow", "must be at least 2048 tokens, got %d", c.LLM.ContextWindow)
	}
	if c.LLM.MaxTokens < 1 || c.LLM.MaxTokens > c.LLM.ContextWindow-2048 {
		return bad("llm.maxTokens", "must be between 1 and contextWindow-2048 (%d), got %d", c.LLM.ContextWindow-2048, c.LLM.MaxTokens)
	}
	if c.LLM.Temperature < 0 || c.LLM.Temperature > 2 {
		return bad("llm.temperature", "must be between 0 and 2, got %g", c.LLM.Temperature)
	}
	if c.LLM.TimeoutSeconds < 1 {
		return bad("llm.timeoutSeconds", "must be at least 1, got %d", c.LLM.TimeoutSeconds)
	}
	if c.LLM.FirstByteSeconds < 1 {
		return bad("llm.firstByteSeconds", "must be at least 1, got %d", c.LLM.FirstByteSeconds)
	}
	return c.validateModels()
}

func (c *Config) validateAgent() error {
	if c.Agent.MaxToolIterations < 1 {
		return bad("agent.maxToolIterations", "must be at least 1, got %d", c.Agent.MaxToolIterations)
	}
	if c.Agent.ConsolidateRatio <= 0 || c.Agent.ConsolidateRatio >= 1 {
		return bad("agent.consolidateRatio", "must be between 0 and 1, got %g", c.Agent.ConsolidateRatio)
	}
	if c.Agent.TargetRatio <= 0 || c.Agent.TargetRatio >= c.Agent.ConsolidateRatio {
		return bad("agent.targetRatio", "must be above 0 and below consolidateRatio (%g), got %g", c.Agent.ConsolidateRatio, c.Agent.TargetRatio)
	}
	if c.Agent.ConversationTokens != 0 && c.Agent.ConversationTokens < minConversationTokens {
		return bad("agent.conversationTokens", "must be 0 (the context window's rule) or at least %d tokens, got %d", minConversationTokens, c.Agent.ConversationTokens)
	}
	// A DM's prompt shows two scopes: at a quarter of the window each,
	// memory takes at most half of it.
	if w, h := c.budget(llm.PurposeChat).window, c.Memory.HotTokens; h != 0 && (h < workspace.MinHotTokens || h > w/4) {
		return bad("memory.hotTokens", "must be 0 (by the chat model's context window: %d) or between %d and a quarter of that window (%d), got %d",
			workspace.DefaultHotTokens(w), workspace.MinHotTokens, w/4, h)
	}
	if c.Agent.IdleCompactAfterMinutes < 0 {
		return bad("agent.idleCompactAfterMinutes", "must be 0 (off) or more, got %d", c.Agent.IdleCompactAfterMinutes)
	}
	return nil
}

func (c *Config) validateDream() error {
	if _, err := dream.ParseSchedule(c.Dream.Cron, c.Dream.Timezone); err != nil {
		var se *dream.ScheduleError
		if errors.As(err, &se) && se.Field == "timezone" {
			return bad("dream.timezone", "unknown time zone %q", c.Dream.Timezone)
		}
		if errors.As(err, &se) {
			return bad("dream.cron", "%s", se.Reason)
		}
		return bad("dream.cron", "%v", err)
	}
	if c.Dream.MaxBatchSize < 1 {
		return bad("dream.maxBatchSize", "must be at least 1, got %d", c.Dream.MaxBatchSize)
	}
	if c.Dream.MaxIterations < 1 {
		return bad("dream.maxIterations", "must be at least 1, got %d", c.Dream.MaxIterations)
	}
	if c.Dream.MaxBatchesPerRun < 1 {
		return bad("dream.maxBatchesPerRun", "must be at least 1, got %d", c.Dream.MaxBatchesPerRun)
	}
	if c.Dream.EphemeralDays < 1 {
		return bad("dream.ephemeralDays", "must be at least 1, got %d", c.Dream.EphemeralDays)
	}
	if c.Dream.DeepEvery < 1 {
		return bad("dream.deepEvery", "must be at least 1, got %d", c.Dream.DeepEvery)
	}
	if !(c.Dream.DeepAtShare > 0 && c.Dream.DeepAtShare <= 1) {
		return bad("dream.deepAtShare", "must be a share of memory.hotTokens above 0 and at most 1 (0.8 is 80%%), got %g", c.Dream.DeepAtShare)
	}
	return nil
}

func (c *Config) validateGateway() error {
	for i, a := range c.Admins {
		ch, id, ok := strings.Cut(a, ":")
		if !ok || id == "" || (ch != "slack" && ch != "discord" && ch != "terminal") {
			return bad(fmt.Sprintf("admins[%d]", i), `must look like "slack:U012AB3CD" or "discord:80351110224678912", got %q`, a)
		}
	}
	if c.Gateway.HealthAddr != "" && !validHostPort(c.Gateway.HealthAddr) {
		return bad("gateway.healthAddr", "must be host:port with a port from 0 to 65535, got %q", c.Gateway.HealthAddr)
	}
	if err := c.Tools.validate(); err != nil {
		return err
	}
	if c.Store.Postgres != "" {
		if err := postgres.CheckDSN(c.Store.Postgres); err != nil {
			return bad("store.postgres", "%v", err)
		}
	}
	if l := c.Store.LeaseSeconds; l < 3 || l > 3600 {
		return bad("store.leaseSeconds", "must be from 3 to 3600, got %d", l)
	}
	if err := c.Web.validate(); err != nil {
		return err
	}
	if c.Gateway.AnswerPendingMinutes < 0 {
		return bad("gateway.answerPendingMinutes", "must be 0 (off) or more, got %d", c.Gateway.AnswerPendingMinutes)
	}
	if c.Gateway.MaxConcurrentTurns < 1 {
		return bad("gateway.maxConcurrentTurns", "must be at least 1, got %d", c.Gateway.MaxConcurrentTurns)
	}
	if c.Gateway.MaxMessageBytes < 1024 || c.Gateway.MaxMessageBytes > 16<<20 {
		return bad("gateway.maxMessageBytes", "must be between 1024 and 16777216 (16 MiB), got %d", c.Gateway.MaxMessageBytes)
	}
	return nil
}

func (c *Config) validateChannels() error {
	// Every setting is checked whether its channel runs or not, so that a
	// typo is named now rather than on the day the channel is turned on;
	// tokens only where a channel runs (validateSecrets).
	s := c.Channels.Slack
	if err := checkPolicy("channels.slack", s.GroupPolicy, s.AllowChannels); err != nil {
		return err
	}
	if s.APIURL != "" {
		if err := checkURL("channels.slack.apiURL", s.APIURL); err != nil {
			return err
		}
	}
	if _, err := slack.CheckCommandPrefix(s.CommandPrefix); err != nil {
		return bad("channels.slack.commandPrefix", "%v", err)
	}
	if s.MaxFileBytes < 0 {
		return bad("channels.slack.maxFileBytes", "must not be negative, got %d", s.MaxFileBytes)
	}
	if err := checkSendRetry("channels.slack", s.SendRetryMinutes); err != nil {
		return err
	}
	d := c.Channels.Discord
	if err := checkPolicy("channels.discord", d.GroupPolicy, d.AllowChannels); err != nil {
		return err
	}
	if d.APIURL != "" {
		if err := checkURL("channels.discord.apiURL", d.APIURL); err != nil {
			return err
		}
	}
	if d.MaxFileBytes < 0 {
		return bad("channels.discord.maxFileBytes", "must not be negative, got %d", d.MaxFileBytes)
	}
	if err := checkSendRetry("channels.discord", d.SendRetryMinutes); err != nil {
		return err
	}
	switch n, id := int(d.ShardCount), int(d.ShardID); {
	case n < discord.AutoShards:
		return bad("channels.discord.shardCount", `must be a positive number or "auto", got %d`, n)
	case id == discord.AnyShard && (n == 0 || c.Store.Postgres == ""):
		return bad("channels.discord.shardID", `"any" needs channels.discord.shardCount and store.postgres (the gateways on one database share the shards)`)
	case id < discord.AnyShard:
		return bad("channels.discord.shardID", "must not be negative, got %d", id)
	case n > 0 && id >= n:
		return bad("channels.discord.shardID", "must be below shardCount (%d), got %d", n, id)
	case n == 0 && id != 0:
		return bad("channels.discord.shardID", "needs channels.discord.shardCount")
	}
	return nil
}

// validateSecrets checks what the gateway needs to run its channels and a
// memory page open to the network: their tokens.
func (c *Config) validateSecrets() error {
	if s := c.Channels.Slack; s.Enabled {
		if !strings.HasPrefix(s.BotToken, "xoxb-") {
			return bad("channels.slack.botToken", `must be a bot token starting with "xoxb-" (or set SLACK_BOT_TOKEN)`)
		}
		if !strings.HasPrefix(s.AppToken, "xapp-") {
			return bad("channels.slack.appToken", `must be an app-level token starting with "xapp-" (or set SLACK_APP_TOKEN)`)
		}
	}
	if d := c.Channels.Discord; d.Enabled && strings.TrimSpace(d.Token) == "" {
		return bad("channels.discord.token", "must be set (or set DISCORD_BOT_TOKEN)")
	}
	return c.Web.validateSecret()
}

// defaultSendRetryMinutes is channels.DefaultSendRetry in the config's unit.
const defaultSendRetryMinutes = int(channels.DefaultSendRetry / time.Minute)

// maxSendRetryMinutes caps a channel's sendRetryMinutes: a conversation's
// later replies wait behind a message being retried.
const maxSendRetryMinutes = 24 * 60

func checkSendRetry(prefix string, minutes int) error {
	if minutes < 1 || minutes > maxSendRetryMinutes {
		return &configError{field: prefix + ".sendRetryMinutes", msg: fmt.Sprintf("must be between 1 and %d, got %d", maxSendRetryMinutes, minutes)}
	}
	return nil
}

func checkPolicy(prefix, policy string, allow []string) error {
	switch policy {
	case "mention", "open":
		return nil
	case "allowlist":
		if len(allow) == 0 {
			return &configError{field: prefix + ".allowChannels", msg: `must list channel ids when groupPolicy is "allowlist"`}
		}
		return nil
	default:
		return &configError{field: prefix + ".groupPolicy", msg: fmt.Sprintf(`must be "mention", "open" or "allowlist", got %q`, policy)}
	}
}

// checkURL: raw must be an http:// or https:// URL with a host. The error
// shows raw redacted (a URL may carry a password or a token in its query)
// and says what is wrong in words of its own: net/url's errors quote the
// part they stumbled on, which may be a piece of the password.
func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	var why string
	switch {
	case err != nil:
		why = urlProblem(raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		why = "it must start with http:// or https://"
	case u.Host == "":
		why = "it names no host"
	case u.Port() != "" && !validPort(u.Port()):
		why = "its port is not a number from 0 to 65535"
	default:
		return nil
	}
	return &configError{field: field, msg: fmt.Sprintf("must be an http:// or https:// URL, got %q: %s", llm.RedactURL(raw), why)}
}

// urlProblem says why url.Parse refused a URL without quoting it.
func urlProblem(raw string, err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "invalid port") && strings.Contains(raw, "@"):
		// net/url splits the host off at the first "/", "?" or "#", which
		// may be in the password.
		return "its port is not a number, or its password holds a \"/\", \"?\" or \"#\", which must be percent-encoded (%2F, %3F, %23)"
	case strings.Contains(msg, "invalid port"):
		return "its port is not a number"
	case strings.Contains(msg, "invalid userinfo"):
		return "its user name or password holds a character that must be percent-encoded"
	case strings.Contains(msg, "in host name"), strings.Contains(msg, "in host"):
		return "its host name is not valid"
	case strings.Contains(msg, "control character"):
		return "it holds a control character"
	case strings.Contains(msg, "invalid URL escape"):
		return "it holds a % that does not start an escape such as %20"
	case strings.Contains(msg, "missing protocol scheme"), strings.Contains(msg, "first path segment"):
		return "it must start with http:// or https://"
	default:
		return "it does not parse as a URL"
	}
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// validHostPort: host:port with a numeric port from 0 to 65535 (net.Listen
// would only refuse a larger one when the gateway starts).
func validHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && validPort(port)
}

func validPort(port string) bool {
	_, err := strconv.ParseUint(port, 10, 16)
	return err == nil
}

// logLevelVar sets the log level of every command.
const logLevelVar = "DREAMGATE_LOG_LEVEL"

// parseLogLevel reads DREAMGATE_LOG_LEVEL's value.
func parseLogLevel(v string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(strings.TrimSpace(v)))); err != nil {
		return 0, fmt.Errorf("must be debug, info, warn or error, got %q", v)
	}
	return level, nil
}

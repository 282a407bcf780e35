package slack

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// Group policies: which channel messages (not DMs) the bot answers.
const (
	PolicyMention   = "mention"   // only posts that mention the bot (default)
	PolicyOpen      = "open"      // every post in every channel the bot is in
	PolicyAllowlist = "allowlist" // every post in AllowChannels
)

// Config is the adapter's configuration, as read from channels.slack.
type Config struct {
	BotToken, AppToken string // xoxb-…, xapp-…
	// APIURL is "" for Slack's own Web API, else e.g.
	// http://127.0.0.1:PORT/api/ (a missing trailing slash is added).
	APIURL        string
	AllowFrom     []string // user ids; empty = everyone
	GroupPolicy   string   // mention (default) | open | allowlist
	AllowChannels []string // channel ids; empty = all; DMs are exempt
	// ReplyInThread answers a top-level channel post in a thread of its own
	// (its own session). The config layer defaults it to true.
	ReplyInThread bool
	// Commands are the gateway's chat commands, declared as Slack slash
	// commands in the app manifest (cmd passes gateway.Commands()); /help
	// names them in the form that works on Slack.
	Commands []channels.Command
	// CommandPrefix goes before every slash command's name, for
	// workspaces where a name is taken: "dg-" answers /dg-dream. Slack's
	// own /status always wins, so /status needs one.
	CommandPrefix string
	// MaxFileBytes caps a file shared with a post that is read into the
	// turn; 0 means DefaultMaxFileBytes, a negative value reads none.
	MaxFileBytes int64
	// Images downloads the images of a post (PNG, JPEG, GIF, WebP, up to
	// channels.MaxImageBytes) into Inbound.Images, for a model that reads
	// images; false names them with a marker.
	Images bool
	// SendRetry is how long a message that meets rate limits or server
	// errors is retried before it is dropped; 0 means
	// channels.DefaultSendRetry.
	SendRetry time.Duration
	// AckWhenRecorded acknowledges a message's envelope only once the
	// gateway has recorded it, however long that takes — never at the
	// deadline that otherwise keeps Slack from sending a slow envelope
	// again. With several gateways on one store, Slack's resend goes to
	// another connection, whose process answers it (the shared inbox
	// knows it once), and a process killed before recording a message it
	// received leaves it to Slack's resend instead of losing it.
	AckWhenRecorded bool
	// Posts, when set, records the parts of answers posted (by their
	// channels.PostKey), shared with the other processes of one store;
	// an answer sent again asks it before asking Slack.
	Posts channels.PostLog
	// Handles, when set, keep slash commands' response_urls from their
	// acceptance until they expire, shared with the other processes of
	// one store and kept across a restart, so a command accepted before
	// a restart is answered through its response_url after it. Nil keeps
	// them in this process's memory.
	Handles channels.ReplyHandles
	Logger  *slog.Logger // nil = discard
}

// DefaultMaxFileBytes is Config.MaxFileBytes when it is 0.
const DefaultMaxFileBytes = 256 << 10

// commandPrefixRE is what Slack accepts in a command name (lower case,
// at most 32 characters with the name); the prefix leaves room for one.
var commandPrefixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,15}$`) })

// CheckCommandPrefix returns prefix as the adapter uses it (surrounding
// spaces and a leading "/" taken off), or an error saying what Slack
// accepts in a command name. The config layer calls it whether or not
// Slack is on, so that a bad prefix is named before the day it is.
func CheckCommandPrefix(prefix string) (string, error) {
	p := strings.TrimPrefix(strings.TrimSpace(prefix), "/")
	if p != "" && !commandPrefixRE().MatchString(p) {
		return p, fmt.Errorf("must be up to 16 lower-case letters, digits, - or _ (what Slack accepts in a command name), such as \"dg-\", got %q", prefix)
	}
	return p, nil
}

// normalize validates c and returns it with defaults applied. Errors name
// the field and never include a token.
func (c Config) normalize() (Config, error) {
	if err := checkToken("botToken", c.BotToken, "xoxb-", "SLACK_BOT_TOKEN"); err != nil {
		return c, err
	}
	if err := checkToken("appToken", c.AppToken, "xapp-", "SLACK_APP_TOKEN"); err != nil {
		return c, err
	}
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL is not shown: it may hold credentials.
			return c, &configError{"apiURL", "must be an http(s) URL such as http://127.0.0.1:8080/api/"}
		}
		if !strings.HasSuffix(c.APIURL, "/") {
			// slack-go appends method names as-is: ".../api" + "auth.test".
			c.APIURL += "/"
		}
	}
	c.GroupPolicy = strings.ToLower(strings.TrimSpace(c.GroupPolicy))
	if c.GroupPolicy == "" {
		c.GroupPolicy = PolicyMention
	}
	if !slices.Contains([]string{PolicyMention, PolicyOpen, PolicyAllowlist}, c.GroupPolicy) {
		return c, &configError{"groupPolicy", fmt.Sprintf("must be one of mention, open, allowlist (got %q)", c.GroupPolicy)}
	}
	c.AllowFrom = cleanIDs(c.AllowFrom)
	c.AllowChannels = cleanIDs(c.AllowChannels)
	if c.GroupPolicy == PolicyAllowlist && len(c.AllowChannels) == 0 {
		return c, &configError{"allowChannels", `must list at least one channel id when groupPolicy is "allowlist"`}
	}
	prefix, err := CheckCommandPrefix(c.CommandPrefix)
	if err != nil {
		return c, &configError{"commandPrefix", err.Error()}
	}
	c.CommandPrefix = prefix
	if c.MaxFileBytes == 0 {
		c.MaxFileBytes = DefaultMaxFileBytes
	}
	if c.SendRetry < 0 {
		return c, &configError{"sendRetry", fmt.Sprintf("must not be negative (got %s)", c.SendRetry)}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func checkToken(field, tok, prefix, env string) error {
	switch {
	case strings.TrimSpace(tok) == "":
		return &configError{field, fmt.Sprintf("missing (set it in the config file or %s)", env)}
	case !strings.HasPrefix(tok, prefix):
		return &configError{field, fmt.Sprintf("must start with %q", prefix)}
	}
	return nil
}

func cleanIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

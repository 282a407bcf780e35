package mcp

import (
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// Defaults for zero Config and ServerConfig fields.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxDelay = 5 * time.Minute
	baseDelay       = time.Second
	// DefaultMaxRunning is how many scopes' processes of a per-scope
	// server run at once: stdio servers are often Node or Python
	// programs of 50 MB or more each.
	DefaultMaxRunning = 4
	// DefaultIdleStop is how long a scope's process of a per-scope server
	// is kept after its last use.
	DefaultIdleStop = 10 * time.Minute
)

// ServerConfig is one MCP server. Exactly one of Command (a stdio server,
// started as a child process) and URL (a streamable HTTP endpoint) is set.
// "${NAME}" in Args, Env values, URL and Header values is replaced by the
// environment variable NAME when the server starts; an unset variable keeps
// the server from starting (and says which variable).
type ServerConfig struct {
	// Name is the config key; it becomes part of the tool names, so it is
	// letters, digits, '-' and '_' (ValidName).
	Name    string
	Command string
	Args    []string
	// Env is added to Config.BaseEnv for a stdio server ("NAME=value").
	Env     []string
	URL     string
	Headers map[string]string
	// Timeout bounds the server's start and each tool call; 0 means 30s.
	Timeout time.Duration
	// AllowTools, when non-empty, lists the tools offered (path.Match
	// patterns over the server's own tool names); DenyTools are never
	// offered. Deny wins.
	AllowTools, DenyTools []string
	// Use says which conversations may use the server and whether they
	// share one process: the zero value is UseOperator, the narrowest.
	Use Use
	// AdminsOnly offers the server's tools only in turns from admins, on
	// top of Use.
	AdminsOnly bool
	// MaxRunning caps how many scopes' processes of a UsePerScope server
	// run at once; 0 means DefaultMaxRunning.
	MaxRunning int
	// IdleStop stops a UsePerScope server's process for a scope that no
	// turn has used for this long; 0 means DefaultIdleStop.
	IdleStop time.Duration
}

// Use is who may use a server's tools, and with what state.
type Use string

const (
	// UseOperator (the zero Use): the operator at the terminal and admins
	// in their own DM with the bot, the conversations no one else reads.
	// A server whose use is not said is one of these: its state (notes,
	// files it can read) is nobody else's business.
	UseOperator Use = ""
	// UseShared: every conversation, one process for all. What the server
	// keeps or reads is shown to every audience.
	UseShared Use = "shared"
	// UsePerScope: every conversation, with one process per memory scope
	// (the conversation's home), started in a folder of its own and with
	// {scope} and {scopeDir} filled in, so no audience reaches another's
	// state.
	UsePerScope Use = "perScope"
)

// Valid reports whether u is one of the uses.
func (u Use) Valid() bool { return u == UseOperator || u == UseShared || u == UsePerScope }

// ConfigName is u as the config and /healthz spell it.
func (u Use) ConfigName() string {
	if u == UseOperator {
		return "operator"
	}
	return string(u)
}

// String is u in words, for /status.
func (u Use) String() string {
	switch u {
	case UseShared:
		return "shared"
	case UsePerScope:
		return "per scope"
	default:
		return "operator"
	}
}

// Turn is who a chat turn's tools are chosen for.
type Turn struct {
	// Scope is the conversation's home scope: where a per-scope server's
	// state is kept.
	Scope audience.Scope
	// Admin: the sender is an admin (the operator at the terminal is).
	Admin bool
	// Operator: the conversation is the operator's at the terminal, or an
	// admin's own DM with the bot; only these may use UseOperator servers.
	Operator bool
}

// Config configures a Manager.
type Config struct {
	Servers []ServerConfig
	// BaseEnv is the environment a stdio server starts with. cmd passes a
	// few harmless variables (PATH, HOME, …), not the gateway's own secrets.
	BaseEnv []string
	// Getenv resolves "${NAME}"; nil resolves nothing (every placeholder is
	// then unset).
	Getenv func(string) string
	// HTTPClient is used for streamable HTTP servers; nil means a client
	// without a timeout of its own (calls are bounded by Timeout).
	HTTPClient *http.Client
	// MaxDelay caps the wait between restarts of a failing server; 0 means
	// five minutes.
	MaxDelay time.Duration
	// StateDir holds the per-scope servers' folders,
	// <StateDir>/<server>/<scope>; a per-scope stdio server does not start
	// without it.
	StateDir string
	Logger   *slog.Logger
	Now      func() time.Time
}

var validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`) })

// ValidName reports whether name may name a server: 1–32 letters, digits,
// '-' or '_'.
func ValidName(name string) bool { return validName().MatchString(name) }

// ValidPattern reports whether p is a usable AllowTools/DenyTools entry.
func ValidPattern(p string) bool {
	if strings.TrimSpace(p) == "" {
		return false
	}
	_, err := path.Match(p, "")
	return err == nil
}

// placeholder is "${NAME}"; a bare "$NAME" is left alone, so values such
// as passwords may contain '$'.
var placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// missingEnvError names the unset variable; the name is safe to show, the
// value would not be.
type missingEnvError struct{ name, where string }

func (e *missingEnvError) Error() string {
	return fmt.Sprintf("%s: environment variable %s is not set", e.where, e.name)
}

// expand replaces every "${NAME}" in s.
func expand(s, where string, getenv func(string) string) (string, error) {
	var missing error
	out := placeholder().ReplaceAllStringFunc(s, func(m string) string {
		name := placeholder().FindStringSubmatch(m)[1]
		v := ""
		if getenv != nil {
			v = getenv(name)
		}
		if v == "" && missing == nil {
			missing = &missingEnvError{name: name, where: where}
		}
		return v
	})
	return out, missing
}

// matchAny reports whether name matches one of the patterns.
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// offered applies AllowTools and DenyTools to one of the server's tools.
func (c ServerConfig) offered(tool string) bool {
	if len(c.AllowTools) > 0 && !matchAny(c.AllowTools, tool) {
		return false
	}
	return !matchAny(c.DenyTools, tool)
}

func (c ServerConfig) transport() string {
	if c.URL != "" {
		return "http"
	}
	return "stdio"
}

// The placeholders of a per-scope server, filled in when a scope's process
// starts. "${scope}" is not one: that is the environment variable scope.
const (
	ScopeName = "{scope}"    // the scope's name ("default" for the operator's)
	ScopeDir  = "{scopeDir}" // the scope's folder, the process's working directory
)

// HasPlaceholder reports whether s holds the placeholder p (ScopeName or
// ScopeDir) outside an environment variable's "${…}".
func HasPlaceholder(s, p string) bool {
	return fillScope(s, map[string]string{p: "\x00"}) != s
}

// fillScope replaces each placeholder of values in s by its value, except
// where '$' comes before it.
func fillScope(s string, values map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		if s[i] == '{' && (i == 0 || s[i-1] != '$') {
			for p, v := range values {
				if strings.HasPrefix(s[i:], p) {
					b.WriteString(v)
					i += len(p)
					matched = true
					break
				}
			}
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// scopeFolder is the name of scope's folder under <StateDir>/<server>:
// the scope's own name, checked again (it becomes a path), or "default".
func scopeFolder(scope audience.Scope) (string, error) {
	if scope == audience.Default {
		return "default", nil
	}
	if _, err := audience.ParseScope(string(scope)); err != nil {
		return "", err
	}
	return string(scope), nil
}

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
)

// Defaults for zero Config and ServerConfig fields.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxDelay = 5 * time.Minute
	baseDelay       = time.Second
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
	// AdminsOnly offers the server's tools only in turns from admins.
	AdminsOnly bool
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

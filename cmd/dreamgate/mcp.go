package main

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/mcp"
)

// ToolsConfig is config.json's "tools".
type ToolsConfig struct {
	MCPServers map[string]MCPServerConfig `json:"mcpServers"`
}

// MCPServerConfig is one entry of tools.mcpServers: a stdio server
// (command, args, env) or a streamable HTTP one (url, headers). "${NAME}" in
// args, env values, url and header values is read from the environment when
// the server starts.
type MCPServerConfig struct {
	// Type is optional: "stdio" or "streamableHttp" (also "http"); it is
	// otherwise inferred from command or url.
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Enabled *bool             `json:"enabled"` // default true
	// TimeoutSeconds is 1 to 3600; absent (or null) means mcp's default
	// (30 s). An explicit 0 is refused rather than read as the default: it
	// reads as "no timeout", which is not on offer.
	TimeoutSeconds *int     `json:"timeoutSeconds"`
	AllowTools     []string `json:"allowTools"`
	DenyTools      []string `json:"denyTools"`
	// Audience says who may use the server: "shared" (every
	// conversation, one process), "perScope" (every conversation, a
	// process per memory scope) or "operator" (the terminal and admins'
	// own DMs). Absent, it is "operator" — or, with adminsOnly true,
	// "shared" for admins only, as adminsOnly always meant.
	Audience string `json:"audience"`
	// AdminsOnly narrows the server to turns from admins. An explicit
	// false without an audience is refused: it used to mean everyone.
	AdminsOnly *bool `json:"adminsOnly"`
	// MaxRunning (1-64, default 4) and IdleStopMinutes (1-1440, default
	// 10) are a per-scope server's cap and idle stop.
	MaxRunning      *int `json:"maxRunning"`
	IdleStopMinutes *int `json:"idleStopMinutes"`
}

const (
	maxMCPTimeoutSeconds = 3600
	maxMCPRunning        = 64
	maxMCPIdleMinutes    = 1440
)

// use is who may use the server (mcp.Use) and whether only admins may.
func (s MCPServerConfig) use() (mcp.Use, bool) {
	admins := s.AdminsOnly != nil && *s.AdminsOnly
	switch s.Audience {
	case "shared":
		return mcp.UseShared, admins
	case "perScope":
		return mcp.UsePerScope, admins
	case "":
		if admins {
			return mcp.UseShared, true
		}
	}
	return mcp.UseOperator, admins
}

func (s MCPServerConfig) enabled() bool { return s.Enabled == nil || *s.Enabled }

// validate checks tools.mcpServers, naming the first bad field.
func (t ToolsConfig) validate() error {
	names := make([]string, 0, len(t.MCPServers))
	for name := range t.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := t.MCPServers[name]
		field := "tools.mcpServers." + name
		bad := func(sub, format string, args ...any) error {
			return &configError{field: field + sub, msg: fmt.Sprintf(format, args...)}
		}
		if !mcp.ValidName(name) {
			return bad("", "a server name is 1-32 letters, digits, '-' or '_' (it becomes part of the tool names)")
		}
		switch s.Type {
		case "", "stdio", "streamableHttp", "http":
		case "sse":
			return bad(".type", `SSE servers are not supported; use the server's streamable HTTP endpoint ("url")`)
		default:
			return bad(".type", `must be "stdio" or "streamableHttp", got %q`, s.Type)
		}
		hasCmd, hasURL := strings.TrimSpace(s.Command) != "", strings.TrimSpace(s.URL) != ""
		switch {
		case hasCmd && hasURL:
			return bad("", `set either "command" (a stdio server) or "url" (a streamable HTTP server), not both`)
		case !hasCmd && !hasURL:
			return bad("", `set "command" (a stdio server) or "url" (a streamable HTTP server)`)
		case s.Type == "stdio" && !hasCmd:
			return bad(".command", `must be set for a stdio server`)
		case (s.Type == "streamableHttp" || s.Type == "http") && !hasURL:
			return bad(".url", `must be set for a streamable HTTP server`)
		}
		if hasURL {
			// Placeholders are filled in at start; the rest must be a URL.
			u, err := url.Parse(strings.NewReplacer("${", "", "}", "").Replace(s.URL))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return bad(".url", "must be an http:// or https:// URL")
			}
			if len(s.Args) > 0 || len(s.Env) > 0 {
				return bad("", `"args" and "env" are for stdio servers; an HTTP server takes "headers"`)
			}
		}
		if hasCmd && len(s.Headers) > 0 {
			return bad(".headers", `is for HTTP servers; a stdio server takes "env"`)
		}
		for k := range s.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return bad(".env", "invalid variable name %q", k)
			}
		}
		if t := s.TimeoutSeconds; t != nil && (*t < 1 || *t > maxMCPTimeoutSeconds) {
			return bad(".timeoutSeconds", "must be between 1 and %d seconds, got %d (leave it out for the default, %d)",
				maxMCPTimeoutSeconds, *t, int(mcp.DefaultTimeout.Seconds()))
		}
		for i, p := range s.AllowTools {
			if !mcp.ValidPattern(p) {
				return bad(fmt.Sprintf(".allowTools[%d]", i), "invalid tool name or pattern %q", p)
			}
		}
		for i, p := range s.DenyTools {
			if !mcp.ValidPattern(p) {
				return bad(fmt.Sprintf(".denyTools[%d]", i), "invalid tool name or pattern %q", p)
			}
		}
		if err := s.validateAudience(bad); err != nil {
			return err
		}
	}
	return nil
}

// validateAudience checks audience, adminsOnly, the per-scope settings
// and where {scope} and {scopeDir} may stand.
func (s MCPServerConfig) validateAudience(bad func(sub, format string, args ...any) error) error {
	switch s.Audience {
	case "", "shared", "operator", "perScope":
	default:
		return bad(".audience", `must be "shared", "perScope" or "operator", got %q`, s.Audience)
	}
	if s.Audience == "" && s.AdminsOnly != nil && !*s.AdminsOnly {
		return bad(".adminsOnly", `false no longer opens a server to every conversation: say who may use it with "audience": "shared", "perScope" or "operator"`)
	}
	perScope := s.Audience == "perScope"
	if v := s.MaxRunning; v != nil && (!perScope || *v < 1 || *v > maxMCPRunning) {
		if !perScope {
			return bad(".maxRunning", `is for a per-scope server ("audience": "perScope")`)
		}
		return bad(".maxRunning", "must be between 1 and %d, got %d", maxMCPRunning, *v)
	}
	if v := s.IdleStopMinutes; v != nil && (!perScope || *v < 1 || *v > maxMCPIdleMinutes) {
		if !perScope {
			return bad(".idleStopMinutes", `is for a per-scope server ("audience": "perScope")`)
		}
		return bad(".idleStopMinutes", "must be between 1 and %d minutes, got %d", maxMCPIdleMinutes, *v)
	}
	isHTTP := strings.TrimSpace(s.URL) != ""
	told := false // a per-scope HTTP server is told its scope somewhere
	for _, f := range s.placeholderFields() {
		hasScope, hasDir := mcp.HasPlaceholder(f.value, mcp.ScopeName), mcp.HasPlaceholder(f.value, mcp.ScopeDir)
		switch {
		case (hasScope || hasDir) && !perScope:
			return bad(f.field, `{scope} and {scopeDir} are filled in only for a per-scope server ("audience": "perScope")`)
		case hasDir && isHTTP:
			return bad(f.field, "{scopeDir} is a folder on this machine, which an HTTP server cannot use; use {scope}")
		}
		told = told || hasScope
	}
	if perScope && isHTTP && !told {
		return bad(".url", "a per-scope HTTP server needs {scope} in its url or a header, so that it can keep each scope's state apart")
	}
	return nil
}

// placeholderField is a config value that may hold {scope}, by its field.
type placeholderField struct{ field, value string }

// placeholderFields are the values of the server that are filled in when
// it starts, in a stable order.
func (s MCPServerConfig) placeholderFields() []placeholderField {
	out := []placeholderField{{".url", s.URL}}
	for i, a := range s.Args {
		out = append(out, placeholderField{fmt.Sprintf(".args[%d]", i), a})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		out = append(out, placeholderField{".env." + k, s.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		out = append(out, placeholderField{".headers." + k, s.Headers[k]})
	}
	return out
}

// inheritedEnv are the variables a stdio MCP server gets from the gateway's
// environment: enough to find and run programs, none of the gateway's own
// secrets (OPENAI_API_KEY, the channel tokens). Anything else goes in the
// server's "env".
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// mcpManager builds the MCP servers of the config; nil when none is enabled.
// Nothing starts until a chat turn asks for tools.
func (a *app) mcpManager() *mcp.Manager {
	if a.mcp != nil {
		return a.mcp
	}
	getenv := a.cfg.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg := mcp.Config{Getenv: getenv, Logger: a.logger.With("component", "mcp"), StateDir: filepath.Join(a.cfg.StateDir, "mcp")}
	for _, k := range inheritedEnv {
		if v := getenv(k); v != "" {
			cfg.BaseEnv = append(cfg.BaseEnv, k+"="+v)
		}
	}
	names := make([]string, 0, len(a.cfg.Tools.MCPServers))
	for name, s := range a.cfg.Tools.MCPServers {
		if s.enabled() {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	for _, name := range names {
		s := a.cfg.Tools.MCPServers[name]
		sc := mcp.ServerConfig{
			Name: name, Command: s.Command, Args: s.Args, URL: s.URL, Headers: s.Headers,
			AllowTools: s.AllowTools, DenyTools: s.DenyTools,
		}
		sc.Use, sc.AdminsOnly = s.use()
		if s.TimeoutSeconds != nil {
			sc.Timeout = time.Duration(*s.TimeoutSeconds) * time.Second
		}
		if s.MaxRunning != nil {
			sc.MaxRunning = *s.MaxRunning
		}
		if s.IdleStopMinutes != nil {
			sc.IdleStop = time.Duration(*s.IdleStopMinutes) * time.Minute
		}
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sc.Env = append(sc.Env, k+"="+s.Env[k])
		}
		cfg.Servers = append(cfg.Servers, sc)
	}
	a.mcp = mcp.New(cfg)
	a.logger.Info("MCP servers configured", "servers", len(cfg.Servers))
	return a.mcp
}

// mcpTools is the MCP manager as the gateway asks it for each turn's
// tools (gateway.TurnTools, gateway.RunningTools): the gateway does not
// import mcp, and says who a turn is for in its own words.
type mcpTools struct{ m *mcp.Manager }

func (t mcpTools) ForTurn(ctx context.Context, tt gateway.ToolTurn) []agent.Tool {
	return t.m.ForTurn(ctx, mcp.Turn(tt))
}

func (t mcpTools) StatusText(tt gateway.ToolTurn) string { return t.m.StatusText(mcp.Turn(tt)) }

func (t mcpTools) RunningTools(tt gateway.ToolTurn) ([]agent.Tool, int) {
	return t.m.RunningTools(mcp.Turn(tt))
}

// whoMayUse says, for dreamgate status, who may use the server and how
// its processes are shared.
func (s MCPServerConfig) whoMayUse() string {
	use, admins := s.use()
	who := "everyone"
	if admins {
		who = "admins only"
	}
	switch use {
	case mcp.UseShared:
		return who + ", one process for all"
	case mcp.UsePerScope:
		n := mcp.DefaultMaxRunning
		if s.MaxRunning != nil {
			n = *s.MaxRunning
		}
		return fmt.Sprintf("%s, a process per memory scope (at most %d at once)", who, n)
	}
	return "the operator and admins' own DMs"
}

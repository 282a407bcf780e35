package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

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
	AdminsOnly     bool     `json:"adminsOnly"`
}

const maxMCPTimeoutSeconds = 3600

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
	}
	return nil
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
	cfg := mcp.Config{Getenv: getenv, Logger: a.logger.With("component", "mcp")}
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
			AllowTools: s.AllowTools, DenyTools: s.DenyTools, AdminsOnly: s.AdminsOnly,
		}
		if s.TimeoutSeconds != nil {
			sc.Timeout = time.Duration(*s.TimeoutSeconds) * time.Second
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

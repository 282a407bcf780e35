package mcp

import (
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// expand fills in a config value as the process of s starts: a per-scope
// server's {scope} and {scopeDir} first, then "${NAME}" from the
// environment (so a variable's value is taken as it is).
func (s *server) expand(v, where string) (string, error) {
	if s.p.perScope() {
		v = fillScope(v, map[string]string{ScopeName: s.folder, ScopeDir: s.dir})
	}
	return expand(v, where, s.m.cfg.Getenv)
}

// transport opens the configured transport: a streamable HTTP client with
// the configured headers, or the command of a stdio server, with the
// gateway's harmless variables and its own, in its scope's folder when it
// is per scope.
func (s *server) transport(stderr *tail) (sdk.Transport, error) {
	field := "tools.mcpServers." + s.cfg.Name
	if s.cfg.URL != "" {
		endpoint, err := s.expand(s.cfg.URL, field+".url")
		if err != nil {
			return nil, err
		}
		h := http.Header{}
		for k, v := range s.cfg.Headers {
			v, err := s.expand(v, field+".headers."+k)
			if err != nil {
				return nil, err
			}
			h.Set(k, v)
		}
		base := s.m.cfg.HTTPClient
		if base == nil {
			base = &http.Client{}
		}
		rt := base.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		hc := *base
		hc.Transport = headerTransport{base: rt, h: h}
		return &sdk.StreamableClientTransport{
			Endpoint: endpoint, HTTPClient: &hc,
			// Only request/response is used; no server-initiated stream.
			DisableStandaloneSSE: true,
		}, nil
	}
	if err := s.makeDir(); err != nil {
		return nil, err
	}
	args := make([]string, len(s.cfg.Args))
	for i, a := range s.cfg.Args {
		var err error
		if args[i], err = s.expand(a, fmt.Sprintf("%s.args[%d]", field, i)); err != nil {
			return nil, err
		}
	}
	env := append([]string(nil), s.m.cfg.BaseEnv...)
	for _, kv := range s.cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		v, err := s.expand(v, field+".env."+k)
		if err != nil {
			return nil, err
		}
		env = append(env, k+"="+v)
	}
	// Not CommandContext: the process outlives the start's context.
	cmd := exec.Command(s.cfg.Command, args...)
	cmd.Env = env
	cmd.Dir = s.dir // "" (the gateway's own) unless per scope
	cmd.Stderr = stderr
	// A grandchild that keeps stderr open must not keep Close waiting.
	cmd.WaitDelay = 2 * terminateAfter
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil
}

// headerTransport adds the configured headers (secrets, usually) to every
// request to an HTTP server.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// tail keeps the last few KB a stdio server wrote to stderr, for the log
// line that says why it failed.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

package mcp

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// pool is one configured server and its processes (connections, for an
// HTTP server): the one process of a shared or an operator's server, or
// one per memory scope of a per-scope server, at most MaxRunning of them
// running at once, each stopped after IdleStop without use.
//
// One mutex guards the pool and every one of its servers' state, so that
// a start is decided against the others (the cap) without an order of
// locks to keep.
type pool struct {
	m   *Manager
	cfg ServerConfig
	log *slog.Logger

	mu sync.Mutex
	// servers holds the pool's servers by scope: per-scope servers under
	// their scope, the one process of another under audience.Default. A
	// scope's server stays when its process stops (its failures and
	// backoff with it), so that tools handed to a turn keep working: a
	// call starts it again. One small struct per scope ever used.
	servers map[audience.Scope]*server
	closed  bool // Close has begun: no new server
}

func newPool(m *Manager, cfg ServerConfig) *pool {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	if cfg.IdleStop <= 0 {
		cfg.IdleStop = DefaultIdleStop
	}
	return &pool{m: m, cfg: cfg, log: m.log.With("mcp_server", cfg.Name), servers: map[audience.Scope]*server{}}
}

func (p *pool) perScope() bool { return p.cfg.Use == UsePerScope }

// allows reports whether a turn of t may use the server.
func (p *pool) allows(t Turn) bool {
	if p.cfg.AdminsOnly && !t.Admin {
		return false
	}
	switch p.cfg.Use {
	case UseShared, UsePerScope:
		return true
	default:
		return t.Operator
	}
}

// key is the servers key of a turn in scope.
func (p *pool) key(scope audience.Scope) audience.Scope {
	if p.perScope() {
		return scope
	}
	return audience.Default
}

// serverFor returns the server of scope, made on first use. A per-scope
// server's scope must be a valid name: it becomes a folder.
func (p *pool) serverFor(scope audience.Scope) (*server, error) {
	key := p.key(scope)
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.servers[key]; s != nil {
		return s, nil
	}
	if p.closed {
		return nil, errClosed
	}
	s := &server{m: p.m, p: p, cfg: p.cfg, log: p.log, mu: &p.mu, scope: key}
	if p.perScope() {
		folder, err := scopeFolder(key)
		if err != nil {
			return nil, fmt.Errorf("scope of a per-scope server: %w", err)
		}
		s.folder = folder
		s.log = p.log.With("scope", folder)
		if p.m.cfg.StateDir != "" {
			s.dir = filepath.Join(p.m.cfg.StateDir, p.cfg.Name, folder)
		}
	}
	p.servers[key] = s
	return s, nil
}

// lookup returns the server of scope, or nil when it was never made.
func (p *pool) lookup(scope audience.Scope) *server {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.servers[p.key(scope)]
}

// admit decides whether s may start now; the caller holds p.mu. A
// per-scope server at its cap makes room by stopping the process used
// longest ago that has no call in flight; when every process is busy, s
// does not start (its turn goes without the server's tools).
func (p *pool) admit(s *server) error {
	if !p.perScope() {
		return nil
	}
	running := 0
	var victim *server
	for _, o := range p.servers {
		if o == s || !o.runningLocked() {
			continue
		}
		running++
		if o.starting == nil && o.inFlight == 0 && (victim == nil || o.lastUsed.Before(victim.lastUsed)) {
			victim = o
		}
	}
	if running < p.cfg.MaxRunning {
		return nil
	}
	if victim == nil {
		p.log.Warn("MCP server at its cap, every process busy: a turn goes without its tools",
			"scope", s.folder, "running", running)
		return &downError{name: p.cfg.Name, problem: fmt.Sprintf("it runs for at most %d conversations at once, and all of them are busy", p.cfg.MaxRunning)}
	}
	p.log.Info("MCP server stopped for another scope: at its cap", "scope", victim.folder, "for", s.folder, "running", running)
	p.m.background(victim.stopLocked())
	return nil
}

// stopIdle stops the per-scope processes no turn has used for IdleStop.
func (p *pool) stopIdle(now time.Time) {
	if !p.perScope() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.servers {
		if s.sess == nil || s.inFlight > 0 || now.Sub(s.lastUsed) < p.cfg.IdleStop {
			continue
		}
		p.log.Info("MCP server stopped: idle", "scope", s.folder, "idle", now.Sub(s.lastUsed).Round(time.Second))
		p.m.background(s.stopLocked())
	}
}

// running counts the pool's processes that run or are starting.
func (p *pool) running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.servers {
		if s.runningLocked() {
			n++
		}
	}
	return n
}

// status is the pool's state for the operator (Status, /healthz): a
// per-scope server is "ready" while a scope's process runs, "down" when
// the last start of a scope failed and none runs.
func (p *pool) status() ServerStatus {
	st := ServerStatus{Name: p.cfg.Name, Transport: p.cfg.transport(), Use: p.cfg.Use.ConfigName(), AdminsOnly: p.cfg.AdminsOnly, State: stateIdle}
	servers := p.all()
	if !p.perScope() {
		if len(servers) == 1 {
			st = servers[0].status(st)
		}
		return st
	}
	st.MaxRunning = p.cfg.MaxRunning
	var down *ServerStatus
	for _, s := range servers {
		ss := s.status(st)
		switch ss.State {
		case stateReady, stateStarting:
			st.Running++
			if ss.State == stateReady {
				st.Tools = ss.Tools
			}
		case stateDown:
			if down == nil || ss.RetryAt.After(down.RetryAt) {
				down = &ss
			}
		}
	}
	switch {
	case st.Running > 0:
		st.State = stateReady
	case down != nil:
		st.State, st.Problem, st.Failures, st.RetryAt = stateDown, down.Problem, down.Failures, down.RetryAt
	}
	return st
}

// statusLine is the pool's /status line for a turn of t: a per-scope
// server's state is that of t's scope, and only the operator (and an
// admin in a DM) reads how many scopes' processes run.
func (p *pool) statusLine(t Turn, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- %s (%s, %s", p.cfg.Name, p.cfg.transport(), p.cfg.Use)
	if p.cfg.AdminsOnly {
		b.WriteString(", admins only")
	}
	b.WriteString("): ")
	st := ServerStatus{State: stateIdle}
	if s := p.lookup(t.Scope); s != nil {
		st = s.status(st)
	}
	switch st.State {
	case stateReady:
		if st.Tools == 1 {
			b.WriteString("ready, 1 tool")
		} else {
			fmt.Fprintf(&b, "ready, %d tools", st.Tools)
		}
	case stateDown:
		b.WriteString("down: " + st.Problem)
		if d := st.RetryAt.Sub(now); d > 0 {
			fmt.Fprintf(&b, "; next start in %s", d.Round(time.Second))
		} else {
			b.WriteString("; starts again on next use")
		}
	default:
		b.WriteString(st.State)
	}
	if p.perScope() && t.Operator {
		fmt.Fprintf(&b, " (%d of at most %d scopes running)", p.running(), p.cfg.MaxRunning)
	}
	return b.String() + "\n"
}

// all returns the pool's servers.
func (p *pool) all() []*server {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*server, 0, len(p.servers))
	for _, s := range p.servers {
		out = append(out, s)
	}
	return out
}

// shutdown closes every process of the pool for good.
func (p *pool) shutdown() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for _, s := range p.all() {
		s.shutdown()
	}
}

// makeDir makes a per-scope server's folder, owner-only (it holds what
// the server keeps of one audience).
func (s *server) makeDir() error {
	if !s.p.perScope() || s.cfg.URL != "" {
		return nil
	}
	if s.dir == "" {
		return errNoStateDir
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("make the scope's folder: %w", err)
	}
	return nil
}

// stopLocked stops s's process, not for good: the next use starts it
// again. The caller holds s.mu and runs the returned close (which may
// wait for the process to exit) without it.
func (s *server) stopLocked() func() {
	sess := s.sess
	s.sess, s.tools, s.stderr = nil, nil, nil
	s.state, s.problem = stateIdle, ""
	return func() {
		if sess != nil {
			_ = sess.Close()
		}
	}
}

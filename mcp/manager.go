package mcp

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/agent"
)

// Manager owns the MCP servers of one gateway. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	pools []*pool

	// ctx bounds every start and connection; Close cancels it.
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // starts, connection watchers, stops, the idle sweep
	bgMu    sync.Mutex
	closing bool // under bgMu: Close waits; background runs work in place
}

// New builds a Manager. Nothing starts until a turn asks for tools; a
// per-scope server's idle processes are looked for every minute at most.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, now: cfg.Now}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	sweep := time.Duration(0)
	for _, sc := range cfg.Servers {
		p := newPool(m, sc)
		m.pools = append(m.pools, p)
		if p.perScope() {
			sweep = min(cmp0(sweep, p.cfg.IdleStop/4), time.Minute)
		}
	}
	if sweep > 0 {
		sweep = max(sweep, time.Second)
		m.wg.Go(func() { m.sweepEvery(sweep) })
	}
	return m
}

// cmp0 is b when a is 0, else the smaller.
func cmp0(a, b time.Duration) time.Duration {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// sweepEvery stops idle per-scope processes every d until Close. The
// clock that says what is idle is cfg.Now; d only says when to look.
func (m *Manager) sweepEvery(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
			m.stopIdle()
		}
	}
}

// stopIdle stops every per-scope process no turn has used for its
// server's IdleStop.
func (m *Manager) stopIdle() {
	now := m.now()
	for _, p := range m.pools {
		p.stopIdle(now)
	}
}

// background runs f in a goroutine Close waits for; once Close has begun,
// it runs f at once instead.
func (m *Manager) background(f func()) {
	m.bgMu.Lock()
	if m.closing {
		m.bgMu.Unlock()
		f()
		return
	}
	m.wg.Add(1)
	m.bgMu.Unlock()
	go func() {
		defer m.wg.Done()
		f()
	}()
}

// ForTurn returns the tools of a turn: those of every server t may use
// (a per-scope server's process of t's scope), starting servers that have
// not started yet or died, in parallel. A server that cannot start within
// its timeout, waits for its next restart, or is at its cap with every
// process busy, adds nothing. It never fails.
func (m *Manager) ForTurn(ctx context.Context, t Turn) []agent.Tool {
	m.stopIdle()
	lists := make([][]*tool, len(m.pools))
	var wg sync.WaitGroup
	for i, p := range m.pools {
		if !p.allows(t) {
			continue
		}
		s, err := p.serverFor(t.Scope)
		if err != nil {
			p.log.Warn("MCP server left out of a turn", "err", err)
			continue
		}
		wg.Go(func() {
			_, ts, err := s.ensure(ctx)
			if err == nil {
				lists[i] = ts
			}
		})
	}
	wg.Wait()
	return m.merge(lists)
}

// RunningTools returns what ForTurn would return now from the servers that
// are running, without starting any (for /status), and how many servers
// t may use are not running: a turn would try to start those.
func (m *Manager) RunningTools(t Turn) (tools []agent.Tool, notRunning int) {
	lists := make([][]*tool, len(m.pools))
	for i, p := range m.pools {
		if !p.allows(t) {
			continue
		}
		s := p.lookup(t.Scope)
		if s == nil {
			notRunning++
			continue
		}
		s.mu.Lock()
		if s.sess != nil {
			lists[i] = s.tools
		} else {
			notRunning++
		}
		s.mu.Unlock()
	}
	return m.merge(lists), notRunning
}

// merge joins the servers' tool lists. Two servers can produce one name
// ("a_b" with tool "c", "a" with tool "b_c"); the later one is left out,
// since a duplicate name would make the whole turn's tool set invalid.
func (m *Manager) merge(lists [][]*tool) []agent.Tool {
	var out []agent.Tool
	seen := map[string]string{}
	for _, ts := range lists {
		for _, t := range ts {
			name := t.def.Name
			if first, dup := seen[name]; dup {
				m.log.Warn("MCP tool left out: another server's tool has the same name",
					"tool", name, "mcp_server", t.srv.cfg.Name, "kept", first)
				continue
			}
			seen[name] = t.srv.cfg.Name
			out = append(out, t)
		}
	}
	return out
}

// ServerStatus is one server's state, for the operator (/healthz).
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // "stdio" or "http"
	// Use is "operator", "shared" or "perScope".
	Use string `json:"use"`
	// State is "not started", "starting", "ready" or "down". A per-scope
	// server is ready while the process of one scope runs.
	State      string `json:"state"`
	Tools      int    `json:"tools"`
	AdminsOnly bool   `json:"adminsOnly,omitempty"`
	// Running and MaxRunning are a per-scope server's: how many scopes'
	// processes run (or start), and its cap.
	Running    int `json:"running,omitempty"`
	MaxRunning int `json:"maxRunning,omitempty"`
	// Problem says why the server is down, in words safe to show anyone
	// (no paths, URLs or output); the log has the details.
	Problem string `json:"problem,omitempty"`
	// Failures counts failed starts and deaths since the last good call.
	Failures int `json:"failures,omitempty"`
	// RetryAt is the earliest next start of a down server.
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// Status reports every server, in config order.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(m.pools))
	for _, p := range m.pools {
		out = append(out, p.status())
	}
	return out
}

// Healthy reports whether no server is down.
func (m *Manager) Healthy() bool {
	for _, s := range m.Status() {
		if s.State == stateDown {
			return false
		}
	}
	return true
}

// StatusText is the /status block of a turn of t: one line for each
// server t may use (a per-scope server's, of t's scope); "" when there
// is none.
func (m *Manager) StatusText(t Turn) string {
	var b strings.Builder
	now := m.now()
	for _, p := range m.pools {
		if p.allows(t) {
			b.WriteString(p.statusLine(t, now))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "MCP servers:\n" + b.String()
}

// Close stops every server and waits for the goroutines it started.
func (m *Manager) Close() error {
	m.cancel()
	m.bgMu.Lock()
	m.closing = true
	m.bgMu.Unlock()
	for _, p := range m.pools {
		p.shutdown()
	}
	m.wg.Wait()
	return nil
}

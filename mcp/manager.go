package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/agent"
)

// Manager owns the MCP servers of one gateway. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	servers []*server

	// ctx bounds every start and connection; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // starts and connection watchers
}

// New builds a Manager. Nothing starts until a turn asks for tools.
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
	for _, sc := range cfg.Servers {
		if sc.Timeout <= 0 {
			sc.Timeout = DefaultTimeout
		}
		m.servers = append(m.servers, &server{m: m, cfg: sc, log: m.log.With("mcp_server", sc.Name)})
	}
	return m
}

// ForTurn returns the tools of a turn: those of every server the sender may
// use (admin: the sender is an admin), starting servers that have not
// started yet or died, in parallel. A server that cannot start within its
// timeout, or waits for its next restart, adds nothing. It never fails.
func (m *Manager) ForTurn(ctx context.Context, admin bool) []agent.Tool {
	lists := make([][]*tool, len(m.servers))
	var wg sync.WaitGroup
	for i, s := range m.servers {
		if s.cfg.AdminsOnly && !admin {
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
// the sender may use are not running: a turn would try to start those.
func (m *Manager) RunningTools(admin bool) (tools []agent.Tool, notRunning int) {
	lists := make([][]*tool, len(m.servers))
	for i, s := range m.servers {
		if s.cfg.AdminsOnly && !admin {
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

// ServerStatus is one server's state, for /status and /healthz.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"` // "stdio" or "http"
	// State is "not started", "starting", "ready" or "down".
	State      string `json:"state"`
	Tools      int    `json:"tools"`
	AdminsOnly bool   `json:"adminsOnly,omitempty"`
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
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
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

// StatusText is the /status block: one line per server.
func (m *Manager) StatusText() string {
	if len(m.servers) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("MCP servers:\n")
	now := m.now()
	for _, s := range m.Status() {
		fmt.Fprintf(&b, "- %s (%s", s.Name, s.Transport)
		if s.AdminsOnly {
			b.WriteString(", admins only")
		}
		b.WriteString("): ")
		switch s.State {
		case stateReady:
			if s.Tools == 1 {
				b.WriteString("ready, 1 tool")
			} else {
				fmt.Fprintf(&b, "ready, %d tools", s.Tools)
			}
		case stateDown:
			b.WriteString("down: " + s.Problem)
			if d := s.RetryAt.Sub(now); d > 0 {
				fmt.Fprintf(&b, "; next start in %s", d.Round(time.Second))
			} else {
				b.WriteString("; starts again on next use")
			}
		default:
			b.WriteString(s.State)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Close stops every server and waits for the goroutines it started.
func (m *Manager) Close() error {
	m.cancel()
	for _, s := range m.servers {
		s.shutdown()
	}
	m.wg.Wait()
	return nil
}

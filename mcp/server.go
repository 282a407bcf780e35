package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/backoff"
	"github.com/dreamgate/dreamgate/llm"
)

// Server states, as Status reports them.
const (
	stateIdle     = "not started"
	stateStarting = "starting"
	stateReady    = "ready"
	stateDown     = "down"
)

// terminateAfter is how long a stdio server may take to exit after its
// stdin is closed before it is sent SIGTERM (and later SIGKILL).
const terminateAfter = 2 * time.Second

// server is one process of a configured MCP server (one connection, for
// an HTTP server): its pool's only one, or a per-scope server's for one
// scope.
type server struct {
	m   *Manager
	p   *pool
	cfg ServerConfig
	log *slog.Logger
	// scope, folder and dir are a per-scope server's: the scope it runs
	// for, its name in paths and placeholders, and its folder (the stdio
	// process's working directory).
	scope       audience.Scope
	folder, dir string

	mu       *sync.Mutex        // the pool's
	sess     *sdk.ClientSession // nil when not connected
	tools    []*tool
	state    string // "" means stateIdle
	problem  string
	fails    int
	retryAt  time.Time
	starting chan struct{} // closed when the running start ends
	stderr   *tail         // of the running stdio process
	closed   bool
	// lastUsed is when a turn last asked for the server or called it;
	// inFlight counts its calls running. A per-scope process is stopped
	// only when idle (pool.stopIdle, pool.admit).
	lastUsed time.Time
	inFlight int
	// lostHook, when set, runs after a lost connection is recorded (tests
	// wait on it instead of polling).
	lostHook func()
}

// downError is what a turn or a call gets from a server that is not
// running; its text is safe to show the model.
type downError struct {
	name, problem string
	retryIn       time.Duration
}

func (e *downError) Error() string {
	msg := fmt.Sprintf("MCP server %s is unavailable (%s)", e.name, e.problem)
	if e.retryIn > 0 {
		msg += fmt.Sprintf("; it will be started again in %s", e.retryIn.Round(time.Second))
	}
	return msg + "."
}

var (
	errClosed     = errors.New("the MCP servers are shut down")
	errNoStateDir = errors.New("a per-scope server needs the state directory for its folders")
)

// ensure returns the live session and its tools, starting the server when
// it is not running and its restart delay has passed. Concurrent callers
// share one start; each waits at most until its ctx ends.
func (s *server) ensure(ctx context.Context) (*sdk.ClientSession, []*tool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, errClosed
	}
	s.lastUsed = s.m.now()
	if s.sess != nil {
		defer s.mu.Unlock()
		return s.sess, s.tools, nil
	}
	if s.starting == nil {
		if wait := s.retryAt.Sub(s.m.now()); wait > 0 {
			defer s.mu.Unlock()
			return nil, nil, &downError{name: s.cfg.Name, problem: s.problem, retryIn: wait}
		}
		if err := s.p.admit(s); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		ch := make(chan struct{})
		s.starting, s.state = ch, stateStarting
		s.m.wg.Go(func() { s.start(ch) })
	}
	ch := s.starting
	s.mu.Unlock()

	select {
	case <-ch:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil, nil, &downError{name: s.cfg.Name, problem: s.problem, retryIn: s.retryAt.Sub(s.m.now())}
	}
	return s.sess, s.tools, nil
}

// start connects, lists the tools and records the outcome; it closes done
// when it is over.
func (s *server) start(done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithTimeout(s.m.ctx, s.cfg.Timeout)
	defer cancel()
	began := s.m.now()
	stderr := &tail{}
	sess, tools, err := s.connect(ctx, stderr)

	s.mu.Lock()
	s.starting = nil
	if err == nil && s.closed {
		err = errClosed
	}
	if err != nil {
		problem := "could not start"
		var miss *missingEnvError
		switch {
		case errors.As(err, &miss):
			problem = miss.Error()
		case errors.Is(err, errNoStateDir):
			problem = errNoStateDir.Error()
		case ctx.Err() != nil && s.m.ctx.Err() == nil:
			problem = fmt.Sprintf("did not start within %s", s.cfg.Timeout)
		}
		s.down(problem)
		fails, retryAt := s.fails, s.retryAt
		s.mu.Unlock()
		if s.m.ctx.Err() == nil { // not merely cut short by Close
			s.log.Warn("MCP server failed to start", "err", llm.RedactError(err, ""), "stderr", stderr.String(),
				"failures", fails, "retry_at", retryAt)
		}
		if sess != nil {
			_ = sess.Close()
		}
		return
	}
	s.sess, s.tools, s.stderr = sess, tools, stderr
	s.state, s.problem = stateReady, ""
	s.mu.Unlock()
	s.log.Info("MCP server started", "transport", s.cfg.transport(), "tools", len(tools),
		"took", s.m.now().Sub(began).Round(time.Millisecond))
	// The watcher notices a server that exits between calls.
	s.m.wg.Go(func() {
		err := sess.Wait()
		s.lost(sess, "it exited", err)
	})
}

// down records a failure: the server is down and its next start waits
// for a delay that doubles with each failure in a row (the first restart
// is immediate). The caller holds s.mu.
func (s *server) down(problem string) {
	s.sess, s.tools, s.stderr = nil, nil, nil
	s.fails++
	s.state, s.problem = stateDown, problem
	delay := time.Duration(0)
	if s.fails > 1 {
		delay = backoff.Delay(s.fails-2, baseDelay, s.m.cfg.MaxDelay)
	}
	s.retryAt = s.m.now().Add(delay)
}

// lost marks sess as gone (the process exited, the connection broke) unless
// it was already replaced or closed on purpose, and closes it.
func (s *server) lost(sess *sdk.ClientSession, problem string, err error) {
	s.mu.Lock()
	if s.sess != sess {
		s.mu.Unlock()
		return
	}
	stderr := s.stderr.String()
	s.down(problem)
	fails, retryAt, hook := s.fails, s.retryAt, s.lostHook
	s.mu.Unlock()
	if hook != nil {
		defer hook()
	}
	s.log.Warn("MCP server stopped", "problem", problem, "err", llm.RedactError(err, ""), "stderr", stderr,
		"failures", fails, "retry_at", retryAt)
	s.m.wg.Go(func() { _ = sess.Close() })
}

// begin and end bracket a call: a process with a call in flight is not
// stopped for being idle or to make room, and its last use is the call's.
func (s *server) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight++
	s.lastUsed = s.m.now()
}

func (s *server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	s.lastUsed = s.m.now()
}

// worked resets the failure count after a call the server answered.
func (s *server) worked() {
	s.mu.Lock()
	s.fails = 0
	s.mu.Unlock()
}

// runningLocked reports whether s's process runs or is starting; the
// caller holds s.mu.
func (s *server) runningLocked() bool { return s.sess != nil || s.starting != nil }

// status fills st (the pool's names) with s's state.
func (s *server) status(st ServerStatus) ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st.State, st.Tools, st.Failures = s.state, len(s.tools), s.fails
	if st.State == "" {
		st.State = stateIdle
	}
	if st.State == stateDown {
		st.Problem, st.RetryAt = s.problem, s.retryAt
	}
	return st
}

// shutdown closes the connection for good.
func (s *server) shutdown() {
	s.mu.Lock()
	s.closed = true
	sess := s.sess
	s.sess, s.tools = nil, nil
	s.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
}

// connect opens a session over the configured transport and lists the
// tools on offer.
func (s *server) connect(ctx context.Context, stderr *tail) (*sdk.ClientSession, []*tool, error) {
	t, err := s.transport(stderr)
	if err != nil {
		return nil, nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "dreamgate", Version: "1"}, &sdk.ClientOptions{
		Logger: s.log,
		// No roots, sampling or elicitation: the gateway only calls tools.
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
			s.toolsChanged(req.Session)
		},
	})
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	tools, err := s.listTools(ctx, sess)
	return sess, tools, err
}

// toolsChanged lists the tools of sess again after the server said its
// list changed (notifications/tools/list_changed, which only a stdio
// server can send here: the HTTP transport keeps no stream open for it),
// so that the next turn offers what the server offers now. The listing
// runs apart: the notification arrives on the connection's reader, which
// the listing's answer needs.
func (s *server) toolsChanged(sess *sdk.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed { // Close is waiting for the group: no new member
		return
	}
	s.m.wg.Go(func() {
		ctx, cancel := context.WithTimeout(s.m.ctx, s.cfg.Timeout)
		defer cancel()
		tools, err := s.listTools(ctx, sess)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case s.sess != sess:
			// Replaced, lost or closed meanwhile; a new connection lists
			// its own.
		case err != nil:
			s.log.Warn("MCP server changed its tools but listing them again failed; the old list stays", "err", llm.RedactError(err, ""))
		default:
			s.tools = tools
			s.log.Info("MCP server changed its tools", "tools", len(tools))
		}
	})
}

// listTools lists the tools sess offers that the config lets through.
func (s *server) listTools(ctx context.Context, sess *sdk.ClientSession) ([]*tool, error) {
	var tools []*tool
	names := map[string]bool{}
	for st, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if !s.cfg.offered(st.Name) {
			continue
		}
		t := newTool(s, st)
		if names[t.def.Name] {
			s.log.Warn("MCP tool skipped: its name clashes with another tool of the server", "tool", st.Name, "as", t.def.Name)
			continue
		}
		names[t.def.Name] = true
		tools = append(tools, t)
	}
	// Sorted by name: the tools go first in every chat request, so a
	// server that lists them in another order after a restart or a change
	// must not change the request's prefix, which prompt caches serve.
	slices.SortFunc(tools, func(a, b *tool) int { return strings.Compare(a.def.Name, b.def.Name) })
	return tools, nil
}

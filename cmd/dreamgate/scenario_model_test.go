package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// scenarioModel is one gateway's fake model. A chat turn is answered
// "<gateway>: <what was said> (saw N)", N the user messages the turn was
// shown — the conversation's earlier turns and this one — so a post says
// which process answered and whether it had the conversation's past;
// a question, and every call of the memory pipeline (archive, Dream), are
// answered by the rule-following memory model. Chat turns can be held
// (model hold), as a slow model holds them, to kill a process mid-turn.
type scenarioModel struct {
	name string
	srv  *llmtest.Server

	mu      sync.Mutex
	changed chan struct{}
	hold    chan struct{} // non-nil: chat turns wait for it to close
	held    int           // chat turns waiting now
	chats   []llmtest.Request
	// holdDream and heldDream do the same for the memory pipeline's
	// calls (archive, Dream).
	holdDream chan struct{}
	heldDream int
}

func newScenarioModel(name string) *scenarioModel {
	m := &scenarioModel{name: name, srv: llmtest.Start(), changed: make(chan struct{})}
	m.srv.SetResponder(m.respond)
	return m
}

func (m *scenarioModel) close() {
	m.release()
	m.srv.Close()
}

func (m *scenarioModel) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// chatTurn reports whether r is a chat turn's call (tools offered, not
// Dream's edit phase) answering a person.
func chatTurn(r llmtest.Request) bool {
	if len(r.Tools) == 0 || len(r.Messages) == 0 {
		return false
	}
	last := r.Messages[len(r.Messages)-1]
	return last.Role == llm.RoleUser && !strings.HasPrefix(last.Content, "## Findings to apply")
}

func (m *scenarioModel) respond(r llmtest.Request) llmtest.Reply {
	if !chatTurn(r) {
		m.mu.Lock()
		hold := m.holdDream
		if hold != nil {
			m.heldDream++
		}
		m.notifyLocked()
		m.mu.Unlock()
		if hold != nil {
			<-hold
		}
		return llmtest.MemoryModel(r)
	}
	m.mu.Lock()
	m.chats = append(m.chats, r)
	hold := m.hold
	if hold != nil {
		m.held++
	}
	m.notifyLocked()
	m.mu.Unlock()
	if hold != nil {
		<-hold
		m.mu.Lock()
		m.held--
		m.mu.Unlock()
	}
	said := llmtest.Spoken(r.Messages[len(r.Messages)-1].Content)
	if strings.HasSuffix(said, "?") {
		return llmtest.MemoryModel(r)
	}
	users := 0
	for _, msg := range r.Messages {
		if msg.Role == llm.RoleUser {
			users++
		}
	}
	return llmtest.Text(fmt.Sprintf("%s: %s (saw %d)", m.name, said, users))
}

func (m *scenarioModel) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold != nil {
		close(m.hold)
		m.hold = nil
	}
	if m.holdDream != nil {
		close(m.holdDream)
		m.holdDream = nil
	}
}

// waitFor waits until cond (called with m.mu held) holds.
func (m *scenarioModel) waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.After(within)
	for {
		m.mu.Lock()
		ok, ch := cond(), m.changed
		m.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

// model hold NAME [dream] | model held NAME N [dream] | model release NAME
// model prompt NAME TEXT
//
// hold makes NAME's chat turns (with dream: its archive and Dream calls)
// wait in the model; held waits until N of them wait (N calls of the
// memory pipeline held, with dream); release lets them go. prompt checks
// that a chat turn of NAME was shown TEXT in its system prompt (with !,
// that none was).
func cmdScenarioModel(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: model hold|held|release|prompt NAME [N|TEXT]")
	}
	s := scenarioOf(ts)
	s.mu.Lock()
	m := s.models[args[1]]
	s.mu.Unlock()
	if m == nil {
		ts.Fatalf("no model for gateway %s (start it first)", args[1])
	}
	switch args[0] {
	case "hold":
		m.mu.Lock()
		switch {
		case len(args) > 2 && args[2] == "dream":
			if m.holdDream == nil {
				m.holdDream = make(chan struct{})
			}
		case m.hold == nil:
			m.hold = make(chan struct{})
		}
		m.mu.Unlock()
	case "release":
		m.release()
	case "held":
		n := 1
		if len(args) > 2 {
			var err error
			n, err = strconv.Atoi(args[2])
			ts.Check(err)
		}
		dream := len(args) > 3 && args[3] == "dream"
		if !m.waitFor(2*time.Minute, func() bool { return !dream && m.held >= n || dream && m.heldDream >= n }) {
			ts.Fatalf("%s's model never held %d calls", m.name, n)
		}
	case "prompt":
		text := strings.Join(args[2:], " ")
		m.mu.Lock()
		found := 0
		for _, r := range m.chats {
			if r.Messages[0].Role == llm.RoleSystem && strings.Contains(r.Messages[0].Content, text) {
				found++
			}
		}
		total := len(m.chats)
		m.mu.Unlock()
		switch {
		case neg && found > 0:
			ts.Fatalf("%d of %s's %d chat turns were shown %q", found, m.name, total, text)
		case !neg && found == 0:
			ts.Fatalf("none of %s's %d chat turns was shown %q", m.name, total, text)
		}
		ts.Logf("%d of %s's %d chat turns were shown %q", found, m.name, total, text)
	default:
		ts.Fatalf("model: unknown action %q", args[0])
	}
}

package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/workspace"
)

// inbox records each accepted chat message until its turn has recorded it
// in its session: a message queued behind a running turn (or still on its
// way to its worker) lives in memory only, and the platform, having acked
// it, will not deliver it again after a crash. One line per message,
// written (not synced: it guards against a dead process, not a dead
// machine) before Submit returns; read at the next start, which answers
// what no session holds.
type inbox struct {
	path string

	mu      sync.Mutex
	f       *os.File
	open    map[string]inboxLine // by channel and message id: accepted, not yet recorded
	written int                  // lines in the file
}

type inboxLine struct {
	Key    string         `json:"key"`
	Origin session.Origin `json:"origin"`
	Text   string         `json:"text"`
	Time   time.Time      `json:"timestamp"`
}

func (l inboxLine) id() string { return l.Origin.Channel + "\x00" + l.Origin.MessageID }

// openInbox reads what a previous process left in path. Those messages stay
// open (in the file too) until the caller has queued them again and their
// turns record them, or finds them recorded and calls done.
func openInbox(path string) (*inbox, []inboxLine, error) {
	var left []inboxLine
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read inbox: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var l inboxLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Key != "" && l.Origin.MessageID != "" {
			left = append(left, l) // a torn last line is skipped
		}
	}
	ib := &inbox{path: path, open: map[string]inboxLine{}}
	for _, l := range left {
		ib.open[l.id()] = l
	}
	if err := ib.rewriteLocked(); err != nil {
		return nil, nil, err
	}
	return ib, left, nil
}

// add records an accepted message.
func (ib *inbox) add(l inboxLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode inbox line: %w", err)
	}
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if _, err := ib.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write inbox: %w", err)
	}
	ib.open[l.id()] = l
	ib.written++
	// The file only grows; once it holds mostly recorded messages it is
	// written again with the open ones.
	if ib.written > 1024 && ib.written > 4*len(ib.open) {
		return ib.rewriteLocked()
	}
	return nil
}

// done forgets a message: its session holds it now, or its sender was told
// to send it again, or it is too old to answer.
func (ib *inbox) done(in channels.Inbound) {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	delete(ib.open, in.Channel+"\x00"+in.MessageID)
}

// compact writes the file again with only the open messages.
func (ib *inbox) compact() error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return ib.rewriteLocked()
}

// rewriteLocked replaces the file with the open messages. The caller holds
// ib.mu (or owns ib alone).
func (ib *inbox) rewriteLocked() error {
	var buf bytes.Buffer
	for _, l := range ib.open {
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("encode inbox line: %w", err)
		}
		buf.Write(append(b, '\n'))
	}
	// The project's one atomic write: a unique temp name, so two
	// processes cannot write into each other's temp file.
	if err := workspace.WriteFile(ib.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("replace inbox: %w", err)
	}
	f, err := os.OpenFile(ib.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open inbox: %w", err)
	}
	if ib.f != nil {
		_ = ib.f.Close()
	}
	ib.f, ib.written = f, len(ib.open)
	return nil
}

func (ib *inbox) close() error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if ib.f == nil {
		return nil
	}
	err := ib.f.Close()
	ib.f = nil
	return err
}

// inboxLineOf is what the inbox keeps of in.
func inboxLineOf(in channels.Inbound) inboxLine {
	return inboxLine{Key: in.SessionKey, Origin: originOf(in), Text: in.Text, Time: in.Time}
}

// recoverable says whether a message can be answered after a restart: it
// has an id and comes from a platform, not from the local terminal, whose
// user is gone with the process.
func recoverable(in channels.Inbound) bool {
	return in.MessageID != "" && !in.Local
}

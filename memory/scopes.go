package memory

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/dreamgate/dreamgate/audience"
)

// Memory is the workspace's memory: which scopes exist, which an audience
// reads and writes (the shared-memory setting decided here, once), how
// they are named, and their files as a prompt shows them. cmd makes one
// and passes it to everything that asks.
type Memory struct {
	files  Files
	shared bool

	logger *slog.Logger

	mu   sync.Mutex
	hot  map[fileKey]shownFile // the files as a prompt shows them, by stamp
	told map[fileKey]bool      // files left out that the log has told of
}

// New is the memory read through files (nil: there are none). shared is
// config memory.scoped false: every conversation reads and writes the
// default scope, as before scopes existed, so everything anyone says may
// reach everyone.
func New(files Files, shared bool) *Memory {
	if files == nil {
		files = noFiles{}
	}
	return &Memory{files: files, shared: shared, logger: slog.New(slog.DiscardHandler),
		hot: map[fileKey]shownFile{}, told: map[fileKey]bool{}}
}

// WithLogger has m tell the operator in l's log of a memory file it leaves
// out (LeftOut); before any use. It returns m.
func (m *Memory) WithLogger(l *slog.Logger) *Memory {
	m.logger = l
	return m
}

// Files is how the memory reads its files.
func (m *Memory) Files() Files { return m.files }

// Shared reports whether every conversation shares the default scope.
func (m *Memory) Shared() bool { return m.shared }

// Home is the scope a's conversations are archived into and written from:
// its Home, or the default scope when memory is shared.
func (m *Memory) Home(a audience.Audience) audience.Scope {
	if m.shared {
		return audience.Default
	}
	return a.Home()
}

// Readable lists the scopes a's prompts show, widest first, its home last:
// its Readable scopes, or the default scope alone when memory is shared.
func (m *Memory) Readable(a audience.Audience) []audience.Scope {
	if m.shared {
		return []audience.Scope{audience.Default}
	}
	return a.Readable()
}

// MayRead reports whether a's prompts may show scope s.
func (m *Memory) MayRead(a audience.Audience, s audience.Scope) bool {
	return slices.Contains(m.Readable(a), s)
}

// OwnFolder reports whether a's memory is a scope folder of its own: every
// audience but the operator's, unless memory is shared.
func (m *Memory) OwnFolder(a audience.Audience) bool {
	return !m.shared && a.Kind != audience.Operator
}

// Scopes lists the scopes there are, as the operator reads them: the
// default scope first, then every scope folder, sorted — or the default
// scope alone when memory is shared (no prompt reads a folder then).
func (m *Memory) Scopes() ([]audience.Scope, error) {
	out := []audience.Scope{audience.Default}
	if m.shared {
		return out, nil
	}
	more, err := m.files.Folders()
	return append(out, more...), err
}

// DefaultName names the default scope where a scope is typed or linked
// (`--scope default`, /memory/default).
const DefaultName = "default"

// Name is scope s as commands, URLs and logs name it: its folder's name,
// or DefaultName.
func Name(s audience.Scope) string {
	if s == audience.Default {
		return DefaultName
	}
	return string(s)
}

// ErrNoScope: a name no scope can have.
var ErrNoScope = errors.New(`not a memory scope: use a folder name under scopes/ (e.g. team-slack-t0123abcd) or "default"`)

// ParseName reads a scope's Name.
func ParseName(name string) (audience.Scope, error) {
	if name == DefaultName {
		return audience.Default, nil
	}
	s, err := audience.ParseScope(name)
	if err != nil || s == audience.Default {
		return "", ErrNoScope
	}
	return s, nil
}

// Label says whose scope s is, for a reader in audience reader. The
// operator, who reads every scope (the memory page, the CLI), is told
// whose each is ("the team's memory (slack t1)"); anyone else is told as
// their conversation sees it ("the team's memory", "your direct messages'
// memory"). It claims nothing the scope rules do not guarantee.
func (m *Memory) Label(s audience.Scope, reader audience.Audience) string {
	if reader.Kind == audience.Operator || reader.IsZero() {
		return absoluteLabel(s, m.shared)
	}
	if s == audience.Default {
		return "the shared memory"
	}
	kind, _, _ := strings.Cut(string(s), "-")
	if s != m.Home(reader) || audience.Kind(kind) == audience.Team {
		return "the team's memory"
	}
	switch {
	case reader.IsUnknown():
		return "this conversation's memory"
	case reader.Direct():
		return "your direct messages' memory"
	case reader.Kind == audience.Private:
		return "this private conversation's memory"
	case reader.Kind == audience.Shared:
		return "this shared channel's memory"
	}
	return "this conversation's memory"
}

// absoluteLabel says whose scope s is for the operator.
func absoluteLabel(s audience.Scope, shared bool) string {
	if s == audience.Default {
		if shared {
			return "the shared memory (the workspace root)"
		}
		return "the operator's memory (the workspace root)"
	}
	parts := strings.Split(string(s), "-")
	if len(parts) < 3 {
		return string(s)
	}
	platform, ids := parts[1], strings.Join(parts[2:], " ")
	switch audience.Kind(parts[0]) {
	case audience.Team:
		return "the team's memory (" + platform + " " + ids + ")"
	case audience.Person:
		return "direct messages (" + platform + " " + ids + ")"
	case audience.Private:
		return "a private conversation (" + platform + " " + ids + ")"
	case audience.Shared:
		return "a shared channel (" + platform + " " + ids + ")"
	}
	return string(s)
}

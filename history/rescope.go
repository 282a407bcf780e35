package history

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/workspace"
)

var _ store.ArchiveRescoper = (*Store)(nil)

// Rescope moves the entries pick chooses into the memory scope to: each
// keeps its cursor, timestamp, content and any field it carries; only its
// "scope" says to from now on (none for the default scope). It is for the
// operator's correction of entries archived under an audience that had
// changed before the gateway saw it. The file is rewritten atomically
// under the history lock, as Compact rewrites it; lines that do not parse
// are kept as they are, and pick is not asked about entries already in
// to. It returns the entries moved, as they were before, oldest first. A
// scope audience.ParseScope refuses is an error, and nothing is written;
// so is an entry whose line cannot be rewritten exactly.
func (s *Store) Rescope(pick func(Entry) bool, to audience.Scope) ([]Entry, error) {
	if err := store.CheckScope(to); err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	moved, err := s.rescopeLocked(pick, to)
	if err != nil {
		return nil, fmt.Errorf("move history entries to scope %q: %w", to, err)
	}
	return moved, nil
}

func (s *Store) rescopeLocked(pick func(Entry) bool, to audience.Scope) ([]Entry, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	var out bytes.Buffer
	out.Grow(len(data) + 64)
	var moved []Entry
	for raw := range bytes.Lines(data) {
		line := bytes.TrimRight(raw, "\r\n")
		e, ok := s.parseLocked(line)
		if !ok || e.Scope == to || !pick(e) {
			out.Write(raw)
			continue
		}
		rewritten, err := rescopeLine(line, e.Scope, to)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", e.Cursor, err)
		}
		if back, ok := s.parseLocked(rewritten); !ok || !sameButScope(back, e, to) {
			return nil, fmt.Errorf("entry %d: its line cannot be rewritten exactly", e.Cursor)
		}
		out.Write(rewritten)
		out.WriteByte('\n')
		moved = append(moved, e)
	}
	if len(moved) == 0 {
		return nil, nil
	}
	if err := workspace.WriteFile(s.path, out.Bytes(), fileMode); err != nil {
		return nil, err
	}
	s.hook("history-rescope")
	s.cache = cache{}
	s.dropIndexLocked()
	s.logger.Info("moved history entries to another scope", "entries", len(moved), "scope", string(to))
	return moved, nil
}

// rescopeLine rewrites the "scope" field of one entry's line, as the store
// writes it (appendEntryJSON: last, after a comma and a space), leaving
// every other byte as it is: a field nanobot or a later version added
// stays.
func rescopeLine(line []byte, from, to audience.Scope) ([]byte, error) {
	field := func(s audience.Scope) []byte {
		return appendPyString([]byte(`, "scope": `), string(s))
	}
	body, ok := bytes.CutSuffix(bytes.TrimRight(line, " \t"), []byte("}"))
	if !ok {
		return nil, errors.New("its line does not end with '}'")
	}
	if from != audience.Default {
		old := field(from)
		if bytes.Count(body, old) != 1 {
			return nil, errors.New("its scope is not written as the store writes it")
		}
		body = bytes.Replace(body, old, nil, 1)
	}
	out := bytes.Clone(body)
	if to != audience.Default {
		out = append(out, field(to)...)
	}
	return append(out, '}'), nil
}

// sameButScope reports whether got is e moved to scope to.
func sameButScope(got, e Entry, to audience.Scope) bool {
	e.Scope = to
	return got == e
}

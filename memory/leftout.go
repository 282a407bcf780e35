package memory

import (
	"errors"
	"io/fs"

	"github.com/dreamgate/dreamgate/audience"
)

// A file left out: a scope's memory file that is a symbolic link, or not a
// regular file, is never read (ErrLink, ErrNotRegular). Whatever shows
// memory — the prompt, /why, the memory page, the facts by id that recall
// and the page use — leaves that one file out and shows the scope's other
// files as they are: one link planted in a team's USER.md must not silence
// the memory of every conversation that reads the team's scope. The
// operator is told once in the log, again only after the file was read
// fine or went missing in between.

// LeftOut reports whether err says a memory file is left out of whatever
// shows memory: it is a symbolic link, or not a regular file.
func LeftOut(err error) bool {
	return errors.Is(err, ErrLink) || errors.Is(err, ErrNotRegular)
}

// Shown reads scope s's file rel for whoever shows memory: as Read, but a
// file LeftOut is told of in the log (once) before its error is returned,
// which the caller then takes as a file not there.
func (m *Memory) Shown(s audience.Scope, rel string) ([]byte, error) {
	data, err := m.Read(s, rel)
	m.noteLeftOut(s, rel, err)
	return data, err
}

// noteLeftOut tells the log of scope s's file rel when err (what reading
// it returned) leaves it out and the log has not told of it yet, and
// forgets that it did once the file reads fine or is missing.
func (m *Memory) noteLeftOut(s audience.Scope, rel string, err error) {
	key := fileKey{s, rel}
	left := LeftOut(err)
	if !left && err != nil && !errors.Is(err, fs.ErrNotExist) {
		return // another failure says nothing of the file's kind
	}
	m.mu.Lock()
	told := m.told[key]
	switch {
	case left && !told:
		if len(m.told) >= maxHotFiles {
			clear(m.told) // told again as they are met
		}
		m.told[key] = true
	case !left && told:
		delete(m.told, key)
	}
	m.mu.Unlock()
	if left && !told {
		m.logger.Warn("a memory file is left out of the prompt, /why, the memory page and recall: memory never reads a symbolic link or anything but a regular file; replace it with a plain file or remove it",
			"scope", Name(s), "file", rel, "err", err)
	}
}

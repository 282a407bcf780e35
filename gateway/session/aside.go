package session

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SetAside is a conversation /new set aside: "<base>.<id>.jsonl" and its
// "<base>.<id>.meta.json". It is never the live session of its key again;
// it is only read, to archive its unarchived tail, and its own metadata
// records how far that got.
type SetAside struct {
	Key string
	ID  string
	// Modified is when its message file was last written.
	Modified time.Time
	prefix   string
}

// ListSetAside lists the conversations set aside by /new that have a
// message file. It reads the directory and stats the files; it opens none.
// A process killed between /new and the end of the archive leaves its old
// tail unarchived in one of these; a later disk scan finds it here.
func (st *Store) ListSetAside() ([]SetAside, error) {
	if st.conv != nil {
		aside, err := st.listDB(true)
		if err != nil {
			return nil, fmt.Errorf("list set-aside sessions: %w", err)
		}
		out := make([]SetAside, 0, len(aside))
		for _, c := range aside {
			out = append(out, SetAside{Key: c.Key, ID: c.ID, Modified: c.Modified, prefix: st.base(c.Key) + "." + c.ID})
		}
		return out, nil
	}
	files, err := st.messageFiles()
	if err != nil {
		return nil, fmt.Errorf("list set-aside sessions: %w", err)
	}
	var out []SetAside
	for _, f := range files {
		if f.id != "" {
			out = append(out, SetAside{Key: f.key, ID: f.id, Modified: f.modified, prefix: filepath.Join(st.dir, f.name)})
		}
	}
	return out, nil
}

// messageFile is a message file of the sessions directory: a live
// conversation's "<base>.jsonl" (id "") or a set-aside "<base>.<id>.jsonl".
type messageFile struct {
	key, id  string
	name     string // without ".jsonl"
	modified time.Time
}

// messageFiles reads the directory and stats the message files; it opens
// none. Names that are not a message file of a key are skipped.
func (st *Store) messageFiles() ([]messageFile, error) {
	des, err := os.ReadDir(st.dir)
	if err != nil {
		return nil, err
	}
	var out []messageFile
	for _, de := range des {
		name, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || !de.Type().IsRegular() {
			continue
		}
		key, id, ok := parseFileName(name)
		if !ok {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, messageFile{key: key, id: id, name: name, modified: fi.ModTime()})
	}
	return out, nil
}

// OpenSetAside loads a set-aside conversation for archiving, or returns
// the one this store already holds (Rotate's old session, whose archive may
// be under way). It is never registered as its key's live session. It takes
// the set-aside conversation's own lock ("<base>.<id>.lock"), so two
// processes never archive it at once: a *LockedError means another one is
// at it. ForgetSetAside lets it go.
func (st *Store) OpenSetAside(a SetAside) (*Session, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s, ok := st.aside[a.prefix]; ok {
		return s, nil
	}
	if st.conv != nil {
		c, ok, err := st.conv.Generation(a.Key, a.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("set-aside session %s %s is gone", a.Key, a.ID)
		}
		s, err := st.loadGeneration(c, a.prefix)
		if err != nil {
			return nil, err
		}
		st.aside[a.prefix] = s
		return s, nil
	}
	// Another process may be archiving it (its own /new, or its scan).
	fl, err := takeLock(a.prefix+".lock", a.Key)
	if err != nil {
		return nil, err
	}
	s, err := st.loadAt(a.Key, a.prefix, a.ID)
	if err != nil {
		_ = fl.Close()
		return nil, err
	}
	s.lock = fl
	st.aside[a.prefix] = s
	return s, nil
}

// ForgetSetAside drops a set-aside session from memory, closing its file
// and releasing its lock.
func (st *Store) ForgetSetAside(s *Session) {
	st.mu.Lock()
	defer st.mu.Unlock()
	p := s.path()
	if st.aside[p] != s {
		return
	}
	delete(st.aside, p)
	if st.conv == nil && s.LastConsolidated() >= s.Len() {
		// Done for good: its lock file would only pile up, one per /new.
		// A process that opened it meanwhile locks an unlinked file and
		// then finds nothing left to archive.
		_ = os.Remove(p + ".lock")
	}
	_ = s.close()
}

// parseFileName reads a message file's name without ".jsonl": the key's
// base (unpadded base64url, which has no dot) and, for a set-aside file,
// a dot and its id.
func parseFileName(name string) (key, id string, ok bool) {
	base, id, _ := strings.Cut(name, ".")
	if base == "" || strings.Contains(id, ".") || (id == "" && strings.Contains(name, ".")) {
		return "", "", false
	}
	k, err := base64.RawURLEncoding.DecodeString(base)
	if err != nil {
		return "", "", false
	}
	return string(k), id, true
}

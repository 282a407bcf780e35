package gitstore

import (
	"fmt"
	"strings"
)

// UndoneBy finds the restore that undid the commit sha (a full id) and is
// still in effect: the newest later restore commit whose trailers name sha
// (Reverts) and that no later restore undid in turn (undoing a restore
// brings the change back). Only restores that changed a tracked file keep
// accepts count (nil: any). A restore of another commit, even of the same
// files, does not make sha undone: its trailers say what it reverted.
//
// A restore made before restores carried trailers put whole files back to
// their state before its commit: it undid that commit (its subject names
// it) and the later commits its message lists.
func (s *Store) UndoneBy(sha string, keep func(path string) bool) (Commit, bool, error) {
	defer s.lock()()
	sha = strings.ToLower(strings.TrimSpace(sha))
	id, ok := parseHash(sha)
	if !ok {
		return Commit{}, false, fmt.Errorf("undone by: %q: %w: want a full id", sha, ErrInvalidRevision)
	}
	found, err := s.matchingAfter(0, RevertPrefix, id, keep)
	if err != nil {
		return Commit{}, false, fmt.Errorf("undone by of %s: %w", shortID(sha), err)
	}
	undos := make([]undoRecord, 0, len(found))
	for _, c := range found {
		undos = append(undos, parseUndo(toCommit(c)))
	}
	r, ok := undoneIn(sha, undos)
	return r.commit, ok, nil
}

// Reverts names the commit a restore commit undid: the full id its
// trailers give, or for a restore made before them the short id its
// subject gives; "" for a commit that is no restore. c needs its Body.
func Reverts(c Commit) string {
	if !strings.HasPrefix(c.Subject, RevertPrefix) {
		return ""
	}
	return parseUndo(c).reverts
}

// undoRecord is what a restore commit says it undid.
type undoRecord struct {
	commit Commit
	// reverts is the full id of the commit undone; for a restore made
	// before trailers, the short id its subject names.
	reverts string
	// also are the short ids of the later commits a restore made before
	// trailers undid too (it put whole files back).
	also []string
}

func (u undoRecord) names(sha string) bool {
	if u.reverts == sha || len(u.reverts) >= minPrefix && len(u.reverts) < len(sha) && strings.HasPrefix(sha, u.reverts) {
		return true
	}
	for _, a := range u.also {
		if len(a) >= minPrefix && strings.HasPrefix(sha, a) {
			return true
		}
	}
	return false
}

// parseUndo reads a restore commit's trailers (the last paragraph of its
// message), or the message of a restore made before them.
func parseUndo(c Commit) undoRecord {
	u := undoRecord{commit: c}
	body := strings.TrimSpace(c.Body)
	paras := strings.Split(body, "\n\n")
	for _, line := range strings.Split(paras[len(paras)-1], "\n") {
		if v, ok := strings.CutPrefix(line, TrailerReverts+": "); ok {
			u.reverts = strings.ToLower(strings.TrimSpace(v))
		}
	}
	if _, ok := parseHash(u.reverts); ok {
		return u
	}
	u.reverts = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(c.Subject, RevertPrefix)))
	if _, list, ok := strings.Cut(body, "This also undoes later commits:\n"); ok {
		for _, line := range strings.Split(list, "\n") {
			short, ok := strings.CutPrefix(line, "- ")
			if !ok {
				break
			}
			short, _, _ = strings.Cut(short, " ")
			u.also = append(u.also, short)
		}
	}
	return u
}

// undoneIn finds, among undos (newest first, all after sha), the newest
// that names sha and is not itself undone by a newer one.
func undoneIn(sha string, undos []undoRecord) (undoRecord, bool) {
	for i, u := range undos {
		if !u.names(sha) {
			continue
		}
		if _, undone := undoneIn(u.commit.SHA, undos[:i]); !undone {
			return u, true
		}
	}
	return undoRecord{}, false
}

package gitstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
)

// filesBackend keeps the repository in the git directory beside the
// workspace, as git does: loose and packed objects (go-git's filesystem
// storage), refs written through a lock file and a rename (refs.go), the
// commit index in <gitdir>/dreamgate-commits.
//
// A write that moves several refs (a commit across scopes' lines) is
// made whole by a journal: each ref's new value is written and synced in
// its lock file, then <gitdir>/dreamgate-journal names every move (synced,
// renamed into place: the one moment the write happens), then each lock
// file is renamed over its ref and the journal removed. A reader takes a
// ref the journal names at its new value; the next writer finishes a
// journal a killed one left.
type filesBackend struct{ s *Store }

var _ backend = filesBackend{}

// PointJournal names the moment a write that moves several refs has its
// journal in place, before any of the refs is renamed (Options.AfterWrite).
const PointJournal = "gitstore-journal"

const journalFile = "dreamgate-journal"

func (f filesBackend) objects() storage.Storer { return f.s.repo.Storer }

func (f filesBackend) ref(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	j, err := f.s.readJournal()
	if err != nil {
		return nil, err
	}
	for _, u := range j {
		if u.name == name {
			if u.new == nil {
				return nil, plumbing.ErrReferenceNotFound
			}
			return u.new, nil
		}
	}
	return f.s.readRef(name)
}

func (f filesBackend) setRefs(ups []refUpdate) error {
	if len(ups) == 1 && ups[0].new != nil {
		return f.s.casRef(ups[0].new, ups[0].old)
	}
	return f.s.moveRefs(ups)
}

func (f filesBackend) write(fn func() error) error {
	lock, err := f.s.lockIndex()
	if err != nil {
		return err
	}
	defer lock.release()
	if err := f.s.finishJournal(); err != nil {
		return err
	}
	return fn()
}

func (f filesBackend) index() indexStore { return indexFileStore{path: f.s.indexPath()} }

// lineRefs lists the loose refs in refs/<prefix>/ and the packed ones
// there, a journal's taking precedence. The stamp is the folder's, the
// packed-refs file's and the journal's modification times: a ref written
// or removed renames a file in the folder.
func (f filesBackend) refsStamp(prefix string) (string, error) {
	s := f.s
	stamp := ""
	for _, p := range []string{f.refsDir(prefix), filepath.Join(s.commonDir, "packed-refs"), filepath.Join(s.gitDir, journalFile)} {
		if fi, err := os.Stat(p); err == nil {
			stamp += strconv.FormatInt(fi.ModTime().UnixNano(), 36) + "." + strconv.FormatInt(fi.Size(), 36)
		}
		stamp += ";"
	}
	return stamp, nil
}

func (f filesBackend) refsDir(prefix string) string {
	return filepath.Join(f.s.commonDir, "refs", filepath.FromSlash(prefix))
}

func (f filesBackend) quickStamp() (string, bool) { return "", false }

func (f filesBackend) objectIDs(prefix string) ([]plumbing.Hash, error) {
	return f.s.objectsWithPrefix(prefix)
}

func (f filesBackend) lineRefs(prefix, since string) (map[plumbing.ReferenceName]plumbing.Hash, bool, string, error) {
	out, stamp, err := f.listLineRefs(prefix, since)
	return out, out != nil, stamp, err
}

func (f filesBackend) listLineRefs(prefix, since string) (map[plumbing.ReferenceName]plumbing.Hash, string, error) {
	s := f.s
	dir := f.refsDir(prefix)
	stamp, err := f.refsStamp(prefix)
	if err != nil {
		return nil, "", err
	}
	if since != "" && since == stamp {
		return nil, stamp, nil
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	packed, err := os.ReadFile(filepath.Join(s.commonDir, "packed-refs"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("read packed-refs: %w", err)
	}
	want := "refs/" + prefix + "/"
	for l := range strings.SplitSeq(string(packed), "\n") {
		id, name, ok := strings.Cut(strings.TrimRight(l, "\r"), " ")
		if h, hok := parseHash(id); ok && hok && strings.HasPrefix(name, want) {
			out[plumbing.ReferenceName(name)] = h
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("list %s: %w", want, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		name := plumbing.ReferenceName(want + e.Name())
		ref, err := f.ref(name)
		var d *refDamage
		switch {
		case errors.As(err, &d):
			out[name] = plumbing.ZeroHash // unreadable: the index's walk repairs it
		case err != nil:
			return nil, "", err
		case ref.Type() == plumbing.HashReference:
			out[name] = ref.Hash()
		}
	}
	j, err := s.readJournal()
	if err != nil {
		return nil, "", err
	}
	for _, u := range j {
		if strings.HasPrefix(string(u.name), want) {
			if u.new == nil {
				delete(out, u.name)
			} else {
				out[u.name] = u.new.Hash()
			}
		}
	}
	return out, stamp, nil
}

// casRef moves one ref to ref's value where it still holds old's (nil:
// where it does not exist), under the ref's lock.
func (s *Store) casRef(ref, old *plumbing.Reference) error {
	l, err := s.lockRef(ref.Name())
	if err != nil {
		return err
	}
	defer l.release()
	if err := s.checkOld(ref.Name(), old); err != nil {
		return err
	}
	content, err := refContent(ref)
	if err != nil {
		return err
	}
	return l.commit(content)
}

// checkOld reports storage.ErrReferenceHasChanged when the ref name no
// longer holds old's value (nil: when it exists). The caller holds its
// lock.
func (s *Store) checkOld(name plumbing.ReferenceName, old *plumbing.Reference) error {
	cur, err := s.readRef(name)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		if old != nil {
			return storage.ErrReferenceHasChanged
		}
		return nil
	case err != nil:
		return err
	case old == nil || cur.Hash() != old.Hash():
		return storage.ErrReferenceHasChanged
	}
	return nil
}

func refContent(ref *plumbing.Reference) (string, error) {
	switch ref.Type() {
	case plumbing.HashReference:
		return ref.Hash().String() + "\n", nil
	case plumbing.SymbolicReference:
		return "ref: " + ref.Target().String() + "\n", nil
	}
	return "", fmt.Errorf("set %s: invalid reference", ref.Name())
}

// moveRefs moves several refs whole, through the journal. The caller
// holds the writer lock.
func (s *Store) moveRefs(ups []refUpdate) error {
	ups = slices.Clone(ups)
	slices.SortFunc(ups, func(a, b refUpdate) int { return strings.Compare(string(a.name), string(b.name)) })
	locks := make([]*refLock, 0, len(ups))
	defer func() {
		for _, l := range locks {
			l.release()
		}
	}()
	for _, u := range ups {
		l, err := s.lockRef(u.name)
		if err != nil {
			return err
		}
		locks = append(locks, l)
		if err := s.checkOld(u.name, u.old); err != nil {
			return err
		}
		if u.new != nil {
			content, err := refContent(u.new)
			if err != nil {
				return err
			}
			if err := l.prepare(content); err != nil {
				return err
			}
		}
	}
	if err := s.writeJournal(ups); err != nil {
		return err
	}
	s.hook(PointJournal)
	for i, u := range ups {
		var err error
		if u.new == nil {
			err = os.Remove(locks[i].target)
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
		} else {
			err = locks[i].install()
		}
		if err != nil {
			// The journal stands: readers see every move, and the next
			// writer finishes it.
			s.log.Warn("memory repository: a ref of a write is not in place yet; the next write finishes it", "ref", string(u.name), "err", err)
			return nil
		}
	}
	return s.removeJournal()
}

// journal's format: one line per move, "<ref> <old|-> <new|->", then
// "end <crc32 of the lines before>". A torn journal was never in place
// (it is renamed into place whole).
func formatJournal(ups []refUpdate) []byte {
	var b bytes.Buffer
	for _, u := range ups {
		old, nw := "-", "-"
		if u.old != nil {
			old = u.old.Hash().String()
		}
		if u.new != nil {
			if c, err := refContent(u.new); err == nil {
				nw = strings.TrimSpace(strings.TrimPrefix(c, "ref: "))
				if u.new.Type() == plumbing.SymbolicReference {
					nw = "ref:" + nw
				}
			}
		}
		fmt.Fprintf(&b, "%s %s %s\n", u.name, old, nw)
	}
	fmt.Fprintf(&b, "end %08x\n", crc32.ChecksumIEEE(b.Bytes()))
	return b.Bytes()
}

func parseJournal(data []byte) ([]refUpdate, error) {
	body, tail, ok := cutLast(strings.TrimSuffix(string(data), "\n"), "\n")
	if !ok {
		body, tail = "", strings.TrimSuffix(string(data), "\n")
	} else {
		body += "\n"
	}
	if tail != fmt.Sprintf("end %08x", crc32.ChecksumIEEE([]byte(body))) {
		return nil, errors.New("journal checksum mismatch")
	}
	var out []refUpdate
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			return nil, errors.New("malformed journal line")
		}
		u := refUpdate{name: plumbing.ReferenceName(f[0])}
		if h, ok := parseHash(f[1]); ok {
			u.old = plumbing.NewHashReference(u.name, h)
		}
		if t, ok := strings.CutPrefix(f[2], "ref:"); ok {
			u.new = plumbing.NewSymbolicReference(u.name, plumbing.ReferenceName(t))
		} else if h, ok := parseHash(f[2]); ok {
			u.new = plumbing.NewHashReference(u.name, h)
		}
		out = append(out, u)
	}
	return out, nil
}

func (s *Store) journalPath() string { return filepath.Join(s.gitDir, journalFile) }

func (s *Store) writeJournal(ups []refUpdate) error {
	if err := writeSynced(s.journalPath(), formatJournal(ups)); err != nil {
		return fmt.Errorf("write the refs' journal: %w", err)
	}
	return nil
}

// readJournal returns the moves of a journal in place (none when there is
// none). A damaged one is no journal: it was never renamed into place.
func (s *Store) readJournal() ([]refUpdate, error) {
	data, err := os.ReadFile(s.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the refs' journal: %w", err)
	}
	ups, err := parseJournal(data)
	if err != nil {
		s.log.Warn("memory repository: ignoring a damaged refs journal", "err", err)
		return nil, nil
	}
	return ups, nil
}

func (s *Store) removeJournal() error {
	if err := os.Remove(s.journalPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the refs' journal: %w", err)
	}
	return nil
}

// finishJournal makes the moves of a journal a killed writer left, then
// removes it. The caller holds the writer lock, so no writer is alive
// behind the journal, and its ref locks are leftovers.
func (s *Store) finishJournal() error {
	ups, err := s.readJournal()
	if err != nil || len(ups) == 0 {
		return err
	}
	for _, u := range ups {
		target := s.refPath(u.name)
		if u.new == nil {
			if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("finish the refs' journal: %w", err)
			}
			continue
		}
		_ = os.Remove(target + ".lock")
		if err := s.casRefForce(u.new); err != nil {
			return fmt.Errorf("finish the refs' journal: %w", err)
		}
	}
	s.log.Warn("memory repository: finished moving the refs of a write a kill interrupted", "refs", len(ups))
	return s.removeJournal()
}

// casRefForce writes ref's value unconditionally, through its lock file.
func (s *Store) casRefForce(ref *plumbing.Reference) error {
	l, err := s.lockRef(ref.Name())
	if err != nil {
		return err
	}
	defer l.release()
	content, err := refContent(ref)
	if err != nil {
		return err
	}
	return l.commit(content)
}

// writeSynced writes p through a temporary file, synced, renamed into
// place, and syncs the folder.
func writeSynced(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return syncPath(filepath.Dir(p))
}

// indexFileStore is the commit index in <gitdir>/dreamgate-commits.
type indexFileStore struct{ path string }

func (x indexFileStore) load() ([]byte, int64, error) {
	data, err := os.ReadFile(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, err
	}
	return data, int64(len(data)), nil
}

func (x indexFileStore) stamp() (int64, error) {
	fi, err := os.Stat(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	return fi.Size(), nil
}

func (x indexFileStore) append(at int64, data []byte) (int64, error) {
	now, err := x.stamp()
	if err != nil {
		return -1, err
	}
	if at < 0 || now != at {
		return -1, errIndexMoved
	}
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return -1, err
	}
	// One write: a reader sees the old lines, or torn new ones it rejects
	// by checksum.
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return -1, err
	}
	return at + int64(len(data)), nil
}

func (x indexFileStore) replace(data []byte) (int64, error) {
	if data == nil {
		if err := os.Remove(x.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return -1, err
		}
		return -1, nil
	}
	if err := replaceFile(x.path, data); err != nil {
		return -1, err
	}
	return int64(len(data)), nil
}

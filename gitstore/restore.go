package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Restore puts the tracked files keep accepts (nil: every tracked file)
// back to their state just before rev (the tree of rev's first parent) and
// records that as a new commit "revert: undo <short id>" holding those
// files alone. It is a snapshot restore, not an inverse patch: every such
// file gets its content from that tree, and one that did not exist then is
// deleted. Files keep refuses are neither read nor written nor named: a
// restore for one scope's files never undoes another's.
//
// Nothing is lost on the way. History is never rewritten. Edits of the
// files keep accepts not yet committed are first committed as ManualSubject
// (they are then among the undone commits, recoverable from that commit).
// Files the repository does not track are never touched.
//
// undone lists, newest first, every commit after rev on the first-parent
// history (including that manual commit) that changed at least one file
// the restore changes: its change to that file is discarded too. Commits
// after rev that touched only files the restore leaves alone are not listed.
// They come from the commit index, so their Body is empty: a restore deep
// in the history would otherwise read thousands of commit objects.
//
// rev resolves as in Show; it must be on the first-parent history of HEAD
// (ErrNotInHistory). A root commit has no earlier state: ErrRootCommit. When
// the files already are in that state, ErrNothingToCommit and no revert
// commit (the manual commit, if one was needed, stays).
func (s *Store) Restore(rev string, keep func(path string) bool) (restore Commit, undone []Commit, err error) {
	return s.RestoreNoted(rev, keep, "")
}

// RestoreNoted is Restore with a note in the revert commit's message, after
// its first paragraph: where the restore was asked for and by whom
// ("Asked for on the memory page by the operator."), for whoever reads the
// history later. "" adds nothing.
func (s *Store) RestoreNoted(rev string, keep func(path string) bool, note string) (restore Commit, undone []Commit, err error) {
	defer s.lock()()
	restore, undone, err = s.restore(rev, keep, strings.TrimSpace(note))
	if err != nil {
		return Commit{}, nil, fmt.Errorf("restore %s: %w", strings.TrimSpace(rev), err)
	}
	return restore, undone, nil
}

// RestorePlan is what a Restore would do if asked now.
type RestorePlan struct {
	// Files are the tracked files it would put back (or delete), in path
	// order, as HEAD has them.
	Files []string
	// Undone lists, newest first, the later commits whose changes to those
	// files it would discard (their Body empty, as Restore's).
	Undone []Commit
	// Uncommitted says some file the filter accepts has edits not yet
	// committed: Restore would first save them as ManualSubject and then
	// discard them too (that commit, and any file they touch, are not in
	// Files and Undone yet).
	Uncommitted bool
}

// PlanRestore says what Restore(rev, keep) would do now, changing nothing:
// the files it would restore and the later commits it would undo, so that a
// person can be asked to confirm. Errors are Restore's (ErrNothingToCommit
// when the files already are as before rev and none has uncommitted
// edits). A commit made between the plan and the restore changes what the
// restore does: compare the plans when that matters.
func (s *Store) PlanRestore(rev string, keep func(path string) bool) (RestorePlan, error) {
	defer s.lock()()
	plan, err := s.planRestoreNow(rev, keep)
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan restore of %s: %w", strings.TrimSpace(rev), err)
	}
	return plan, nil
}

func (s *Store) planRestoreNow(rev string, keep func(string) bool) (RestorePlan, error) {
	target, err := s.resolve(rev)
	if err != nil {
		return RestorePlan{}, err
	}
	if len(target.ParentHashes) == 0 {
		return RestorePlan{}, ErrRootCommit
	}
	d, err := s.status(keep)
	if err != nil {
		return RestorePlan{}, err
	}
	p, err := s.compareForRestore(target, keep)
	if errors.Is(err, ErrNothingToCommit) && !d.Empty() {
		return RestorePlan{Uncommitted: true}, nil
	}
	if err != nil {
		return RestorePlan{}, err
	}
	out := RestorePlan{Uncommitted: !d.Empty()}
	for _, f := range p.files {
		out.Files = append(out.Files, f.path)
	}
	out.Undone = touching(p.idx, p.later, out.Files)
	return out, nil
}

func (s *Store) restore(rev string, keep func(string) bool, note string) (Commit, []Commit, error) {
	target, err := s.resolve(rev)
	if err != nil {
		return Commit{}, nil, err
	}
	if len(target.ParentHashes) == 0 {
		return Commit{}, nil, ErrRootCommit
	}
	// One lock from finding the later commits to the revert commit: no
	// other writer may slip a commit in whose change the restore would then
	// discard without naming it.
	lock, err := s.lockIndex()
	if err != nil {
		return Commit{}, nil, err
	}
	defer lock.release()
	plan, err := s.planRestore(target, keep)
	if err != nil {
		return Commit{}, nil, err
	}
	plan.note = note
	if err := s.applyRestore(plan.files); err != nil {
		return Commit{}, nil, err
	}
	c, undone, err := s.commitRestore(plan)
	if err != nil {
		// Until the revert commit exists, a failure puts the files back as
		// HEAD has them (all of it is committed by now, hand edits
		// included), so a half-done restore is never mistaken later for
		// edits made by hand.
		s.unapplyRestore(plan.files)
		return Commit{}, nil, err
	}
	return c, undone, nil
}

// restorePlan is what a restore will do.
type restorePlan struct {
	target *object.Commit
	short  string
	files  []fileRestore // the tracked files that differ, in path order
	later  []indexEntry  // the commits after target, oldest first (with the manual commit)
	idx    *commitIndex  // the index later is from
	note   string        // RestoreNoted's note for the commit message
}

// fileRestore takes a tracked file from its HEAD version (now) to its
// version before the target (want).
type fileRestore struct {
	path      string
	want, now blobState
}

// planRestore checks that target is on the first-parent history, saves
// hand edits of the files keep accepts, and compares those files in the
// tree before target with HEAD's: those two trees are all it reads (the
// later commits come from the commit index). The caller holds the index
// lock.
func (s *Store) planRestore(target *object.Commit, keep func(string) bool) (restorePlan, error) {
	p := restorePlan{target: target, short: shortID(target.Hash.String())}
	if _, _, err := s.commitsAfter(target); err != nil {
		return p, err
	}
	// Save hand edits first, so the restore cannot silently discard them.
	if err := s.saveManualEdits(keep); err != nil {
		return p, err
	}
	return s.compareForRestore(target, keep)
}

// compareForRestore finds the commits after target and compares the
// files keep accepts in the tree before target with HEAD's: those two trees
// are all it reads. It writes nothing.
func (s *Store) compareForRestore(target *object.Commit, keep func(string) bool) (restorePlan, error) {
	p := restorePlan{target: target, short: shortID(target.Hash.String())}
	later, x, err := s.commitsAfter(target)
	if err != nil {
		return p, err
	}
	p.later, p.idx = later, x
	before, err := object.GetCommit(s.repo.Storer, target.ParentHashes[0])
	if err != nil {
		return p, fmt.Errorf("read parent of %s: %w", p.short, err)
	}
	head, err := s.head()
	if err != nil {
		return p, err
	}
	wants, err := s.treeFiles(before.TreeHash, keep)
	if err != nil {
		return p, err
	}
	nows, err := s.treeFiles(head.treeHash(), keep)
	if err != nil {
		return p, err
	}
	paths := slices.Collect(maps.Keys(wants))
	for path := range nows {
		if _, ok := wants[path]; !ok {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	for _, path := range paths {
		if want, now := wants[path], nows[path]; want != now {
			p.files = append(p.files, fileRestore{path, want, now})
		}
	}
	if len(p.files) == 0 {
		return p, fmt.Errorf("the memory files already are as before %s: %w", p.short, ErrNothingToCommit)
	}
	return p, nil
}

// applyRestore writes the planned versions of the files. On a failure it
// puts back the ones it got to, as HEAD has them.
func (s *Store) applyRestore(files []fileRestore) error {
	for i, r := range files {
		if err := s.writeVersion(r.path, r.want); err != nil {
			s.unapplyRestore(files[:i+1])
			return err
		}
	}
	return nil
}

// unapplyRestore puts files back as HEAD has them.
func (s *Store) unapplyRestore(files []fileRestore) {
	for _, r := range files {
		if err := s.writeVersion(r.path, r.now); err != nil {
			s.log.Error("memory repository: could not undo a failed restore", "path", r.path, "err", err)
		}
	}
}

// commitRestore records the restored files as the revert commit, naming in
// its body the later commits whose changes it discards.
func (s *Store) commitRestore(p restorePlan) (Commit, []Commit, error) {
	changed := make([]string, 0, len(p.files))
	lines := make([]string, 0, len(p.files))
	for _, r := range p.files {
		changed = append(changed, r.path)
		if r.want.exists {
			lines = append(lines, "- "+r.path+": restored")
		} else {
			lines = append(lines, "- "+r.path+": deleted (it did not exist before "+p.short+")")
		}
	}
	undone := touching(p.idx, p.later, changed)
	// The body describes the restored files alone: the others may be
	// another audience's.
	d, err := s.status(func(path string) bool { return slices.Contains(changed, path) })
	if err != nil {
		return Commit{}, nil, err
	}
	var body strings.Builder
	fmt.Fprintf(&body, "Restored the memory files to their state before %s (%s).\n\n", p.short, toCommit(p.target).Subject)
	if p.note != "" {
		body.WriteString(p.note + "\n\n")
	}
	body.WriteString(strings.Join(lines, "\n") + "\n")
	if len(undone) > 0 {
		body.WriteString("\nThis also undoes later commits:\n")
		for i, c := range undone {
			if i == maxUndoneListed {
				fmt.Fprintf(&body, "- … and %d more\n", len(undone)-i)
				break
			}
			body.WriteString("- " + c.Short + " " + c.Subject + "\n")
		}
	}
	if sum := s.Summary(d, 0); sum != "" {
		body.WriteString("\n" + sum)
	}
	c, err := s.commitPaths(changed, RevertPrefix+p.short, body.String())
	if err != nil {
		return Commit{}, nil, fmt.Errorf("commit the restore: %w", err)
	}
	return c, undone, nil
}

// maxUndoneListed bounds the later commits a restore commit's message
// names: a restore thousands of commits back would otherwise write a
// message of megabytes, which every later read of HEAD decodes (a
// /dream-log took 0.7 ms and 1.6 MB instead of 0.1 ms and 10 KB).
const maxUndoneListed = 50

// saveManualEdits commits uncommitted changes of the tracked files keep
// accepts (byte for byte: even a change of line endings only is kept) as
// ManualSubject, when there are any. The caller holds the index lock.
func (s *Store) saveManualEdits(keep func(string) bool) error {
	d, err := s.status(keep)
	if err != nil {
		return err
	}
	body := s.Summary(d, 0)
	if body == "" {
		body = "Only line endings or file modes changed."
	}
	head, err := s.head()
	if err != nil {
		return err
	}
	paths, _, err := s.trackedNow(head, keep)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return nil
	}
	_, err = s.commitPaths(paths, ManualSubject, body)
	if err != nil && !errors.Is(err, ErrNothingToCommit) {
		return fmt.Errorf("save edits made outside Dream: %w", err)
	}
	return nil
}

// commitsAfter returns the commit index's entries after target on the
// first-parent history of HEAD, oldest first, and the index.
func (s *Store) commitsAfter(target *object.Commit) ([]indexEntry, *commitIndex, error) {
	for rebuilt := false; ; rebuilt = true {
		x, err := s.commits()
		if err != nil {
			return nil, nil, err
		}
		i, ok := x.pos[target.Hash]
		if !ok {
			return nil, nil, fmt.Errorf("%s: %w", shortID(target.Hash.String()), ErrNotInHistory)
		}
		e := x.entries[i]
		if e.parent == target.ParentHashes[0] && e.subject == toCommit(target).Subject || rebuilt {
			return x.entries[i+1:], x, nil
		}
		s.forgetIndex("commit " + shortID(target.Hash.String()) + " differs")
	}
}

// touching keeps the commits of later (oldest first, entries of x) that
// changed any of paths, newest first. The commit index knows which tracked
// files each commit changed against its first parent, so no tree is read.
func touching(x *commitIndex, later []indexEntry, paths []string) []Commit {
	admits := x.admits(func(p string) bool { return slices.Contains(paths, p) })
	var out []Commit
	for i := len(later) - 1; i >= 0; i-- {
		if admits(&later[i]) {
			out = append(out, later[i].commit())
		}
	}
	return out
}

// writeVersion makes the workspace file at p the given committed version
// (atomically, through the Store's Files), or removes it when that version
// does not exist. A symbolic link is recreated directly: Files writes
// regular files only.
func (s *Store) writeVersion(p string, v blobState) error {
	full := filepath.Join(s.dir, filepath.FromSlash(p))
	if !v.exists {
		if err := s.files.Remove(p); err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		return nil
	}
	data, err := s.readBlob(v.hash)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return fmt.Errorf("restore %s: %w", p, err)
	}
	switch v.mode {
	case filemode.Symlink:
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		if err := os.Symlink(filepath.FromSlash(string(data)), full); err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		return nil
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		// Owner-only, as every file of the workspace: it is made of
		// conversations.
		perm := fs.FileMode(0o600)
		if v.mode == filemode.Executable {
			perm = 0o700
		}
		if err := s.files.WriteFile(p, data, perm); err != nil {
			return fmt.Errorf("restore %s: %w", p, err)
		}
		return nil
	default:
		return fmt.Errorf("restore %s: unsupported file mode %o", p, uint32(v.mode))
	}
}

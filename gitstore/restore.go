package gitstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// RestoreOptions say how a Restore is made.
type RestoreOptions struct {
	// Resolution decides where a later change touched the lines the
	// restore would undo: KeepLater (the default) or UndoAll.
	Resolution Resolution
	// Note is a sentence for the revert commit's message, after its first
	// paragraph: where the restore was asked for and by whom ("Asked for
	// on the memory page by the operator."). "" adds nothing.
	Note string
	// Trailers are further "Key: value" lines for the commit's trailers
	// (the caller's, such as the memory scopes the restore is about).
	Trailers []string
}

// Restored is a restore made: its commit and what it did.
type Restored struct {
	Commit Commit
	// Plan is what it did, with the resolution it was made with; it was
	// planned after the hand edits were saved.
	Plan RestorePlan
}

// Restore undoes the change of the commit rev to the tracked files keep
// accepts (nil: every tracked file), line by line, as a new commit
// "revert: undo <short id>": in each file the commit changed, the lines it
// added go and the lines it removed or changed come back where they
// stand as it left them; the other lines, later changes and hand edits
// included, stay; the files it did not change are neither read nor
// written. Where a later change touched the same lines, opts.Resolution
// decides (the plan names those places). A restore commit can itself be
// restored: that brings the change back.
//
// Nothing is lost on the way. History is never rewritten. Edits of the
// files keep accepts not yet committed are first committed as
// ManualSubject (they stay: the undo is planned on top of them). Files the
// repository does not track are never touched. The commit's trailers
// record what was undone (Reverts, Reverted, Kept-Later, Undid-Later;
// UndoneBy reads them), followed by opts.Trailers.
//
// The commit is made before the files are written (CommitChanges, then
// Checkout): a failure to write a file after it returns the commit with
// the error, and a later Checkout from the commit's parent writes the
// rest.
//
// rev resolves as in Show; it must be on the first-parent history of HEAD
// (ErrNotInHistory). A root commit has no earlier state: ErrRootCommit.
// When the undo changes nothing (the change is gone already, or every
// line of it was changed since and the later lines are kept),
// ErrNothingToCommit and no revert commit (the manual commit, if one was
// needed, stays).
func (s *Store) Restore(rev string, keep func(path string) bool, opts RestoreOptions) (Restored, error) {
	defer s.lock()()
	r, err := s.restore(rev, keep, opts)
	if err != nil {
		return r, fmt.Errorf("restore %s: %w", strings.TrimSpace(rev), err)
	}
	return r, nil
}

// PlanRestore says what Restore(rev, keep, …) would do now, changing
// nothing, so that a person can be asked to choose and confirm: every file
// and line it would change, and the places where a later change touched
// the same lines. Uncommitted hand edits are planned on as they stand
// (Restore saves them first, then plans the same). Errors are Restore's.
func (s *Store) PlanRestore(rev string, keep func(path string) bool) (RestorePlan, error) {
	defer s.lock()()
	target, err := s.resolveRestorable(rev)
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan restore of %s: %w", strings.TrimSpace(rev), err)
	}
	d, err := s.status(keep)
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan restore of %s: %w", strings.TrimSpace(rev), err)
	}
	now := s.workingVersion
	if s.bare() {
		x, err := s.commits()
		if err != nil {
			return RestorePlan{}, fmt.Errorf("plan restore of %s: %w", strings.TrimSpace(rev), err)
		}
		now = s.committedVersion(x)
	}
	plan, err := s.planUndo(target, keep, now)
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan restore of %s: %w", strings.TrimSpace(rev), err)
	}
	plan.Uncommitted = !d.Empty()
	return plan, nil
}

// resolveRestorable finds rev and checks it has an earlier state on the
// current history.
func (s *Store) resolveRestorable(rev string) (*object.Commit, error) {
	target, err := s.resolve(rev)
	if err != nil {
		return nil, err
	}
	if _, _, err := s.commitsAfter(target); err != nil {
		return nil, err
	}
	if err := s.checkRestorable(target); err != nil {
		return nil, err
	}
	return target, nil
}

// checkRestorable refuses a commit with no earlier state: the branch's
// root commit. A scope line's first commit (of a scope new since the
// lines) had none of its files before it: it can be undone.
func (s *Store) checkRestorable(target *object.Commit) error {
	if len(target.ParentHashes) > 0 {
		return nil
	}
	x, err := s.commits()
	if err != nil {
		return err
	}
	if i, ok := x.pos[target.Hash]; ok && x.entries[i].line != "" {
		return nil
	}
	return ErrRootCommit
}

func (s *Store) restore(rev string, keep func(string) bool, opts RestoreOptions) (Restored, error) {
	target, err := s.resolveRestorable(rev)
	if err != nil {
		return Restored{}, err
	}
	// Save hand edits first: they stay, and the history shows them apart.
	if err := s.lockedSave(keep); err != nil {
		return Restored{}, err
	}
	x, err := s.commits()
	if err != nil {
		return Restored{}, err
	}
	plan, err := s.planUndo(target, keep, s.committedVersion(x))
	if err != nil {
		return Restored{}, err
	}
	plan.Base, plan.Resolution = x.head().String(), opts.Resolution
	changes := plan.Changes(opts.Resolution)
	if len(changes) == 0 {
		return Restored{}, fmt.Errorf("undoing %s changes no line now: %w", plan.Target.Short, ErrNothingToCommit)
	}
	// The commit first, then its files: a kill in between leaves a commit
	// whose files the caller's next start writes (Checkout).
	body := plan.Message(opts.Resolution, opts.Note) + "\n\n" + strings.Join(append(plan.Trailers(opts.Resolution), opts.Trailers...), "\n")
	c, err := s.commitChanges(plan.Base, changes, RevertPrefix+plan.Target.Short, body, nil)
	if err != nil {
		return Restored{}, fmt.Errorf("commit the restore: %w", err)
	}
	if _, err := s.checkout(plan.Base, c.SHA, keep); err != nil {
		return Restored{Commit: c, Plan: plan}, fmt.Errorf("write the restored files: %w", err)
	}
	return Restored{Commit: c, Plan: plan}, nil
}

// lockedSave is saveManualEdits as one write.
func (s *Store) lockedSave(keep func(string) bool) error {
	return s.be.write(func() error { return s.saveManualEdits(keep) })
}

// PlanUndo is PlanRestore on the files as HEAD holds them (hand edits not
// yet committed are left out), with Base set to HEAD: the plan a caller
// commits itself (gitstore.Change from Changes, on Base, with CommitChanges
// and Checkout), having saved the hand edits first.
func (s *Store) PlanUndo(rev string, keep func(path string) bool) (RestorePlan, error) {
	defer s.lock()()
	target, err := s.resolveRestorable(rev)
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan the undo of %s: %w", strings.TrimSpace(rev), err)
	}
	x, err := s.commits()
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan the undo of %s: %w", strings.TrimSpace(rev), err)
	}
	plan, err := s.planUndo(target, keep, s.committedVersion(x))
	if err != nil {
		return RestorePlan{}, fmt.Errorf("plan the undo of %s: %w", strings.TrimSpace(rev), err)
	}
	plan.Base = x.head().String()
	return plan, nil
}

// version reads a file as it stands now, for the plan: in the workspace
// (PlanRestore) or in its line's newest commit (Restore, after saving the
// hand edits).
type version func(path string) (blobState, []byte, error)

func (s *Store) workingVersion(p string) (blobState, []byte, error) {
	w, err := s.readWorking(p)
	return w.blobState, w.data, err
}

func (s *Store) committedVersion(x *commitIndex) version {
	return func(p string) (blobState, []byte, error) {
		b, err := s.fileAt(x, len(x.entries)-1, p)
		if err != nil {
			return blobState{}, nil, err
		}
		data, err := s.content(b)
		return b, data, err
	}
}

// planUndo compares, for each tracked file keep accepts that target
// changed (on its line: a scope's first commit builds on the branch's
// commit that held every scope, whose other files it did not change), the
// version before target, target's and the one standing now.
func (s *Store) planUndo(target *object.Commit, keep func(string) bool, now version) (RestorePlan, error) {
	plan := RestorePlan{Target: toCommit(target)}
	parentTree := plumbing.ZeroHash // a scope line's first commit: nothing before
	if len(target.ParentHashes) > 0 {
		parent, err := object.GetCommit(s.obj(), target.ParentHashes[0])
		if err != nil {
			return plan, fmt.Errorf("read parent of %s: %w", plan.Target.Short, err)
		}
		parentTree = parent.TreeHash
	}
	changes, err := s.lineDiff(target, parentTree)
	if err != nil {
		return plan, err
	}
	later, x, err := s.commitsAfter(target)
	if err != nil {
		return plan, err
	}
	var conflicted []string
	for _, ch := range changes {
		if !s.tracks(ch.path) || keep != nil && !keep(ch.path) {
			continue
		}
		// First at once, from the commit's version to the one now: when no
		// later change touched the commit's lines there, that is exact,
		// and the versions between need not be read.
		f, err := s.fileUndo(ch, nil, now)
		if err == nil && f.touched {
			f, err = s.fileUndo(ch, s.laterVersions(later, x, ch.path), now)
		}
		if err != nil {
			return plan, err
		}
		if f.link {
			plan.Links = append(plan.Links, f.Path)
			continue
		}
		if f.out[KeepLater].changes || f.out[UndoAll].changes {
			plan.Files = append(plan.Files, f)
		}
		if len(f.Conflicts) > 0 {
			conflicted = append(conflicted, f.Path)
		}
	}
	if len(plan.Files) == 0 && len(plan.Links) > 0 {
		return plan, &LinkNotRestoredError{Commit: plan.Target.Short, Paths: plan.Links}
	}
	if len(plan.Files) == 0 {
		return plan, fmt.Errorf("the change of %s is undone already: %w", plan.Target.Short, ErrNothingToCommit)
	}
	if len(conflicted) > 0 {
		plan.Later = touching(x, later, conflicted)
	}
	return plan, nil
}

// maxFollowed bounds the later versions of a file the undo follows; past
// them it goes from the last one followed to the file now at once (a
// commit thousands of changes back would otherwise read every version of
// the file). Of those, it reads only the ones it must (lazyrevert.go).
const maxFollowed = 50

// laterVersions are the versions of the file p the later commits made,
// oldest first (at most maxFollowed), each read from the repository when
// the undo asks for it.
func (s *Store) laterVersions(later []indexEntry, x *commitIndex, p string) laterFiles {
	v := &storedVersions{s: s, path: p}
	n, ok := x.num[p]
	if !ok {
		return v
	}
	for _, e := range later {
		if len(v.commits) == maxFollowed {
			break
		}
		if slices.Contains(e.changed, n) {
			v.commits = append(v.commits, e.id)
		}
	}
	return v
}

// storedVersions are a file's versions in the commits that made them.
type storedVersions struct {
	s       *Store
	path    string
	commits []plumbing.Hash
}

func (v *storedVersions) Len() int { return len(v.commits) }

func (v *storedVersions) At(i int) (FileText, bool, error) {
	c, err := object.GetCommit(v.s.obj(), v.commits[i])
	if err != nil {
		return FileText{}, false, fmt.Errorf("read commit %s: %w", shortID(v.commits[i].String()), err)
	}
	b, err := v.s.lookup(c.TreeHash, v.path)
	if err != nil {
		return FileText{}, false, err
	}
	data, err := v.s.content(b)
	if err != nil {
		return FileText{}, false, err
	}
	return FileText{data, b.exists}, lineFile(b, data), nil
}

// fileUndo plans the undo of one file's change, followed through the
// versions later commits made (between; nil: none) to the one now.
func (s *Store) fileUndo(ch treeChange, between laterFiles, now version) (FileUndo, error) {
	f := FileUndo{Path: ch.path}
	cur, curData, err := now(ch.path)
	if err != nil {
		return f, err
	}
	f.was = cur
	base, err := s.content(ch.from)
	if err != nil {
		return f, err
	}
	left, err := s.content(ch.to)
	if err != nil {
		return f, err
	}
	if !lineFile(ch.from, base) || !lineFile(ch.to, left) || !lineFile(cur, curData) {
		// Not lines of text (a binary, a link): put back whole where it
		// still is as the commit left it. A link is never brought back:
		// memory files are read through none.
		f.Whole = true
		back := fileOut{exists: ch.from.exists, mode: ch.from.mode, data: base, changes: cur != ch.from}
		switch {
		case ch.from.exists && ch.from.mode == filemode.Symlink:
			f.link = true // left as it is, whatever stands there now
			return f, nil
		case ch.from.exists && ch.from.mode != filemode.Regular && ch.from.mode != filemode.Executable:
			f.Conflicts = []LineConflict{{}}
		case cur == ch.to:
			f.out = [2]fileOut{back, back}
		default:
			f.Conflicts = []LineConflict{{}}
			f.out = [2]fileOut{{}, back}
		}
		f.Deleted, f.Created = cur.exists && f.out[KeepLater].changes && !ch.from.exists, !cur.exists && f.out[KeepLater].changes
		return f, nil
	}
	mode := cur.mode
	if !cur.exists {
		mode = ch.from.mode
	}
	f, err = undoText(FileText{base, ch.from.exists}, FileText{left, ch.to.exists}, between, FileText{curData, cur.exists}, mode)
	f.Path, f.was = ch.path, cur
	return f, err
}

// FileText is one version of a file: its bytes, and whether there is a
// file at all.
type FileText struct {
	Data   []byte
	Exists bool
}

// UndoLines is the line-level undo on its own: it undoes on current the
// change a commit made from base to target, conflicts resolved as res
// says, and returns the file it leaves and what it did (without a Path).
// Restore does this for each file of a commit.
func UndoLines(base, target, current FileText, res Resolution) (FileText, FileUndo) {
	f, _ := undoText(base, target, nil, current, filemode.Regular) // nothing to read: no error
	o := f.out[res]
	return FileText{Data: o.data, Exists: o.exists}, f
}

// undoText plans the undo of a text file's change, followed through the
// versions between (nil: none) to the one now (cur); mode is the mode the
// file keeps.
func undoText(base, left FileText, between laterFiles, cur FileText, mode filemode.FileMode) (FileUndo, error) {
	var f FileUndo
	r, err := revertThrough(splitLines(base.Data, base.Exists), splitLines(left.Data, left.Exists), between, splitLines(cur.Data, cur.Exists))
	if err != nil {
		return f, err
	}
	f.touched = slices.Contains(r.touched, true)
	for _, p := range r.parts {
		f.Removed = append(f.Removed, p.removed...)
		f.Restored = append(f.Restored, p.restored...)
		if p.kind == partConflict {
			f.Conflicts = append(f.Conflicts, LineConflict{Now: p.now, Left: p.left, Before: p.before})
		}
	}
	for _, res := range []Resolution{KeepLater, UndoAll} {
		t := r.result(res)
		data := t.bytes()
		o := fileOut{exists: t.exists, mode: mode, data: data}
		o.changes = t.exists != cur.Exists || t.exists && string(data) != string(cur.Data)
		f.out[res] = o
	}
	kl := f.out[KeepLater]
	f.Deleted, f.Created = cur.Exists && !kl.exists, !cur.Exists && kl.exists
	return f, nil
}

// lineFile says a version can be undone line by line: absent, or a
// regular file of text.
func lineFile(b blobState, data []byte) bool {
	if !b.exists {
		return true
	}
	return (b.mode == filemode.Regular || b.mode == filemode.Executable || b.mode == filemode.Deprecated) && isText(data)
}

// fileOut is a file as the undo leaves it.
type fileOut struct {
	changes bool // it differs from the file now
	exists  bool
	mode    filemode.FileMode
	data    []byte
}

// saveManualEdits commits uncommitted changes of the tracked files keep
// accepts (byte for byte: even a change of line endings only is kept) as
// ManualSubject, when there are any. The caller holds the index lock.
func (s *Store) saveManualEdits(keep func(string) bool) error {
	if s.bare() {
		return nil
	}
	d, err := s.status(keep)
	if err != nil {
		return err
	}
	body := s.Summary(d, 0)
	if body == "" {
		body = "Only line endings or file modes changed."
	}
	paths, err := s.trackedPaths(keep)
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
		if e.commit().Parent == toCommit(target).Parent && e.subject == toCommit(target).Subject || rebuilt {
			return x.entries[i+1:], x, nil
		}
		s.forgetIndex("commit " + shortID(target.Hash.String()) + " differs")
	}
}

// touching keeps the commits of later (oldest first, entries of x) that
// changed any of paths, newest first, at most maxLaterNamed. The commit
// index knows which tracked files each commit changed against its first
// parent, so no tree is read.
func touching(x *commitIndex, later []indexEntry, paths []string) []Commit {
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	admits := x.admits(func(p string) bool { return want[p] })
	var out []Commit
	for i := len(later) - 1; i >= 0 && len(out) < maxLaterNamed; i-- {
		if admits(&later[i]) {
			out = append(out, later[i].commit())
		}
	}
	return out
}

// maxLaterNamed bounds the later commits a plan names: a restore far back
// in a long history would otherwise list thousands.
const maxLaterNamed = 10

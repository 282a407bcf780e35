package dream

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/workspace"
)

// fakeRepo is a memory repository kept in memory, with the path-aware
// commits and restores the gitstore is gaining: it tracks the root's files
// (workspace.TrackedFiles) and every scope folder's memory files, commits
// exactly the paths it is given, and restores only the paths a filter
// keeps. Its diffs count lines as a multiset (enough for the counts Dream
// reports), each file's part opening with git's "diff --git" header.
type fakeRepo struct {
	dir     string
	mu      sync.Mutex
	commits []fakeCommit // oldest first
	n       int
}

type fakeCommit struct {
	c       gitstore.Commit
	tree    map[string]string
	changed []string // paths that differ from the parent's tree
}

func newFakeRepo(dir string) *fakeRepo {
	r := &fakeRepo{dir: dir}
	tree := map[string]string{}
	for _, p := range r.tracked(nil) {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			tree[p] = string(b)
		}
	}
	r.add(gitstore.InitSubject, "", tree)
	return r
}

// tracked lists the tracked paths: the root's, and the memory files of
// every scope folder on disk or in tree.
func (r *fakeRepo) tracked(tree map[string]string) []string {
	out := workspace.TrackedFiles()
	entries, _ := os.ReadDir(filepath.Join(r.dir, audience.ScopesDir))
	for _, e := range entries {
		if s, err := audience.ParseScope(e.Name()); err == nil && e.IsDir() {
			out = append(out, scopeFiles(s)...)
		}
	}
	for p := range tree {
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (r *fakeRepo) head() fakeCommit { return r.commits[len(r.commits)-1] }

func (r *fakeRepo) add(subject, body string, tree map[string]string) gitstore.Commit {
	r.n++
	sum := sha1.Sum(fmt.Appendf(nil, "%d %s", r.n, subject))
	sha := hex.EncodeToString(sum[:])
	c := gitstore.Commit{SHA: sha, Short: sha[:8], Subject: subject, Body: body, When: time.Now()}
	var changed []string
	if len(r.commits) > 0 {
		parent := r.head()
		c.Parent = parent.c.SHA
		for _, p := range r.tracked(tree) {
			if v, ok := tree[p]; ok != hasKey(parent.tree, p) || v != parent.tree[p] {
				changed = append(changed, p)
			}
		}
	}
	r.commits = append(r.commits, fakeCommit{c: c, tree: tree, changed: changed})
	return c
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func (r *fakeRepo) working(p string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(p)))
	return string(b), err == nil
}

// diff compares two trees on paths.
func fakeDiff(from, to map[string]string, paths []string) gitstore.Diff {
	var d gitstore.Diff
	var u strings.Builder
	for _, p := range paths {
		a, b := from[p], to[p]
		if a == b && hasKey(from, p) == hasKey(to, p) {
			continue
		}
		al, bl := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
		count := map[string]int{}
		for _, l := range al {
			if l != "" {
				count[l]++
			}
		}
		fc := gitstore.FileChange{Path: p}
		fmt.Fprintf(&u, "diff --git a/%s b/%s\n", p, p)
		for _, l := range bl {
			if l == "" {
				continue
			}
			if count[l] > 0 {
				count[l]--
				continue
			}
			fc.Added++
			u.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
		for l, n := range count {
			fc.Deleted += n
			for range n {
				u.WriteString("-" + strings.TrimSuffix(l, "\n") + "\n")
			}
		}
		d.Files = append(d.Files, fc)
	}
	d.Unified = u.String()
	return d
}

func (r *fakeRepo) workTree(paths []string) map[string]string {
	w := map[string]string{}
	for _, p := range paths {
		if v, ok := r.working(p); ok {
			w[p] = v
		}
	}
	return w
}

func (r *fakeRepo) Status(keep func(string) bool) (gitstore.Diff, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	paths := kept(r.tracked(r.head().tree), keep)
	return fakeDiff(r.head().tree, r.workTree(paths), paths), nil
}

// kept is the paths keep accepts (nil: all).
func kept(paths []string, keep func(string) bool) []string {
	if keep == nil {
		return paths
	}
	var out []string
	for _, p := range paths {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func (r *fakeRepo) CommitPaths(paths []string, subject, body string) (gitstore.Commit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	tree := maps(r.head().tree)
	changed := false
	for _, p := range paths {
		v, ok := r.working(p)
		if ok != hasKey(tree, p) || v != tree[p] {
			changed = true
		}
		if ok {
			tree[p] = v
		} else {
			delete(tree, p)
		}
	}
	if !changed {
		return gitstore.Commit{}, gitstore.ErrNothingToCommit
	}
	return r.add(subject, body, tree), nil
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (r *fakeRepo) Summary(d gitstore.Diff, _ int) string { return d.Unified }

func (r *fakeRepo) find(rev string) (int, error) {
	rev = strings.TrimSpace(rev)
	if len(rev) < 4 {
		return 0, gitstore.ErrInvalidRevision
	}
	for i, c := range r.commits {
		if strings.HasPrefix(c.c.SHA, rev) {
			return i, nil
		}
	}
	return 0, gitstore.ErrUnknownRevision
}

func (r *fakeRepo) Show(rev string, keep func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, err := r.find(rev)
	if err != nil {
		return gitstore.Commit{}, gitstore.Diff{}, err
	}
	if i == 0 {
		return r.commits[0].c, gitstore.Diff{}, nil
	}
	c := r.commits[i]
	return c.c, fakeDiff(r.commits[i-1].tree, c.tree, kept(c.changed, keep)), nil
}

// restorePlan is what a restore of the commit at i would do to the files
// keep accepts: the paths it changes (against tree, HEAD's with the hand
// edits when they are saved first) and the later commits it undoes.
func (r *fakeRepo) restorePlan(i int, keep func(string) bool, tree map[string]string) (changed []string, undone []gitstore.Commit) {
	before := r.commits[i-1].tree
	for _, p := range r.restorable(i, keep) {
		if hasKey(before, p) != hasKey(tree, p) || before[p] != tree[p] {
			changed = append(changed, p)
		}
	}
	for j := len(r.commits) - 1; j > i; j-- {
		if slices.ContainsFunc(r.commits[j].changed, func(p string) bool { return slices.Contains(changed, p) }) {
			undone = append(undone, r.commits[j].c)
		}
	}
	return changed, undone
}

// restorable are the paths a restore of the commit at i may touch: a
// snapshot of every tracked file keep accepts, as gitstore's, the files of
// the tree before the target, of HEAD's and of the workspace.
func (r *fakeRepo) restorable(i int, keep func(string) bool) []string {
	both := maps(r.commits[i-1].tree)
	for p, v := range r.head().tree {
		both[p] = v
	}
	return kept(r.tracked(both), keep)
}

// withHandEdits is HEAD's tree with the workspace's edits of paths, and
// whether there were any.
func (r *fakeRepo) withHandEdits(paths []string) (map[string]string, bool) {
	tree := maps(r.head().tree)
	manual := false
	for _, p := range paths {
		v, ok := r.working(p)
		if ok != hasKey(tree, p) || ok && v != tree[p] {
			manual = true
			if ok {
				tree[p] = v
			} else {
				delete(tree, p)
			}
		}
	}
	return tree, manual
}

func (r *fakeRepo) PlanRestore(rev string, keep func(string) bool) (gitstore.RestorePlan, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, err := r.find(rev)
	if err != nil {
		return gitstore.RestorePlan{}, err
	}
	if i == 0 {
		return gitstore.RestorePlan{}, gitstore.ErrRootCommit
	}
	_, manual := r.withHandEdits(r.restorable(i, keep))
	changed, undone := r.restorePlan(i, keep, r.head().tree)
	if len(changed) == 0 && !manual {
		return gitstore.RestorePlan{}, gitstore.ErrNothingToCommit
	}
	return gitstore.RestorePlan{Files: changed, Undone: undone, Uncommitted: manual}, nil
}

func (r *fakeRepo) RestoreNoted(rev string, keep func(string) bool, note string) (gitstore.Commit, []gitstore.Commit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, err := r.find(rev)
	if err != nil {
		return gitstore.Commit{}, nil, err
	}
	if i == 0 {
		return gitstore.Commit{}, nil, gitstore.ErrRootCommit
	}
	// Hand edits of those paths first, as gitstore does.
	tree, manual := r.withHandEdits(r.restorable(i, keep))
	if manual {
		r.add(gitstore.ManualSubject, "", tree)
	}
	before := r.commits[i-1].tree
	changed, undone := r.restorePlan(i, keep, tree)
	if len(changed) == 0 {
		return gitstore.Commit{}, nil, gitstore.ErrNothingToCommit
	}
	for _, p := range changed {
		full := filepath.Join(r.dir, filepath.FromSlash(p))
		if v, ok := before[p]; ok {
			if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
				return gitstore.Commit{}, nil, err
			}
			if err := os.WriteFile(full, []byte(v), 0o600); err != nil {
				return gitstore.Commit{}, nil, err
			}
			tree[p] = v
		} else {
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return gitstore.Commit{}, nil, err
			}
			delete(tree, p)
		}
	}
	target := r.commits[i].c
	return r.add(gitstore.RevertPrefix+target.Short, note, tree), undone, nil
}

func (r *fakeRepo) Pack() (int, error) { return 0, nil }

// log lists the commits, newest first.
func (r *fakeRepo) log() []fakeCommit {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.commits)
	slices.Reverse(out)
	return out
}

// inScope reports whether every path of c is the scope's.
func (c fakeCommit) inScope(s audience.Scope) bool {
	for _, p := range c.changed {
		if got, ok := audience.ScopeOfPath(p); !ok || got != s {
			return false
		}
	}
	return true
}

package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The tracked set is rules: the fixed files (Options.Tracked), each a rule
// of literal segments, and the patterns (Options.Patterns), whose segments
// may hold '*' for any run of characters but '/'. A file is tracked when a
// rule with as many segments matches it segment by segment, as the
// .gitignore lines the store writes make git see it. Which pattern files
// exist is found by looking: in the workspace (a folder appears when a
// scope is first used) and in a commit's tree.

// rule is one tracked file or pattern, split at '/'.
type rule []string

// segMatch reports whether the name matches the pattern segment seg.
func segMatch(seg, name string) bool {
	if !strings.Contains(seg, "*") {
		return seg == name
	}
	ok, _ := path.Match(seg, name) // seg holds no '[' or '\\': never malformed
	return ok
}

// cleanPatterns validates and sorts the patterns as cleanTracked the fixed
// files, with '*' allowed within a segment (not "**", and not in a segment
// starting with '.', which could match .git), and refuses a pattern whose
// files could be directories on the way to a fixed file or to another
// pattern's files (or the other way round): git cannot track a path as
// both.
func cleanPatterns(in, fixed []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, p := range in {
		if err := checkPath(strings.ReplaceAll(p, "*", "x")); err != nil {
			return nil, fmt.Errorf("tracked pattern %q: %w", p, err)
		}
		if strings.Contains(p, "**") {
			return nil, fmt.Errorf("tracked pattern %q: '**' is not supported", p)
		}
		for seg := range strings.SplitSeq(p, "/") {
			if strings.HasPrefix(seg, ".") && strings.Contains(seg, "*") {
				return nil, fmt.Errorf("tracked pattern %q: a segment starting with '.' may not hold '*'", p)
			}
		}
		out = append(out, p)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	var all []rule
	for _, p := range append(slices.Clone(fixed), out...) {
		all = append(all, strings.Split(p, "/"))
	}
	for _, a := range all {
		for _, b := range all {
			if len(a) < len(b) && mayMeet(a, b[:len(a)]) {
				return nil, fmt.Errorf("tracked %q and %q: a file cannot also be a directory",
					strings.Join(a, "/"), strings.Join(b, "/"))
			}
		}
	}
	return out, nil
}

// mayMeet reports whether two rules of as many segments may match one
// path (a segment with '*' is taken to meet any other).
func mayMeet(a, b rule) bool {
	for i := range a {
		if a[i] != b[i] && !strings.Contains(a[i], "*") && !strings.Contains(b[i], "*") {
			return false
		}
	}
	return true
}

// tracks reports whether the store versions the file p: a fixed file, or a
// file a pattern matches whose every name needs no escaping (validName).
func (s *Store) tracks(p string) bool {
	if _, ok := slices.BinarySearch(s.tracked, p); ok {
		return true
	}
	if p == ignoreFile {
		return false
	}
	n := strings.Count(p, "/") + 1
	for _, r := range s.patRules {
		if len(r) == n && matchRule(r, p) {
			return !slices.ContainsFunc(strings.Split(p, "/"), func(name string) bool { return !validName(name) })
		}
	}
	return false
}

// matchRule reports whether p, of as many segments as r, matches it.
func matchRule(r rule, p string) bool {
	for _, seg := range r {
		name, rest, _ := strings.Cut(p, "/")
		if !segMatch(seg, name) {
			return false
		}
		p = rest
	}
	return true
}

// validName reports whether a name found in a tree or a folder may be part
// of a tracked path: the characters checkPath allows, never "..", ".git"
// or "." (none of these needs quoting in .gitignore or in a diff header).
func validName(name string) bool {
	if name == "" || name == "." || name == ".." || strings.EqualFold(name, ".git") {
		return false
	}
	for _, r := range name {
		if !pathChar(r) || r == '/' {
			return false
		}
	}
	return true
}

// step sorts the rules still matching at depth by a name found there:
// leaf when one ends with that name, deeper those going on below it.
func step(rules []rule, depth int, name string) (leaf bool, deeper []rule) {
	for _, r := range rules {
		if !segMatch(r[depth], name) {
			continue
		}
		if len(r) == depth+1 {
			leaf = true
		} else {
			deeper = append(deeper, r)
		}
	}
	return leaf, deeper
}

// treeFiles returns the tracked files of the tree root (zero: the empty
// tree) that keep accepts (nil: all), with their versions. A tracked path
// that is a directory in the tree is no file of it, as in lookup.
func (s *Store) treeFiles(root plumbing.Hash, keep func(string) bool) (map[string]blobState, error) {
	out := map[string]blobState{}
	if root.IsZero() {
		return out, nil
	}
	err := s.walkTree(root, "", 0, s.rules, keep, out)
	return out, err
}

func (s *Store) walkTree(h plumbing.Hash, dir string, depth int, rules []rule, keep func(string) bool, out map[string]blobState) error {
	t, err := s.tree(h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		p := dir + e.Name
		if !validName(e.Name) || p == ignoreFile {
			continue
		}
		leaf, deeper := step(rules, depth, e.Name)
		switch {
		case e.Mode == filemode.Dir && len(deeper) > 0:
			if err := s.walkTree(e.Hash, p+"/", depth+1, deeper, keep, out); err != nil {
				return err
			}
		case e.Mode != filemode.Dir && leaf && (keep == nil || keep(p)):
			out[p] = blobState{exists: true, mode: e.Mode, hash: e.Hash}
		}
	}
	return nil
}

// workingFiles lists the tracked files keep accepts (nil: all) that exist
// in the workspace, sorted: the fixed files that are there, and every file
// a pattern matches. A directory that is a symbolic link is not entered
// (git does not follow one either); a file that is one is listed.
func (s *Store) workingFiles(keep func(string) bool) ([]string, error) {
	if s.bare() {
		return nil, nil
	}
	var out []string
	if err := s.walkDir("", 0, s.rules, keep, &out); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

func (s *Store) walkDir(dir string, depth int, rules []rule, keep func(string) bool, out *[]string) error {
	full := filepath.Join(s.dir, filepath.FromSlash(dir))
	type found struct {
		name string
		mode fs.FileMode
	}
	var names []found
	if slices.ContainsFunc(rules, func(r rule) bool { return strings.Contains(r[depth], "*") }) {
		entries, err := os.ReadDir(full)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", strings.TrimSuffix(dir, "/"), err)
		}
		for _, e := range entries {
			names = append(names, found{e.Name(), e.Type()})
		}
	} else {
		// Only literal names here: look them up instead of listing a
		// folder that may be large (the workspace root).
		var seen []string
		for _, r := range rules {
			if slices.Contains(seen, r[depth]) {
				continue
			}
			seen = append(seen, r[depth])
			fi, err := os.Lstat(filepath.Join(full, r[depth]))
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue
			}
			if err != nil {
				return fmt.Errorf("stat %s: %w", dir+r[depth], err)
			}
			names = append(names, found{r[depth], fi.Mode().Type()})
		}
	}
	for _, f := range names {
		p := dir + f.name
		if !validName(f.name) || p == ignoreFile {
			continue
		}
		leaf, deeper := step(rules, depth, f.name)
		switch {
		case f.mode.IsDir() && len(deeper) > 0:
			if err := s.walkDir(p+"/", depth+1, deeper, keep, out); err != nil {
				return err
			}
		case !f.mode.IsDir() && leaf && (keep == nil || keep(p)):
			if f.mode.IsRegular() || f.mode&fs.ModeSymlink != 0 {
				*out = append(*out, p)
			}
		}
	}
	return nil
}

// trackedNow lists the tracked files keep accepts (nil: all) that a
// commit now would record, sorted: the fixed files, the pattern files in
// the workspace and those in their lines' commits (a folder removed from
// the workspace is a removal to record). It returns the lines' versions of
// them too.
func (s *Store) trackedNow(keep func(string) bool) ([]string, map[string]blobState, error) {
	x, err := s.commits()
	if err != nil {
		return nil, nil, err
	}
	lines, err := s.linesFor(x, keep)
	if err != nil {
		return nil, nil, err
	}
	had, err := s.filesAt(x, len(x.entries)-1, lines, keep)
	if err != nil {
		return nil, nil, err
	}
	work, err := s.workingFiles(keep)
	if err != nil {
		return nil, nil, err
	}
	paths := work
	for _, p := range s.tracked {
		if keep == nil || keep(p) {
			paths = append(paths, p)
		}
	}
	for p := range had {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return slices.Compact(paths), had, nil
}

// trackedPaths is trackedNow's paths.
func (s *Store) trackedPaths(keep func(string) bool) ([]string, error) {
	paths, _, err := s.trackedNow(keep)
	return paths, err
}

// linesFor lists the lines whose files keep may accept (nil: every line):
// the branch, and every scope the commit index, the branch's last commit
// that held every scope, or the workspace knows of, sorted.
func (s *Store) linesFor(x *commitIndex, keep func(string) bool) ([]line, error) {
	if !s.linesOn() {
		return []line{""}, nil
	}
	seen := map[line]bool{"": true}
	for l := range x.last {
		seen[l] = true
	}
	legacy, err := s.legacyLines(x)
	if err != nil {
		return nil, err
	}
	for _, l := range legacy {
		seen[l] = true
	}
	work, err := s.workingLines()
	if err != nil {
		return nil, err
	}
	for _, l := range work {
		seen[l] = true
	}
	var out []line
	for l := range seen {
		if s.lineAdmits(l, keep) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out, nil
}

// legacyLines are the scope folders of the branch's newest commit that
// held every scope (none without one), remembered by its id.
func (s *Store) legacyLines(x *commitIndex) ([]line, error) {
	i := len(x.entries) - 1
	for ; i >= 0 && !(x.entries[i].line == "" && x.entries[i].holds); i-- {
	}
	if i < 0 {
		return nil, nil
	}
	id := x.entries[i].id
	if s.legacy.id == id {
		return s.legacy.lines, nil
	}
	c, err := object.GetCommit(s.obj(), id)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", shortID(id.String()), err)
	}
	t, err := s.tree(c.TreeHash)
	if err != nil {
		return nil, err
	}
	var out []line
	if e := findEntry(t.Entries, s.linesDir); e != nil && e.Mode == filemode.Dir {
		sub, err := s.tree(e.Hash)
		if err != nil {
			return nil, err
		}
		for _, e := range sub.Entries {
			if e.Mode == filemode.Dir && validName(e.Name) {
				out = append(out, line(e.Name))
			}
		}
	}
	s.legacy.id, s.legacy.lines = id, out
	return out, nil
}

// filesAt are the tracked files of the lines that keep accepts (nil:
// all), as each line stood at the commit at position p of x (-1: before
// any), with their versions.
func (s *Store) filesAt(x *commitIndex, p int, lines []line, keep func(string) bool) (map[string]blobState, error) {
	out := map[string]blobState{}
	for _, l := range lines {
		root, err := s.rootAt(x, l, p)
		if err != nil {
			return nil, err
		}
		files, err := s.lineFiles(l, root, keep)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, files)
	}
	return out, nil
}

// rootAt is the tree of line l's commit at position p of x (zero: none).
func (s *Store) rootAt(x *commitIndex, l line, p int) (plumbing.Hash, error) {
	i := x.at(l, p)
	if i < 0 {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(s.obj(), x.entries[i].id)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", shortID(x.entries[i].id.String()), err)
	}
	return c.TreeHash, nil
}

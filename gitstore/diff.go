package gitstore

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// FileChange counts the lines one file gained and lost. A Binary change
// (a NUL byte or invalid UTF-8 on either side) has no line counts.
type FileChange struct {
	Path           string
	Added, Deleted int
	Binary         bool
}

// Diff is a set of file changes, sorted by path, and their git-style unified
// diff ("diff --git a/X b/X" headers, three lines of context).
type Diff struct {
	Files   []FileChange
	Unified string
}

// Empty reports whether the diff has no file changes.
func (d Diff) Empty() bool { return len(d.Files) == 0 }

const (
	contextLines = 3
	// diffTimeout bounds the line diff of pathological inputs; past it the
	// rest is reported as one delete plus one insert, still correct.
	diffTimeout = 2 * time.Second
	// binarySniff is how far git looks for a NUL byte.
	binarySniff = 8000
)

// side is one version of a file in a diff.
type side struct {
	blobState
	data []byte
}

// Status compares the tracked files in the workspace with HEAD, as Dream
// counts its changes and as Dream and "manual:" commit bodies describe them
// (through Summary). A file missing on either side counts as empty, and
// differences in line endings alone (CRLF against LF) are ignored, in the
// counts and in the diff; a missing final newline is a change; a lone CR is
// a change. Only the tracked files keep accepts are compared (nil: every
// tracked file). An empty Diff means there is nothing worth a commit.
func (s *Store) Status(keep func(path string) bool) (Diff, error) {
	defer s.lock()()
	d, err := s.status(keep)
	if err != nil {
		return Diff{}, fmt.Errorf("status: %w", err)
	}
	return d, nil
}

func (s *Store) status(keep func(string) bool) (Diff, error) {
	if s.bare() {
		return Diff{}, nil // no workspace: nothing is uncommitted
	}
	paths, heads, err := s.trackedNow(keep)
	if err != nil {
		return Diff{}, err
	}
	var out Diff
	var sb strings.Builder
	for _, p := range paths {
		w, err := s.readWorking(p)
		if err != nil {
			return Diff{}, err
		}
		had := heads[p]
		if had == w.blobState {
			continue
		}
		from := side{blobState: had}
		if had.exists {
			if from.data, err = s.readBlob(had.hash); err != nil {
				return Diff{}, err
			}
		}
		if fc, ok := fileDiff(&sb, p, from, side{w.blobState, w.data}, true); ok {
			out.Files = append(out.Files, fc)
		}
	}
	out.Unified = sb.String()
	return out, nil
}

// commitDiff is the diff of c against its first parent (a root commit:
// against the empty tree), over the files of the commit keep accepts (nil:
// every one), of c's line alone: a scope's first commit has the branch's
// commit that held every scope as parent, whose other files are no change
// of c's. Files keep refuses are never read.
func (s *Store) commitDiff(c *object.Commit, keep func(string) bool) (Diff, error) {
	parentTree := plumbing.ZeroHash
	if len(c.ParentHashes) > 0 {
		p, err := object.GetCommit(s.obj(), c.ParentHashes[0])
		if err != nil {
			return Diff{}, fmt.Errorf("read parent %s: %w", shortID(c.ParentHashes[0].String()), err)
		}
		parentTree = p.TreeHash
	}
	changes, err := s.lineDiff(c, parentTree)
	if err != nil {
		return Diff{}, err
	}
	var out Diff
	var sb strings.Builder
	for _, ch := range changes {
		if keep != nil && !keep(ch.path) {
			continue
		}
		from, to := side{blobState: ch.from}, side{blobState: ch.to}
		if from.data, err = s.content(ch.from); err != nil {
			return Diff{}, err
		}
		if to.data, err = s.content(ch.to); err != nil {
			return Diff{}, err
		}
		if fc, ok := fileDiff(&sb, ch.path, from, to, false); ok {
			out.Files = append(out.Files, fc)
		}
	}
	out.Unified = sb.String()
	return out, nil
}

// content reads a file version; a submodule entry has no blob here and is
// shown by its commit id.
func (s *Store) content(b blobState) ([]byte, error) {
	switch {
	case !b.exists:
		return nil, nil
	case b.mode == filemode.Submodule:
		return []byte("Subproject commit " + b.hash.String() + "\n"), nil
	default:
		return s.readBlob(b.hash)
	}
}

type treeChange struct {
	path     string
	from, to blobState
}

// lineDiff lists the files of c's line that differ between the tree
// parent and c's: a scope's folder, or the branch's files without the
// lines folder once the branch no longer holds it; every file for a commit
// of the branch that holds it or one the commit index does not know.
func (s *Store) lineDiff(c *object.Commit, parent plumbing.Hash) ([]treeChange, error) {
	l, skip := line(""), ""
	if s.linesOn() {
		x, err := s.commits()
		if err != nil {
			return nil, err
		}
		if i, ok := x.pos[c.Hash]; ok {
			l = x.entries[i].line
			if l == "" && !x.entries[i].holds {
				skip = s.linesDir
			}
		}
	}
	if l == "" {
		return s.diffTrees(parent, c.TreeHash, "", skip)
	}
	a, err := s.lineTree(l, parent)
	if err != nil {
		return nil, err
	}
	b, err := s.lineTree(l, c.TreeHash)
	if err != nil {
		return nil, err
	}
	return s.diffTrees(a, b, s.lineDir(l)+"/", "")
}

// diffTrees lists the files that differ between two trees (zero: empty), in
// path order, but for the top-level entry named skip. A path that is a
// file on one side and a directory on the other yields the file's removal
// or addition plus the directory's files.
func (s *Store) diffTrees(a, b plumbing.Hash, prefix, skip string) ([]treeChange, error) {
	if a == b {
		return nil, nil
	}
	ea, err := s.treeEntries(a)
	if err != nil {
		return nil, err
	}
	eb, err := s.treeEntries(b)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ea)+len(eb))
	for n := range ea {
		names = append(names, n)
	}
	for n := range eb {
		if _, ok := ea[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []treeChange
	for _, n := range names {
		if n == skip && skip != "" {
			continue
		}
		x, inA := ea[n]
		y, inB := eb[n]
		p := prefix + n
		dirA, dirB := inA && x.Mode == filemode.Dir, inB && y.Mode == filemode.Dir
		var fileA, fileB blobState
		if inA && !dirA {
			fileA = blobState{exists: true, mode: x.Mode, hash: x.Hash}
		}
		if inB && !dirB {
			fileB = blobState{exists: true, mode: y.Mode, hash: y.Hash}
		}
		if fileA != fileB {
			out = append(out, treeChange{path: p, from: fileA, to: fileB})
		}
		subA, subB := plumbing.ZeroHash, plumbing.ZeroHash
		if dirA {
			subA = x.Hash
		}
		if dirB {
			subB = y.Hash
		}
		if subA != subB {
			sub, err := s.diffTrees(subA, subB, p+"/", "")
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
	}
	slices.SortStableFunc(out, func(x, y treeChange) int { return strings.Compare(x.path, y.path) })
	return out, nil
}

func (s *Store) treeEntries(h plumbing.Hash) (map[string]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	t, err := s.tree(h)
	if err != nil {
		return nil, err
	}
	m := make(map[string]object.TreeEntry, len(t.Entries))
	for _, e := range t.Entries {
		m[e.Name] = e
	}
	return m, nil
}

// fileDiff writes the git-style diff of one file to sb and returns its
// counts. With normalize (working-tree status), CRLF line endings are read
// as LF and a missing file as an empty one, and ok is false when nothing is
// left to show.
func fileDiff(sb *strings.Builder, p string, from, to side, normalize bool) (fc FileChange, ok bool) {
	fc.Path = p
	fc.Binary = !isText(from.data) || !isText(to.data)
	a, b := from.data, to.data
	if normalize && !fc.Binary {
		a, b = crlfToLF(a), crlfToLF(b)
	}
	if normalize && bytes.Equal(a, b) {
		return FileChange{}, false
	}
	var ops []lineOp
	if !fc.Binary {
		ops = diffLines(string(a), string(b))
	}
	hunks := hasChange(ops)
	writeHeader(sb, p, from, to, fc.Binary, hunks)
	if hunks {
		fc.Added, fc.Deleted = writeHunks(sb, ops)
	}
	return fc, true
}

func isText(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), binarySniff)], 0) < 0 && utf8.Valid(b)
}

// crlfToLF drops the CR of each CRLF pair; a lone CR stays.
func crlfToLF(b []byte) []byte {
	if !bytes.Contains(b, []byte("\r\n")) {
		return b
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}

func abbrev(h plumbing.Hash) string { return h.String()[:7] }

const nullAbbrev = "0000000"

func writeHeader(sb *strings.Builder, p string, from, to side, binary, hunks bool) {
	fmt.Fprintf(sb, "diff --git a/%s b/%s\n", p, p)
	oldName, newName := "a/"+p, "b/"+p
	switch {
	case !from.exists && !to.exists:
		// Only in a normalized status: both sides count as empty, and an
		// empty-vs-empty pair never gets here.
	case !from.exists:
		oldName = "/dev/null"
		fmt.Fprintf(sb, "new file mode %o\nindex %s..%s\n", to.mode, nullAbbrev, abbrev(to.hash))
	case !to.exists:
		newName = "/dev/null"
		fmt.Fprintf(sb, "deleted file mode %o\nindex %s..%s\n", from.mode, abbrev(from.hash), nullAbbrev)
	default:
		if from.mode != to.mode {
			fmt.Fprintf(sb, "old mode %o\nnew mode %o\n", from.mode, to.mode)
		}
		if from.hash != to.hash {
			fmt.Fprintf(sb, "index %s..%s", abbrev(from.hash), abbrev(to.hash))
			if from.mode == to.mode {
				fmt.Fprintf(sb, " %o", from.mode)
			}
			sb.WriteByte('\n')
		}
	}
	switch {
	case binary:
		fmt.Fprintf(sb, "Binary files %s and %s differ\n", oldName, newName)
	case hunks:
		fmt.Fprintf(sb, "--- %s\n+++ %s\n", oldName, newName)
	}
}

// lineOp is one line of an edit script: ' ' kept, '-' removed, '+' added.
// The line keeps its "\n" (the last line of a file may lack it).
type lineOp struct {
	op   byte
	line string
}

func diffLines(a, b string) []lineOp {
	if a == b {
		return nil
	}
	var ops []lineOp
	for _, d := range diff.DoWithTimeout(a, b, diffTimeout) {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for line := range strings.SplitAfterSeq(d.Text, "\n") {
			if line != "" {
				ops = append(ops, lineOp{op, line})
			}
		}
	}
	return ops
}

func hasChange(ops []lineOp) bool {
	return slices.ContainsFunc(ops, func(o lineOp) bool { return o.op != ' ' })
}

// writeHunks writes the hunks of a unified diff with contextLines of
// context, merging changes whose contexts would touch, as diff -u does.
func writeHunks(sb *strings.Builder, ops []lineOp) (added, deleted int) {
	n := len(ops)
	// oldAt[k], newAt[k]: how many old/new lines precede ops[k].
	oldAt, newAt := make([]int, n+1), make([]int, n+1)
	for k, o := range ops {
		oldAt[k+1], newAt[k+1] = oldAt[k], newAt[k]
		if o.op != '+' {
			oldAt[k+1]++
		}
		if o.op != '-' {
			newAt[k+1]++
		}
	}
	for i := 0; i < n; {
		for i < n && ops[i].op == ' ' {
			i++
		}
		if i == n {
			break
		}
		start, end := max(0, i-contextLines), i
		for {
			for end < n && ops[end].op != ' ' {
				end++
			}
			j := end
			for j < n && ops[j].op == ' ' {
				j++
			}
			if j == n || j-end > 2*contextLines {
				break
			}
			end = j
		}
		stop := min(n, end+contextLines)
		sb.WriteString("@@ -" + hunkRange(oldAt[start], oldAt[stop]-oldAt[start]) +
			" +" + hunkRange(newAt[start], newAt[stop]-newAt[start]) + " @@\n")
		for _, o := range ops[start:stop] {
			switch o.op {
			case '+':
				added++
			case '-':
				deleted++
			}
			sb.WriteByte(o.op)
			sb.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return added, deleted
}

// hunkRange formats one side of a hunk header: the first line and the count,
// the count omitted when 1, and for an empty side the line before it.
func hunkRange(before, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(before) + ",0"
	case 1:
		return strconv.Itoa(before + 1)
	default:
		return strconv.Itoa(before+1) + "," + strconv.Itoa(count)
	}
}

// DefaultSummaryDiffChars caps the diff in a Summary when the caller passes
// no cap.
const DefaultSummaryDiffChars = 6000

// Summary renders a diff as a commit body: one "path: +a -d" line per file
// ("path: binary or non-UTF-8 file changed" for binary ones), a git-style
// total line, then the unified diff in a ```diff block cut at maxDiffChars
// characters (<= 0: DefaultSummaryDiffChars) with "...[diff truncated]". The
// fence is made longer than any backtick run in the diff, so memory files
// holding code blocks cannot close it early. An empty diff gives "".
func (s *Store) Summary(d Diff, maxDiffChars int) string {
	if len(d.Files) == 0 {
		return ""
	}
	if maxDiffChars <= 0 {
		maxDiffChars = DefaultSummaryDiffChars
	}
	var sb strings.Builder
	added, deleted := 0, 0
	for _, f := range d.Files {
		if f.Binary {
			fmt.Fprintf(&sb, "%s: binary or non-UTF-8 file changed\n", f.Path)
			continue
		}
		fmt.Fprintf(&sb, "%s: +%d -%d\n", f.Path, f.Added, f.Deleted)
		added += f.Added
		deleted += f.Deleted
	}
	sb.WriteString(plural(len(d.Files), "file changed", "files changed"))
	if added > 0 || deleted == 0 {
		sb.WriteString(", " + plural(added, "insertion(+)", "insertions(+)"))
	}
	if deleted > 0 || added == 0 {
		sb.WriteString(", " + plural(deleted, "deletion(-)", "deletions(-)"))
	}
	sb.WriteByte('\n')
	if d.Unified == "" {
		return sb.String()
	}
	text := strings.TrimRight(d.Unified, "\n")
	// Cut at a line break when one is in the second half, so a diff line
	// is not shown half; the mark takes a line of its own.
	if cut, ok := (textcut.Limit{Max: maxDiffChars, AtLine: true}).Cut(text); ok {
		text = strings.TrimSuffix(cut, "\n") + "\n...[diff truncated]"
	}
	fence := fenceFor(text)
	sb.WriteString("\n" + fence + "diff\n" + text + "\n" + fence + "\n")
	return sb.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fenceFor returns a backtick fence longer than any run of three or more
// backticks in text (CommonMark closes a fence only with one at least as
// long).
func fenceFor(text string) string {
	longest, run := 0, 0
	for i := 0; i < len(text); i++ {
		if text[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

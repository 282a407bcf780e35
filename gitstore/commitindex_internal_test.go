package gitstore

import (
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// An index whose lines are well formed (checksums, parent chain, HEAD) but
// name the wrong subject is not believed: what Latest returns is read from
// the repository and checked, and the index is rebuilt.
func TestCommitIndexCheckedAgainstRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	s, err := Open(dir, Options{Tracked: TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(file, content, subject string) Commit {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := s.Commit(subject, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dream := commit("USER.md", "a\n", "dream: the real one")
	commit("SOUL.md", "b\n", "manual: by hand")
	if _, _, err := s.Latest("dream:", nil); err != nil { // writes the index
		t.Fatal(err)
	}

	// Rewrite the newest entry as a Dream commit, with a valid checksum.
	x := s.idx
	x.entries[len(x.entries)-1].subject = "dream: forged"
	s.saveIndex(x)

	s2, err := Open(dir, Options{Tracked: TestTracked})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := s2.Latest("dream:", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.SHA != dream.SHA {
		t.Errorf("Latest = %s %q, want %s %q", c.Short, c.Subject, dream.Short, dream.Subject)
	}
	data, err := os.ReadFile(s2.indexPath())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "forged") || !strings.Contains(string(data), "manual: by hand") {
		t.Errorf("index not rebuilt:\n%s", data)
	}
}

// trackedState is lookup for every tracked file at once; it must agree with
// lookup on trees where a tracked path is a directory, runs through a file,
// or is missing.
func TestTrackedStateAgreesWithLookup(t *testing.T) {
	tracked := []string{"a/b/c.md", "a/d.md", "x.md", "y/z.md", "top.md"}
	s, err := Open(filepath.Join(t.TempDir(), "ws"), Options{Tracked: tracked})
	if err != nil {
		t.Fatal(err)
	}
	blob := func(data string, mode filemode.FileMode) workFile {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(data))
		if err := s.storeObject(plumbing.BlobObject, []byte(data)); err != nil {
			t.Fatal(err)
		}
		return workFile{blobState: blobState{exists: true, mode: mode, hash: h}}
	}
	shapes := map[string]map[string]workFile{
		"all there": {"a/b/c.md": blob("c", filemode.Regular), "a/d.md": blob("d", filemode.Executable),
			"x.md": blob("x", filemode.Symlink), "y/z.md": blob("z", filemode.Regular), "top.md": blob("t", filemode.Regular)},
		"file where a directory is": {"a/b": blob("not a dir", filemode.Regular), "a/d.md": blob("d", filemode.Regular)},
		"directory where a file is": {"x.md/inner": blob("i", filemode.Regular), "top.md/deeper/f": blob("f", filemode.Regular)},
		"nothing tracked":           {"other.md": blob("o", filemode.Regular)},
	}
	for name, edits := range shapes {
		t.Run(name, func(t *testing.T) {
			tree, _, err := s.editTree(plumbing.ZeroHash, edits)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.trackedState(tree)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range s.tracked {
				want, err := s.lookup(tree, p)
				if err != nil {
					t.Fatal(err)
				}
				if got[i] != want {
					t.Errorf("%s: trackedState %+v, lookup %+v", p, got[i], want)
				}
			}
		})
	}
}

// An index file of version 1 (a bit per tracked file, by its place in the
// tracked list) is an earlier version's cache: it is rebuilt, with an
// informational log line rather than a warning about damage, and the
// rebuilt index names the scope files the commits changed.
func TestCommitIndexV1Rebuilt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	opts := Options{Tracked: TestTracked, Patterns: TestPatterns}
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) { t.Helper(); testkit.WriteFile(t, dir, rel, text) }
	write("USER.md", "root\n")
	root, err := s.Commit("dream: root", "")
	if err != nil {
		t.Fatal(err)
	}
	write("scopes/team-x/USER.md", "team\n")
	team, err := s.Commit("dream: team", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Log(0, "", nil); err != nil {
		t.Fatal(err)
	}

	// What version 1 wrote for this history: the scope file is no tracked
	// file of its list, so the team's commit changed "nothing".
	var v1 strings.Builder
	v1.WriteString("dreamgate commit index v1 tracked=" + strings.Join(TestTracked, ",") + "\n")
	for _, e := range s.idx.entries {
		var bits []byte
		for _, p := range s.idx.changedPaths(e) {
			if i := slices.Index(TestTracked, p); i >= 0 {
				for len(bits) <= i/8 {
					bits = append(bits, 0)
				}
				bits[i/8] |= 1 << (i % 8)
			}
		}
		changed := hex.EncodeToString(bits)
		if changed == "" {
			changed = "-"
		}
		parent := "-"
		if !e.parent.IsZero() {
			parent = e.parent.String()
		}
		line := fmt.Sprintf("%s %s %d %d %s %s", e.id, parent, e.when, e.offset, changed, strconv.Quote(e.subject))
		fmt.Fprintf(&v1, "%s %08x\n", line, crc32.ChecksumIEEE([]byte(line)))
	}
	if err := os.WriteFile(s.indexPath(), []byte(v1.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	var rec testkit.LogRecorder
	opts.Logger = rec.Logger()
	s2, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	inTeam := func(p string) bool { return strings.HasPrefix(p, "scopes/team-x/") }
	if cs, err := s2.Log(0, "dream:", inTeam); err != nil || len(cs) != 1 || cs[0].SHA != team.SHA {
		t.Errorf("the team's log after the v1 index = %v, %v; want the team's commit", cs, err)
	}
	if cs, err := s2.Log(0, "dream:", func(p string) bool { return p == "USER.md" }); err != nil || len(cs) != 1 || cs[0].SHA != root.SHA {
		t.Errorf("the root's log after the v1 index = %v, %v", cs, err)
	}
	if n := rec.Count(slog.LevelInfo, "memory repository: rebuilding the commit index in its new format (it records the paths each commit changed)"); n != 1 {
		t.Errorf("%d info lines about the rebuild, want 1: %v", n, rec.Records())
	}
	if n := len(rec.Find(slog.LevelWarn, "memory repository: commit index damaged or out of date; rebuilding it")); n != 0 {
		t.Errorf("the v1 index was reported as damaged")
	}
	data, err := os.ReadFile(s2.indexPath())
	if err != nil || !strings.HasPrefix(string(data), indexHeader) || !strings.Contains(string(data), `path "scopes/team-x/USER.md"`) {
		t.Errorf("index not rewritten in version 2: %v\n%s", err, data)
	}
}

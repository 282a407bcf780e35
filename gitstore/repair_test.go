package gitstore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

const branchFile = ".git/refs/heads/main"

// dreamHistory makes a store with three Dream commits after the initial
// one and returns the first-parent history, newest first.
func dreamHistory(t *testing.T) (*gitstore.Store, string, []gitstore.Commit) {
	t.Helper()
	s, dir := openStore(t)
	for i, f := range []string{"USER.md", "memory/MEMORY.md", "SOUL.md"} {
		testkit.WriteFile(t, dir, f, fmt.Sprintf("fact %d\n", i))
		mustCommit(t, s, fmt.Sprintf("dream: %d change(s) from history %d-%d", 1, i, i))
	}
	log, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir, log
}

// reopen opens the store again, as the next process does, logging into rec.
func reopen(t *testing.T, dir string, rec *testkit.LogRecorder) (*gitstore.Store, error) {
	t.Helper()
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Now: newClock().now, Logger: rec.Logger()})
	if s != nil {
		gitstore.SetLockWait(s, 50*time.Millisecond)
	}
	return s, err
}

// assertWhole checks that the store's history is exactly want (newest
// first), and that a commit made now builds on want[0].
func assertWhole(t *testing.T, s *gitstore.Store, dir string, want []gitstore.Commit) {
	t.Helper()
	got, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatalf("Log: %v", err)
	}
	if !slices.EqualFunc(got, want, func(a, b gitstore.Commit) bool { return a.SHA == b.SHA }) {
		t.Fatalf("history after the repair:\n%s\nwant:\n%s", listing(got), listing(want))
	}
	testkit.WriteFile(t, dir, "USER.md", "after the repair\n")
	c := mustCommit(t, s, "dream: 1 change(s) from history 9-9")
	if c.Parent != want[0].SHA {
		t.Errorf("the next commit's parent is %s, want %s", c.Parent, want[0].Short)
	}
	checkGit(t, s, dir)
}

func listing(cs []gitstore.Commit) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s %s\n", c.Short, c.Subject)
	}
	return b.String()
}

func assertRepairLogged(t *testing.T, rec *testkit.LogRecorder, commit, from string) {
	t.Helper()
	rs := rec.Find(slog.LevelWarn, "repaired a damaged branch")
	if len(rs) != 1 {
		t.Fatalf("want one log line about the repair, got %+v", rec.Records())
	}
	if rs[0].Attrs["commit"] != commit || !strings.Contains(rs[0].Attrs["from"], from) {
		t.Errorf("repair logged as %+v, want commit %s from %q", rs[0].Attrs, commit, from)
	}
}

// A kill while go-git rewrote the branch in place left it empty, with the
// killed commit's index.lock: the next Open used to read the branch as
// unborn, fail on the lock for ten minutes, then start a new history. Each
// damage is repaired from the commit index, the history stays whole and the
// next commit builds on it.
func TestOpenRepairsADamagedBranch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content func(head string) string // nil: remove the file
		problem string
	}{
		{"empty", func(string) string { return "" }, "is empty"},
		{"torn", func(head string) string { return head[:17] }, "which is not a commit id"},
		{"missing object", func(string) string { return strings.Repeat("ab", 20) + "\n" }, "which is no commit"},
		{"a tree, not a commit", nil, "which is no commit"},
		{"missing", nil, "is missing although"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, log := dreamHistory(t)
			switch {
			case tc.name == "a tree, not a commit":
				tree := strings.TrimSpace(runGitOrSkip(t, dir, "rev-parse", "HEAD^{tree}"))
				testkit.WriteFile(t, dir, branchFile, tree+"\n")
			case tc.content == nil:
				if err := os.Remove(filepath.Join(dir, branchFile)); err != nil {
					t.Fatal(err)
				}
			default:
				testkit.WriteFile(t, dir, branchFile, tc.content(log[0].SHA))
			}
			testkit.WriteFile(t, dir, ".git/index.lock", "") // the killed commit's
			var rec testkit.LogRecorder
			s2, err := reopen(t, dir, &rec)
			if err != nil {
				t.Fatalf("Open after the damage: %v", err)
			}
			assertRepairLogged(t, &rec, log[0].Short, "the commit index")
			if rs := rec.Find(slog.LevelWarn, "repaired"); !strings.Contains(rs[0].Attrs["problem"], tc.problem) {
				t.Errorf("problem logged as %q, want %q", rs[0].Attrs["problem"], tc.problem)
			}
			if got := strings.TrimSpace(testkit.ReadFile(t, dir, branchFile)); got != log[0].SHA {
				t.Errorf("branch file holds %q, want %s", got, log[0].SHA)
			}
			// Dream clears the killed process's lock under its own.
			if _, err := s2.ClearStaleLocks(); err != nil {
				t.Fatal(err)
			}
			assertWhole(t, s2, dir, log)
		})
	}
}

func runGitOrSkip(t *testing.T, dir string, args ...string) string {
	t.Helper()
	gitBin(t)
	return runGit(t, dir, args...)
}

// The commit index is written when history is read, so it may be behind
// the branch; and the kill that emptied the branch came after the commit
// object was written and before the branch and the commit index were. The
// commits built on the index's tip are found again, not dropped.
func TestRepairFindsTheCommitsAfterTheCommitIndex(t *testing.T) {
	_, dir, log := dreamHistory(t)
	// Drop the two newest commits' lines from the commit index.
	idx := filepath.Join(dir, ".git", gitstore.CommitIndexFile)
	data := testkit.ReadFile(t, dir, ".git/"+gitstore.CommitIndexFile)
	lines := strings.SplitAfter(data, "\n")
	if err := os.WriteFile(idx, []byte(strings.Join(lines[:len(lines)-3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, branchFile, "")
	var rec testkit.LogRecorder
	s, err := reopen(t, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	assertRepairLogged(t, &rec, log[0].Short, "the commit index, then the commits built on it")
	assertWhole(t, s, dir, log)
}

// With no commit index (and go-git writes no reflog), the end of the one
// line of history is the branch.
// The commits are found loose and packed alike.
func TestRepairWithoutRecordsTakesTheEndOfHistory(t *testing.T) {
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packed), func(t *testing.T) {
			s, dir, log := dreamHistory(t)
			if packed {
				gitstore.SetPackThreshold(s, -1)
				if n, err := s.Pack(); err != nil || n == 0 {
					t.Fatalf("Pack = %d, %v", n, err)
				}
			}
			if err := os.Remove(filepath.Join(dir, ".git", gitstore.CommitIndexFile)); err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, dir, branchFile, "")
			var rec testkit.LogRecorder
			s2, err := reopen(t, dir, &rec)
			if err != nil {
				t.Fatal(err)
			}
			assertRepairLogged(t, &rec, log[0].Short, "the only commit no other commit builds on")
			assertWhole(t, s2, dir, log)
		})
	}
}

// The git command line keeps a reflog; a repair reads it when there is no
// commit index.
func TestRepairReadsTheReflog(t *testing.T) {
	gitBin(t)
	_, dir, log := dreamHistory(t)
	// git logs both moves; the reflog's last entry is the branch's value.
	runGit(t, dir, "update-ref", "--create-reflog", "-m", "back", "refs/heads/main", log[1].SHA)
	runGit(t, dir, "update-ref", "-m", "forth", "refs/heads/main", log[0].SHA)
	if err := os.Remove(filepath.Join(dir, ".git", gitstore.CommitIndexFile)); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "edited by hand since\n") // no commit matches the files
	if err := os.Remove(filepath.Join(dir, ".git", "index")); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, branchFile, "")
	var rec testkit.LogRecorder
	s, err := reopen(t, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	assertRepairLogged(t, &rec, log[0].Short, "the reflog")
	got, err := s.Log(0, "", nil)
	if err != nil || len(got) != len(log) || got[0].SHA != log[0].SHA {
		t.Fatalf("history after the repair: %v %s", err, listing(got))
	}
}

// After `git pack-refs` the branch's older value sits in packed-refs. go-git
// reads an empty loose ref as that packed value, which would silently move
// the branch back; the repair takes the newest commit the records name.
func TestRepairPrefersTheNewestRecordOverPackedRefs(t *testing.T) {
	gitBin(t)
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "USER.md", "one\n")
	mustCommit(t, s, "dream: one")
	runGit(t, dir, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(dir, branchFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pack-refs left the loose branch: %v", err)
	}
	// A commit on a packed branch writes the loose ref over it, as git does.
	testkit.WriteFile(t, dir, "USER.md", "two\n")
	mustCommit(t, s, "dream: two")
	testkit.WriteFile(t, dir, "USER.md", "three\n")
	mustCommit(t, s, "dream: three")
	checkGit(t, s, dir)
	log, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, branchFile, "")
	var rec testkit.LogRecorder
	s2, err := reopen(t, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	assertRepairLogged(t, &rec, log[0].Short, "the commit index")
	assertWhole(t, s2, dir, log)
}

// An empty or torn HEAD (go-git writes a new repository's HEAD in place)
// points at the one branch again.
func TestOpenRepairsHEAD(t *testing.T) {
	for _, content := range []string{"", "ref: refs/hea", "garbage\n"} {
		t.Run(fmt.Sprintf("%q", content), func(t *testing.T) {
			_, dir, log := dreamHistory(t)
			testkit.WriteFile(t, dir, ".git/HEAD", content)
			var rec testkit.LogRecorder
			s, err := reopen(t, dir, &rec)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got := testkit.ReadFile(t, dir, ".git/HEAD"); got != "ref: refs/heads/main\n" {
				t.Errorf("HEAD = %q", got)
			}
			if len(rec.Find(slog.LevelWarn, "repaired HEAD")) != 1 {
				t.Errorf("no log line about HEAD: %+v", rec.Records())
			}
			assertWhole(t, s, dir, log)
		})
	}
}

// A kill during the very first commit leaves an empty branch in a
// repository without commits: that is a new repository, and Open makes the
// initial commit.
func TestEmptyBranchWithoutCommitsIsANewRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if _, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git", "objects")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"objects/pack", "objects/info"} {
		if err := os.MkdirAll(filepath.Join(dir, ".git", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Remove(filepath.Join(dir, ".git", gitstore.CommitIndexFile))
	testkit.WriteFile(t, dir, branchFile, "")
	var rec testkit.LogRecorder
	s, err := reopen(t, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	log, err := s.Log(0, "", nil)
	if err != nil || len(log) != 1 || log[0].Subject != gitstore.InitSubject {
		t.Fatalf("log = %+v, %v; want the initial commit", log, err)
	}
	checkGit(t, s, dir)
}

// sideLine adds a second line of history, a commit on the initial one
// that the branch never took (as a commit that lost a race for the branch
// leaves), and removes the records a repair would read first.
func sideLine(t *testing.T, dir string, log []gitstore.Commit) {
	t.Helper()
	root := log[len(log)-1].SHA
	tree := strings.TrimSpace(runGit(t, dir, "rev-parse", log[1].SHA+"^{tree}"))
	if other := strings.TrimSpace(runGit(t, dir, "commit-tree", "-p", root, "-m", "elsewhere", tree)); other == "" {
		t.Fatal("no commit made")
	}
	if err := os.Remove(filepath.Join(dir, ".git", gitstore.CommitIndexFile)); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, branchFile, "")
}

// With two lines of history and no record of the branch, the line whose
// end the memory files match is the branch.
func TestRepairPicksTheLineTheMemoryFilesMatch(t *testing.T) {
	gitBin(t)
	_, dir, log := dreamHistory(t)
	sideLine(t, dir, log)
	var rec testkit.LogRecorder
	s, err := reopen(t, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	assertRepairLogged(t, &rec, log[0].Short, "the newest line of history whose end the memory files match")
	assertWhole(t, s, dir, log)
}

// When nothing says which commit the branch named (no commit index, no
// reflog, two lines of history and memory files matching neither end),
// Open stops with ErrDamaged, changes nothing, and above all does not
// start a new history; a second Open says the same.
func TestUnrepairableBranchStopsAndChangesNothing(t *testing.T) {
	gitBin(t)
	_, dir, log := dreamHistory(t)
	sideLine(t, dir, log)
	if err := os.Remove(filepath.Join(dir, ".git", "index")); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "edited by hand\n")
	before := objectFiles(t, dir)
	for range 2 {
		var rec testkit.LogRecorder
		_, err := reopen(t, dir, &rec)
		var de *gitstore.DamagedError
		if !errors.Is(err, gitstore.ErrDamaged) || !errors.As(err, &de) {
			t.Fatalf("Open = %v, want ErrDamaged", err)
		}
		if de.Ref != "refs/heads/main" || de.Problem != "is empty" || !strings.Contains(err.Error(), "write the id of the right commit into "+filepath.Join(dir, branchFile)) {
			t.Errorf("error %+v: %v", de, err)
		}
		if got := testkit.ReadFile(t, dir, branchFile); got != "" {
			t.Errorf("the branch was changed to %q", got)
		}
		if after := objectFiles(t, dir); !slices.Equal(before, after) {
			t.Errorf("objects changed: %d before, %d after", len(before), len(after))
		}
	}
	// Repaired by hand as the error says, the history is all there.
	testkit.WriteFile(t, dir, branchFile, log[0].SHA+"\n")
	var rec testkit.LogRecorder
	s, err := reopen(t, dir, &rec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Log(0, "", nil)
	if err != nil || len(got) != len(log) {
		t.Errorf("history after a repair by hand: %v\n%s", err, listing(got))
	}
}

func objectFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A store whose branch is damaged under it (another process, another tool)
// repairs it on its next use, not only at Open.
func TestDamageWhileOpenIsRepairedOnNextUse(t *testing.T) {
	s, dir, log := dreamHistory(t)
	testkit.WriteFile(t, dir, branchFile, "")
	assertWhole(t, s, dir, log)
}

// Ref writes go through <ref>.lock and a rename, and report both steps:
// at PointRefLock the branch still has its old value and the lock file the
// new one; at PointRef the branch has the new value.
func TestRefWriteIsLockFileThenRename(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	var onWrite func(point string) // set once the store is open
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, AfterWrite: func(p string) {
		if onWrite != nil {
			onWrite(p)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	old := testkit.ReadFile(t, dir, branchFile)
	var seen []string
	onWrite = func(point string) {
		seen = append(seen, point)
		ref := testkit.ReadFile(t, dir, branchFile)
		lock, lockErr := os.ReadFile(filepath.Join(dir, branchFile+".lock"))
		switch point {
		case gitstore.PointRefLock:
			if ref != old || lockErr != nil || len(lock) != 41 || string(lock) == old {
				t.Errorf("at %s: ref %q, lock %q (%v); want the old ref and the new value in the lock", point, ref, lock, lockErr)
			}
		case gitstore.PointRef:
			if ref == old || len(ref) != 41 || !errors.Is(lockErr, fs.ErrNotExist) {
				t.Errorf("at %s: ref %q, lock %q (%v); want the new ref and no lock", point, ref, lock, lockErr)
			}
		}
	}
	testkit.WriteFile(t, dir, "USER.md", "y\n")
	c := mustCommit(t, s, "dream: y")
	if want := []string{gitstore.PointRefLock, gitstore.PointRef}; !slices.Equal(seen, want) {
		t.Errorf("points %v, want %v", seen, want)
	}
	if got := testkit.ReadFile(t, dir, branchFile); got != c.SHA+"\n" {
		t.Errorf("branch = %q, want %s", got, c.SHA)
	}
	checkGit(t, s, dir)
}

// A lock file someone holds on the branch (git update-ref, or a process
// killed between the lock file and its rename) makes a commit wait and then
// fail with ErrLocked, committing nothing; ClearStaleLocks (Dream, under its
// own lock) removes it, and one older than ten minutes is taken over.
func TestBranchLockFile(t *testing.T) {
	s, dir := openStore(t)
	gitstore.SetLockWait(s, 50*time.Millisecond)
	lock := filepath.Join(dir, branchFile+".lock")
	testkit.WriteFile(t, dir, branchFile+".lock", strings.Repeat("cd", 20)+"\n")
	testkit.WriteFile(t, dir, "USER.md", "x\n")
	before, _ := s.Log(0, "", nil)
	if _, err := s.Commit("dream: x", ""); !errors.Is(err, gitstore.ErrLocked) {
		t.Fatalf("Commit with the branch locked = %v, want ErrLocked", err)
	}
	if after, _ := s.Log(0, "", nil); len(after) != len(before) {
		t.Errorf("a commit went through the lock")
	}
	got, err := s.ClearStaleLocks()
	if err != nil || len(got) != 1 || got[0].Name != "refs/heads/main.lock" {
		t.Fatalf("ClearStaleLocks = %+v, %v", got, err)
	}
	mustCommit(t, s, "dream: x")

	testkit.WriteFile(t, dir, branchFile+".lock", "")
	old := time.Now().Add(-11 * time.Minute)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "y\n")
	mustCommit(t, s, "dream: y")
	checkGit(t, s, dir)
}

// killEnv asks the test binary, re-run as a helper, to commit in the
// repository at dir and SIGKILL itself at a kill point.
const killEnv = "GITSTORE_TEST_KILL"

// TestKillHelper is the helper process of TestKillAtTheRefWrite.
func TestKillHelper(t *testing.T) {
	spec := os.Getenv(killEnv)
	if spec == "" {
		t.Skip("only run as the helper process of TestKillAtTheRefWrite")
	}
	point, dir, _ := strings.Cut(spec, ":")
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, AfterWrite: func(p string) {
		if p == point {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "USER.md", "written by the killed process\n")
	_, err = s.Commit("dream: killed", "")
	t.Fatalf("the commit was not killed: %v", err)
}

// A process killed at either step of a ref write leaves a whole history: the
// branch holds the old commit or the new one, never a torn value. The next
// process (after Dream clears the dead process's locks) commits on top.
func TestKillAtTheRefWrite(t *testing.T) {
	for _, point := range []string{gitstore.PointRefLock, gitstore.PointRef} {
		t.Run(point, func(t *testing.T) {
			_, dir, log := dreamHistory(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), killEnv+"="+point+":"+dir)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper was not killed: %v\n%s", err, out)
			}
			ref := strings.TrimSpace(testkit.ReadFile(t, dir, branchFile))
			var rec testkit.LogRecorder
			s2, err := reopen(t, dir, &rec)
			if err != nil {
				t.Fatalf("Open after the kill: %v", err)
			}
			if len(rec.Find(slog.LevelWarn, "repaired")) != 0 {
				t.Errorf("a ref needed repair after the kill: %+v", rec.Records())
			}
			got, err := s2.Log(0, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			switch point {
			case gitstore.PointRefLock:
				if ref != log[0].SHA {
					t.Errorf("the branch moved before the rename: %s", ref)
				}
				if _, err := os.Stat(filepath.Join(dir, branchFile+".lock")); err != nil {
					t.Errorf("no lock file left: %v", err)
				}
			case gitstore.PointRef:
				if len(got) != len(log)+1 || got[0].Subject != "dream: killed" || got[0].SHA != ref {
					t.Errorf("the killed commit is not the branch's: %s", listing(got))
				}
				log = got
			}
			if !slices.EqualFunc(got[len(got)-len(log):], log, func(a, b gitstore.Commit) bool { return a.SHA == b.SHA }) {
				t.Fatalf("history after the kill:\n%s", listing(got))
			}
			if _, err := s2.ClearStaleLocks(); err != nil {
				t.Fatal(err)
			}
			assertWhole(t, s2, dir, log)
		})
	}
}

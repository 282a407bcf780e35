package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// linesOptions is scopedOptions with each scope folder on a line of its
// own, as dreamgate opens its repository.
func linesOptions(now func() time.Time) gitstore.Options {
	o := scopedOptions()
	o.Lines = "scopes"
	if now != nil {
		o.Now = now
	}
	return o
}

func linesStore(t *testing.T) (*gitstore.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workspace")
	s, err := gitstore.Open(dir, linesOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// commitFiles writes files and commits them with CommitPaths.
func commitFiles(t *testing.T, s *gitstore.Store, dir, subject string, files map[string]string) gitstore.Commit {
	t.Helper()
	var paths []string
	for p, text := range files {
		testkit.WriteFile(t, dir, p, text)
		paths = append(paths, p)
	}
	c, err := s.CommitPaths(paths, subject, "")
	if err != nil {
		t.Fatalf("CommitPaths(%q): %v", subject, err)
	}
	return c
}

// checkLinesGit asserts that the git command line agrees with the Store of
// a workspace with lines: every ref's commits, newest first by committer
// time, are the Store's log; HEAD holds no scope folder and each scope's
// ref that scope's alone; fsck finds nothing; status shows wantStatus.
func checkLinesGit(t *testing.T, s *gitstore.Store, dir string, wantStatus ...string) {
	t.Helper()
	gitBin(t)
	all, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range all {
		want = append(want, c.SHA+" "+c.Subject)
	}
	if got := lines(runGit(t, dir, "log", "--all", "--date-order", "--format=%H %s")); !slices.Equal(got, want) {
		t.Errorf("git log --all --date-order:\n%s\nStore.Log:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range lines(runGit(t, dir, "ls-tree", "-r", "--name-only", "HEAD")) {
		if strings.HasPrefix(f, "scopes/") {
			t.Errorf("HEAD holds %s", f)
		}
	}
	for _, ref := range lines(runGit(t, dir, "for-each-ref", "--format=%(refname)", "refs/scopes/")) {
		dirOf := strings.TrimPrefix(ref, "refs/") + "/"
		for _, f := range lines(runGit(t, dir, "ls-tree", "-r", "--name-only", ref)) {
			if !strings.HasPrefix(f, dirOf) {
				t.Errorf("%s holds %s", ref, f)
			}
		}
	}
	out, err := gitCmd(t, dir, "fsck", "--full", "--strict", "--no-dangling", "--no-progress").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("git fsck --full: %v\n%s", err, out)
	}
	if got := lines(runGit(t, dir, "status", "--porcelain")); !slices.Equal(got, wantStatus) {
		t.Errorf("git status --porcelain = %q, want %q", got, wantStatus)
	}
}

// Each scope's commits are on its own ref and hold its folder alone; the
// lines read as one history in the order the commits were made.
func TestLinesOneHistory(t *testing.T) {
	s, dir := linesStore(t)
	team := commitFiles(t, s, dir, "scope created: team", map[string]string{teamMemory: "# Memory\n", teamUser: "# User\n"})
	root := commitFiles(t, s, dir, "dream: root", map[string]string{"memory/MEMORY.md": "- root fact\n"})
	team2 := commitFiles(t, s, dir, "dream: team", map[string]string{teamMemory: "- ships on Fridays\n"})
	person := commitFiles(t, s, dir, "scope created: person", map[string]string{personMemory: "- SECRET\n"})

	if team.Parent != "" {
		t.Errorf("a new scope's first commit has parent %s; want none", team.Parent)
	}
	if team2.Parent != team.SHA {
		t.Errorf("the team's second commit has parent %s, want the team's first %s", team2.Parent, team.SHA)
	}
	head, err := s.Head()
	if err != nil || head.SHA != person.SHA {
		t.Fatalf("Head = %s, %v; want the newest commit of any line, %s", head.Short, err, person.Short)
	}
	all, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := shas(all[:4]); !slices.Equal(got, shas([]gitstore.Commit{person, team2, root, team})) {
		t.Errorf("Log = %q", subjects(all))
	}
	if cs, _ := s.Log(0, "", inTeam); !slices.Equal(shas(cs), shas([]gitstore.Commit{team2, team})) {
		t.Errorf("the team's log = %q", subjects(cs))
	}
	after, err := s.CommitsAfter(team.SHA, 0)
	if err != nil || !slices.Equal(shas(after), shas([]gitstore.Commit{root, team2, person})) {
		t.Errorf("CommitsAfter(team) = %q, %v", subjects(after), err)
	}
	// A file as its line stood when another line's commit was made.
	if data, ok, err := s.FileAt(root.SHA, teamMemory); err != nil || !ok || string(data) != "# Memory\n" {
		t.Errorf("FileAt(root, team's memory) = %q, %v, %v; want the team's first version", data, ok, err)
	}
	if data, ok, err := s.FileAt(person.SHA, "memory/MEMORY.md"); err != nil || !ok || string(data) != "- root fact\n" {
		t.Errorf("FileAt(person, root's memory) = %q, %v, %v", data, ok, err)
	}
	if _, ok, err := s.FileAt(team2.SHA, personMemory); err != nil || ok {
		t.Errorf("FileAt(team2, person's memory) = %v, %v; the person had no memory yet", ok, err)
	}
	_, d, err := s.Show(team2.SHA, nil)
	if err != nil || len(d.Files) != 1 || d.Files[0].Path != teamMemory {
		t.Errorf("Show(team2) = %+v, %v", d.Files, err)
	}
	checkLinesGit(t, s, dir)
}

// A commit across lines is one write: every line gets its commit, all
// its refs move, and the last one is returned.
func TestLinesCommitAcrossLines(t *testing.T) {
	s, dir := linesStore(t)
	base, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.CommitChanges(base.SHA, []gitstore.Change{
		{Path: teamMemory, Data: []byte("- moved here\n")},
		{Path: personMemory, Data: []byte("- stays\n")},
		{Path: "memory/MEMORY.md", Data: []byte("- root\n")},
	}, "move: 1 line", "")
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Log(0, "move:", nil)
	if err != nil || len(all) != 3 || all[0].SHA != c.SHA {
		t.Fatalf("the move's commits = %q, %v; want one per line, the last returned", subjects(all), err)
	}
	res, err := s.Checkout(base.SHA, c.SHA, nil)
	if err != nil || len(res.Written) != 3 {
		t.Fatalf("Checkout = %+v, %v", res, err)
	}
	if _, err := s.CommitChanges(base.SHA, []gitstore.Change{{Path: teamMemory, Data: []byte("x\n")}}, "dream: late", ""); !errors.Is(err, gitstore.ErrConcurrentUpdate) {
		t.Errorf("a step built on the old head = %v, want ErrConcurrentUpdate", err)
	}
	checkLinesGit(t, s, dir)
}

// A workspace of an earlier version keeps its history: Open takes the
// scope folders out of the branch once, every scope's log still lists its
// commits from before, and they can be shown and restored.
func TestLinesSplitKeepsHistory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	clock := newClock()
	old := scopedOptions()
	old.Now = clock.now
	s, err := gitstore.Open(dir, old)
	if err != nil {
		t.Fatal(err)
	}
	h := makeScopedHistory(t, s, dir)

	s, err = gitstore.Open(dir, linesOptions(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	split, err := s.Head()
	if err != nil || split.Subject != gitstore.SplitSubject || split.Parent != h.mixed.SHA {
		t.Fatalf("Head after the split = %q (parent %s), %v", split.Subject, split.Parent, err)
	}
	checkLinesGit(t, s, dir)
	if cs, _ := s.Log(0, "dream:", inTeam); !slices.Equal(shas(cs), shas([]gitstore.Commit{h.mixed, h.team2, h.team1})) {
		t.Errorf("the team's log after the split = %q", subjects(cs))
	}
	if cs, _ := s.Log(0, "", inPerson); len(cs) == 0 || cs[0].SHA != h.mixed.SHA {
		t.Errorf("the person's log after the split = %q; the split is no change of theirs", subjects(cs))
	}
	if data, ok, err := s.FileAt(split.SHA, teamMemory); err != nil || !ok || string(data) != "- the team ships on Fridays\n- standup at 10\n" {
		t.Errorf("FileAt(split, team's memory) = %q, %v, %v", data, ok, err)
	}
	if res, err := s.Checkout(h.mixed.SHA, split.SHA, nil); err != nil || len(res.Written)+len(res.Kept) != 0 {
		t.Errorf("Checkout(before the split, the split) = %+v, %v; want nothing to write", res, err)
	}

	// The team's next commit goes on the team's line, from the last commit
	// that held it.
	next := commitFiles(t, s, dir, "dream: after", map[string]string{teamMemory: "- the team ships on Fridays\n- standup at 10\n- after\n"})
	if next.Parent != h.mixed.SHA {
		t.Errorf("the team's first commit of its own has parent %s, want %s (the branch before the split)", next.Parent, h.mixed.Short)
	}
	_, d, err := s.Show(next.SHA, nil)
	if err != nil || !slices.Equal(diffPaths(d), []string{teamMemory}) {
		t.Errorf("Show(the team's first own commit) = %q, %v; want its one file", diffPaths(d), err)
	}
	if cs, _ := s.Log(0, "dream:", inTeam); !slices.Equal(shas(cs), shas([]gitstore.Commit{next, h.mixed, h.team2, h.team1})) {
		t.Errorf("the team's log = %q", subjects(cs))
	}
	// A restore of a commit from before the split: its line goes from the
	// team's memory, committed on the team's line; the person's untouched.
	res, err := s.Restore(h.team2.SHA, inTeam, gitstore.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dir, teamDir)[teamMemory]; got != "- the team ships on Fridays\n- after\n" {
		t.Errorf("the team's memory after the restore = %q", got)
	}
	if _, d, err := s.Show(res.Commit.SHA, nil); err != nil || !slices.Equal(diffPaths(d), []string{teamMemory}) {
		t.Errorf("the restore's diff = %q, %v", diffPaths(d), err)
	}
	if res.Commit.Parent != next.SHA {
		t.Errorf("the restore's parent is %s, want the team's last commit %s", res.Commit.Parent, next.Short)
	}
	checkLinesGit(t, s, dir)

	// Opened again, nothing is split twice; a rebuilt index reads the same.
	before, _ := s.Log(0, "", nil)
	if err := os.Remove(filepath.Join(dir, ".git", gitstore.CommitIndexFile)); err != nil {
		t.Fatal(err)
	}
	s2, err := gitstore.Open(dir, linesOptions(clock.now))
	if err != nil {
		t.Fatal(err)
	}
	after, _ := s2.Log(0, "", nil)
	if !slices.Equal(shas(after), shas(before)) {
		t.Errorf("the rebuilt log:\n%q\nkept:\n%q", subjects(after), subjects(before))
	}
}

// Commits made within one second keep their order when the index is
// rebuilt: each is stamped a second past the last.
func TestLinesOrderRebuiltFromTheCommits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	stopped := func() time.Time { return time.Date(2026, 4, 3, 10, 0, 0, 0, time.UTC) }
	s, err := gitstore.Open(dir, linesOptions(stopped))
	if err != nil {
		t.Fatal(err)
	}
	var made []gitstore.Commit
	for i, p := range []string{teamMemory, personMemory, "USER.md", teamUser, personMemory} {
		made = append(made, commitFiles(t, s, dir, "dream: "+string(rune('a'+i)), map[string]string{p: strings.Repeat("x", i+1) + "\n"}))
	}
	want, _ := s.Log(0, "", nil)
	if err := os.Remove(filepath.Join(dir, ".git", gitstore.CommitIndexFile)); err != nil {
		t.Fatal(err)
	}
	s2, err := gitstore.Open(dir, linesOptions(stopped))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s2.Log(0, "", nil)
	if !slices.Equal(shas(got), shas(want)) || got[0].SHA != made[len(made)-1].SHA {
		t.Errorf("rebuilt order %q, want %q", subjects(got), subjects(want))
	}
	checkLinesGit(t, s2, dir)
}

// Status and CommitPaths see each scope against its own line; hand edits
// of two scopes are one commit per line.
func TestLinesStatusAndHandEdits(t *testing.T) {
	s, dir := linesStore(t)
	commitFiles(t, s, dir, "scope created: team", map[string]string{teamMemory: "# Memory\n"})
	testkit.WriteFile(t, dir, teamMemory, "# Memory\n- by hand\n")
	testkit.WriteFile(t, dir, personUser, "- new scope by hand\n")
	testkit.WriteFile(t, dir, "USER.md", "- root by hand\n")
	st, err := s.Status(inTeam)
	if err != nil || !slices.Equal(diffPaths(st), []string{teamMemory}) {
		t.Fatalf("Status(team) = %q, %v", diffPaths(st), err)
	}
	st, err = s.Status(nil)
	if err != nil || !slices.Equal(diffPaths(st), []string{"USER.md", personUser, teamMemory}) {
		t.Fatalf("Status = %q, %v", diffPaths(st), err)
	}
	if _, err := s.Commit(gitstore.ManualSubject, ""); err != nil {
		t.Fatal(err)
	}
	if cs, _ := s.Log(0, gitstore.ManualSubject, nil); len(cs) != 3 {
		t.Errorf("hand edits of three lines made %d commits, want 3", len(cs))
	}
	if st, err := s.Status(nil); err != nil || !st.Empty() {
		t.Errorf("Status after the commit = %q, %v", diffPaths(st), err)
	}
	checkLinesGit(t, s, dir)
}

// A write across lines stopped once its journal is in place (a kill right
// after it) has happened: every line's commit is read at once, and the
// next write puts the refs in place for the git command line.
func TestLinesJournalFinishesAWriteAcrossLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	opts := linesOptions(nil)
	var stop bool
	opts.AfterWrite = func(point string) {
		if stop && point == gitstore.PointJournal {
			stop = false
			panic("killed after the journal")
		}
	}
	s, err := gitstore.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	stop = true
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("the write was not stopped at its journal")
			}
		}()
		_, _ = s.CommitChanges(base.SHA, []gitstore.Change{
			{Path: teamMemory, Data: []byte("- team\n")},
			{Path: personMemory, Data: []byte("- person\n")},
		}, "move: 1 line", "")
	}()
	s2, err := gitstore.Open(dir, linesOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := s2.Log(0, "move:", nil); err != nil || len(cs) != 2 {
		t.Fatalf("after the stop, the write's commits = %q, %v; want both lines'", subjects(cs), err)
	}
	for _, p := range []string{teamMemory, personMemory} {
		head, _ := s2.Head()
		if _, ok, err := s2.FileAt(head.SHA, p); err != nil || !ok {
			t.Errorf("FileAt(head, %s) = %v, %v", p, ok, err)
		}
	}
	commitFiles(t, s2, dir, "dream: root", map[string]string{"USER.md": "- next\n"})
	if _, err := os.Stat(filepath.Join(dir, ".git", "dreamgate-journal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal is still there after the next write: %v", err)
	}
	checkLinesGit(t, s2, dir)
}

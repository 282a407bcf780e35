package gitstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// A workspace of three scopes: the root (the operator's), a team's and a
// person's, each with its own memory files in its own folder, as dreamgate
// lays them out. The filters below stand for what an audience may read.
const (
	teamDir   = "scopes/team-slack-t1/"
	personDir = "scopes/person-slack-t1-u2/"
)

var (
	teamMemory   = teamDir + "memory/MEMORY.md"
	teamUser     = teamDir + "USER.md"
	personMemory = personDir + "memory/MEMORY.md"
	personUser   = personDir + "USER.md"
)

func inTeam(p string) bool   { return strings.HasPrefix(p, teamDir) }
func inPerson(p string) bool { return strings.HasPrefix(p, personDir) }
func inRoot(p string) bool   { return !strings.HasPrefix(p, "scopes/") }

// scopedStore opens a store over a workspace with the root's, the team's
// and the person's memory files.
func scopedStore(t *testing.T) (*gitstore.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workspace")
	s, err := gitstore.Open(dir, scopedOptions())
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func scopedOptions() gitstore.Options {
	return gitstore.Options{Tracked: gitstore.TestTracked, Patterns: gitstore.TestPatterns, Now: newClock().now}
}

// scopedHistory makes, over scopedStore, one commit per scope's Dream and a
// commit touching both scopes; the person's files hold secrets.
type scopedHistory struct {
	root, team1, person1, team2, person2, mixed gitstore.Commit
}

func makeScopedHistory(t *testing.T, s *gitstore.Store, dir string) scopedHistory {
	t.Helper()
	commit := func(subject string, files map[string]string) gitstore.Commit {
		t.Helper()
		var paths []string
		body := "A body, which may quote anything:"
		for p, text := range files {
			testkit.WriteFile(t, dir, p, text)
			paths = append(paths, p)
			body += " " + text
		}
		c, err := s.CommitPaths(paths, subject, body)
		if err != nil {
			t.Fatalf("CommitPaths(%q): %v", subject, err)
		}
		return c
	}
	var h scopedHistory
	for _, d := range []string{teamDir, personDir} {
		commit("init: memory scope", map[string]string{
			d + "SOUL.md": "# Soul\n", d + "USER.md": "# User\n", d + "memory/MEMORY.md": "# Memory\n",
		})
	}
	h.root = commit("dream: 1 change from history 1-1", map[string]string{"memory/MEMORY.md": "- the operator's PIN is 1234\n"})
	h.team1 = commit("dream: 1 change from history 2-2", map[string]string{teamMemory: "- the team ships on Fridays\n"})
	h.person1 = commit("dream: 1 change from history 3-3", map[string]string{personMemory: "- salary band SECRET-K7Q2\n"})
	h.team2 = commit("dream: 1 change from history 4-4", map[string]string{teamMemory: "- the team ships on Fridays\n- standup at 10\n"})
	h.person2 = commit("dream: 1 change from history 5-5", map[string]string{personUser: "- prefers SECRET-TEA\n"})
	h.mixed = commit("dream: 2 changes from history 6-7", map[string]string{
		teamUser:     "- the team is in Lisbon\n",
		personMemory: "- salary band SECRET-K7Q2\n- SECRET-PROMOTION\n",
	})
	return h
}

func TestScopedLog(t *testing.T) {
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)
	for _, tc := range []struct {
		name string
		keep func(string) bool
		want []gitstore.Commit
	}{
		{"team", inTeam, []gitstore.Commit{h.mixed, h.team2, h.team1}},
		{"person", inPerson, []gitstore.Commit{h.mixed, h.person2, h.person1}},
		{"root", inRoot, []gitstore.Commit{h.root}},
		{"nobody", func(string) bool { return false }, nil},
		{"all", nil, []gitstore.Commit{h.mixed, h.person2, h.team2, h.person1, h.team1, h.root}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Log(0, "dream:", tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(shas(got), shas(tc.want)) {
				t.Errorf("Log = %q, want %q", subjects(got), subjects(tc.want))
			}
			got, err = s.Log(1, "dream:", tc.keep)
			if err != nil || len(got) != min(1, len(tc.want)) {
				t.Errorf("Log(1) = %q, %v", subjects(got), err)
			}
		})
	}
	checkGit(t, s, dir)
}

func TestScopedShowAndLatest(t *testing.T) {
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)

	c, d, err := s.Latest("dream:", inTeam)
	if err != nil || c.SHA != h.mixed.SHA {
		t.Fatalf("Latest for the team = %s, %v; want the mixed commit", c.Short, err)
	}
	if got := diffPaths(d); !slices.Equal(got, []string{teamUser}) || strings.Contains(d.Unified, "SECRET") ||
		!strings.Contains(d.Unified, "Lisbon") {
		t.Errorf("the team's Latest shows %q:\n%s", got, d.Unified)
	}
	if _, d, err := s.Latest("dream:", inPerson); err != nil || !slices.Equal(diffPaths(d), []string{personMemory}) ||
		strings.Contains(d.Unified, "Lisbon") || !strings.Contains(d.Unified, "SECRET-PROMOTION") {
		t.Errorf("the person's Latest shows %q, %v:\n%s", diffPaths(d), err, d.Unified)
	}
	if _, _, err := s.Latest("dream:", func(string) bool { return false }); !errors.Is(err, gitstore.ErrNoMatchingCommit) {
		t.Errorf("Latest for nobody: %v, want ErrNoMatchingCommit", err)
	}

	// Another scope's commit shows nothing to the team, by full id or by
	// prefix; the operator (nil) sees every file.
	for _, other := range []gitstore.Commit{h.root, h.person1, h.person2} {
		for _, rev := range []string{other.SHA, other.Short} {
			got, d, err := s.Show(rev, inTeam)
			if err != nil || got.SHA != other.SHA || !d.Empty() || d.Unified != "" {
				t.Errorf("Show(%s) for the team = %q, %v; want an empty diff", rev, diffPaths(d), err)
			}
		}
	}
	if _, d, err := s.Show(h.mixed.Short, nil); err != nil || !slices.Equal(diffPaths(d), []string{personMemory, teamUser}) {
		t.Errorf("Show(mixed) for all = %q, %v", diffPaths(d), err)
	}
	if _, d, err := s.Show(h.mixed.Short, inPerson); err != nil || !slices.Equal(diffPaths(d), []string{personMemory}) ||
		strings.Contains(d.Unified, teamDir) {
		t.Errorf("Show(mixed) for the person = %q, %v:\n%s", diffPaths(d), err, d.Unified)
	}
}

func TestScopedStatusAndCommitPaths(t *testing.T) {
	s, dir := scopedStore(t)
	makeScopedHistory(t, s, dir)
	testkit.WriteFile(t, dir, teamMemory, "- the team ships on Mondays now\n")
	testkit.WriteFile(t, dir, personUser, "- SECRET-HAND-EDIT\n")

	team, err := s.Status(inTeam)
	if err != nil || !slices.Equal(diffPaths(team), []string{teamMemory}) || strings.Contains(team.Unified, "SECRET") {
		t.Fatalf("Status for the team = %q, %v:\n%s", diffPaths(team), err, team.Unified)
	}
	if all, err := s.Status(nil); err != nil || !slices.Equal(diffPaths(all), []string{personUser, teamMemory}) {
		t.Fatalf("Status = %q, %v", diffPaths(all), err)
	}

	// The team's hand edit alone is committed; the person's stays
	// uncommitted, in the workspace.
	c, err := s.CommitPaths(diffPaths(team), gitstore.ManualSubject, s.Summary(team, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, d, _ := s.Show(c.SHA, nil); !slices.Equal(diffPaths(d), []string{teamMemory}) {
		t.Errorf("the team's commit holds %q", diffPaths(d))
	}
	if st, _ := s.Status(nil); !slices.Equal(diffPaths(st), []string{personUser}) {
		t.Errorf("after the team's commit, Status = %q; want the person's edit alone", diffPaths(st))
	}
	if got := testkit.ReadFile(t, dir, personUser); got != "- SECRET-HAND-EDIT\n" {
		t.Errorf("the person's file became %q", got)
	}

	if _, err := s.CommitPaths(nil, "dream: nothing", ""); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Errorf("CommitPaths(nil): %v, want ErrNothingToCommit", err)
	}
	if _, err := s.CommitPaths([]string{teamMemory}, "dream: nothing", ""); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Errorf("CommitPaths of an unchanged file: %v, want ErrNothingToCommit", err)
	}
	testkit.WriteFile(t, dir, "notes.txt", "not memory\n")
	if _, err := s.CommitPaths([]string{personUser, "notes.txt"}, "manual: notes", ""); !errors.Is(err, gitstore.ErrNotTracked) {
		t.Errorf("CommitPaths of an untracked file: %v, want ErrNotTracked", err)
	}
	if st, _ := s.Status(inPerson); st.Empty() {
		t.Error("a refused CommitPaths committed the person's edit")
	}
	checkGit(t, s, dir, " M "+personUser)
}

// A restore for one scope undoes the commit in that scope's files alone,
// saves that scope's hand edits alone (they stay), and writes a revert
// commit whose files, diff and body are that scope's.
func TestScopedRestore(t *testing.T) {
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)
	testkit.WriteFile(t, dir, personUser, "- SECRET-HAND-EDIT\n") // the person's, uncommitted
	testkit.WriteFile(t, dir, teamDir+"SOUL.md", "- be brief\n")  // the team's, uncommitted
	personBefore := readAll(t, dir, personDir)

	r := restore(t, s, h.team1.Short, inTeam)
	// team1's line goes, the team's later line (team2's) and hand edit stay.
	for p, want := range map[string]string{teamMemory: "# Memory\n- standup at 10\n", teamUser: "- the team is in Lisbon\n", teamDir + "SOUL.md": "- be brief\n"} {
		if got := testkit.ReadFile(t, dir, p); got != want {
			t.Errorf("%s = %q after the restore, want %q", p, got, want)
		}
	}
	if got := readAll(t, dir, personDir); !mapsEqual(got, personBefore) {
		t.Errorf("the person's files changed: %q, were %q", got, personBefore)
	}
	log, err := s.Log(2, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	manual := log[1]
	if log[0].SHA != r.Commit.SHA || manual.Subject != gitstore.ManualSubject {
		t.Fatalf("log = %q", subjects(log))
	}
	for _, c := range []gitstore.Commit{manual, r.Commit} {
		_, d, err := s.Show(c.SHA, nil)
		if err != nil || slices.ContainsFunc(diffPaths(d), func(p string) bool { return !inTeam(p) }) {
			t.Errorf("%s changed %q, %v; want the team's files alone", c.Subject, diffPaths(d), err)
		}
		full, _, _ := s.Show(c.SHA, nil)
		if strings.Contains(full.Body, "SECRET") || strings.Contains(full.Body, personDir) {
			t.Errorf("%s's body names the person's files:\n%s", c.Subject, full.Body)
		}
	}
	if st, _ := s.Status(nil); !slices.Equal(diffPaths(st), []string{personUser}) {
		t.Errorf("Status after the team's restore = %q; want the person's hand edit, untouched", diffPaths(st))
	}

	// The person's restore of person1 changes none of the team's files.
	teamBefore := readAll(t, dir, teamDir)
	r = restore(t, s, h.person1.SHA, inPerson)
	if got := readAll(t, dir, teamDir); !mapsEqual(got, teamBefore) {
		t.Errorf("the person's restore changed the team's files: %q, were %q", got, teamBefore)
	}
	// person1 replaced the heading with its line, and mixed appended
	// one: the heading comes back, mixed's line stays.
	if got := testkit.ReadFile(t, dir, personMemory); got != "# Memory\n- SECRET-PROMOTION\n" {
		t.Errorf("the person's MEMORY.md = %q after the restore", got)
	}

	// A restore that changes nothing of the files it may touch.
	if _, err := s.Restore(h.root.SHA, inTeam, gitstore.RestoreOptions{}); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Errorf("restore of the root's commit for the team: %v, want ErrNothingToCommit", err)
	}
	checkGit(t, s, dir)
}

func diffPaths(d gitstore.Diff) []string {
	var out []string
	for _, f := range d.Files {
		out = append(out, f.Path)
	}
	return out
}

// readAll maps the files under the workspace folder prefix to their text.
func readAll(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := filepath.Join(dir, filepath.FromSlash(prefix))
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A scope folder made after the repository (by Dream or a chat tool) is
// found by Status and committed like any tracked file; what else lies in
// it is ignored, by the store and by git; a folder removed is a removal.
func TestScopeFoldersAreFound(t *testing.T) {
	s, dir := scopedStore(t)
	noise := workspaceNoise(t, dir)
	for p, text := range map[string]string{
		teamDir + "notes.txt":             "not memory\n",
		teamDir + "memory/history.jsonl":  "{}\n",
		teamDir + "memory/.MEMORY.md.tmp": "a writer's temp file\n",
		"scopes/README.md":                "not a scope\n",
	} {
		testkit.WriteFile(t, dir, p, text)
		noise[p] = text
	}
	testkit.WriteFile(t, dir, teamMemory, "- the team ships on Fridays\n")
	testkit.WriteFile(t, dir, teamUser, "- the team is in Lisbon\n")
	// A folder that is a link is not entered, as git does not follow one.
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	testkit.WriteFile(t, elsewhere, "USER.md", "- outside the workspace\n")
	if err := os.Symlink(elsewhere, filepath.Join(dir, "scopes", "person-slack-t1-u9")); err != nil {
		t.Fatal(err)
	}

	st, err := s.Status(nil)
	if err != nil || !slices.Equal(diffPaths(st), []string{teamUser, teamMemory}) {
		t.Fatalf("Status = %q, %v; want the team's two files", diffPaths(st), err)
	}
	if st, _ := s.Status(inPerson); !st.Empty() {
		t.Errorf("Status for the person = %q", diffPaths(st))
	}
	c := mustCommit(t, s, "dream: 2 changes from history 1-2")
	if _, d, _ := s.Show(c.SHA, nil); !slices.Equal(diffPaths(d), []string{teamUser, teamMemory}) {
		t.Errorf("the commit holds %q", diffPaths(d))
	}
	if cs, _ := s.Log(0, "dream:", inTeam); len(cs) != 1 || cs[0].SHA != c.SHA {
		t.Errorf("the team's log = %q", subjects(cs))
	}
	checkGit(t, s, dir) // git ignores the link and the other files too
	assertNoise(t, dir, noise)
	if err := os.Remove(filepath.Join(dir, "scopes", "person-slack-t1-u9")); err != nil {
		t.Fatal(err)
	}

	// The scope's folder goes: its files' removal is what there is to
	// record, for the team alone.
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(teamDir))); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Status(inTeam); err != nil || !slices.Equal(diffPaths(st), []string{teamUser, teamMemory}) {
		t.Fatalf("Status after the folder went = %q, %v", diffPaths(st), err)
	}
	if st, _ := s.Status(inRoot); !st.Empty() {
		t.Errorf("Status for the root = %q", diffPaths(st))
	}
	gone := mustCommit(t, s, "manual: edits outside Dream")
	if _, d, _ := s.Show(gone.SHA, nil); !slices.Equal(diffPaths(d), []string{teamUser, teamMemory}) {
		t.Errorf("the removal commit holds %q", diffPaths(d))
	}
	// Restoring the state before it brings the folder back.
	if _, err := s.Restore(gone.Short, inTeam, gitstore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, teamMemory); got != "- the team ships on Fridays\n" {
		t.Errorf("restored MEMORY.md = %q", got)
	}
	checkGit(t, s, dir)
}

// A name a pattern matches but the store would have to quote is not
// tracked: such a folder is never made by dreamgate (scope names are
// lowercase letters, digits, '-', '_' and '.').
func TestScopeFolderWithAnOddNameIsNotTracked(t *testing.T) {
	s, dir := scopedStore(t)
	testkit.WriteFile(t, dir, "scopes/a b/USER.md", "odd\n")
	testkit.WriteFile(t, dir, "scopes/tëam/USER.md", "odd\n")
	if st, err := s.Status(nil); err != nil || !st.Empty() {
		t.Errorf("Status = %q, %v; want nothing", diffPaths(st), err)
	}
	if _, err := s.CommitPaths([]string{"scopes/a b/USER.md"}, "manual: odd", ""); !errors.Is(err, gitstore.ErrNotTracked) {
		t.Errorf("CommitPaths of an odd name: %v, want ErrNotTracked", err)
	}
	for _, p := range []string{"scopes/x/notes.txt", "scopes/x/memory/history.jsonl", ".gitignore", "scopes/.git/USER.md"} {
		if _, err := s.CommitPaths([]string{p}, "manual: other", ""); !errors.Is(err, gitstore.ErrNotTracked) {
			t.Errorf("CommitPaths(%s): %v, want ErrNotTracked", p, err)
		}
	}
}

func TestPatternsChecked(t *testing.T) {
	for _, tc := range []struct {
		tracked, patterns []string
	}{
		{gitstore.TestTracked, []string{"scopes/**/SOUL.md"}},
		{gitstore.TestTracked, []string{"scopes/.*/SOUL.md"}},
		{gitstore.TestTracked, []string{"scopes/*/../SOUL.md"}},
		{gitstore.TestTracked, []string{"/scopes/*/SOUL.md"}},
		{gitstore.TestTracked, []string{"scopes/*/SO UL.md"}},
		{gitstore.TestTracked, []string{"scopes/*", "scopes/*/SOUL.md"}},
		{gitstore.TestTracked, []string{"*"}},
		{gitstore.TestTracked, []string{"memory/MEMORY.md/*"}},
		{[]string{"scopes"}, []string{"scopes/*/SOUL.md"}},
	} {
		_, err := gitstore.Open(filepath.Join(t.TempDir(), "ws"), gitstore.Options{Tracked: tc.tracked, Patterns: tc.patterns})
		if err == nil {
			t.Errorf("Open with %q and %q: no error", tc.tracked, tc.patterns)
		}
	}
}

// An existing repository made when only the root's files were tracked (an
// earlier version) gets the patterns' lines in its .gitignore once, with a
// log line, and the scope files already in the workspace (made by chat
// tools meanwhile) committed with it.
func TestIgnoreMigratedForPatterns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	old, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Now: newClock().now})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, "memory/MEMORY.md", "- root\n")
	mustCommit(t, old, "dream: 1 change from history 1-1")
	testkit.WriteFile(t, dir, teamMemory, "- the team ships on Fridays\n")
	testkit.WriteFile(t, dir, teamDir+"notes.txt", "not memory\n")
	checkGit(t, old, dir) // the old .gitignore hides the scope folder
	before := testkit.ReadFile(t, dir, ".gitignore")

	var rec testkit.LogRecorder
	opts := scopedOptions()
	opts.Logger = rec.Logger()
	s, err := gitstore.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	after := testkit.ReadFile(t, dir, ".gitignore")
	added, ok := strings.CutPrefix(after, before)
	if !ok || !strings.Contains(added, "!/scopes/*/memory/MEMORY.md\n") {
		t.Fatalf(".gitignore not extended in place:\n%s", after)
	}
	if n := countLogs(&rec, "extended .gitignore"); n != 1 {
		t.Errorf("%d log lines about the .gitignore, want 1", n)
	}
	log, err := s.Log(1, "", nil)
	if err != nil || len(log) != 1 || log[0].Subject != gitstore.IgnoreSubject {
		t.Fatalf("log = %q, %v", subjects(log), err)
	}
	if _, d, _ := s.Show(log[0].SHA, nil); !slices.Equal(diffPaths(d), []string{".gitignore", teamMemory}) {
		t.Errorf("the migration commit holds %q", diffPaths(d))
	}
	if cs, _ := s.Log(0, "", inTeam); len(cs) != 1 || cs[0].SHA != log[0].SHA {
		t.Errorf("the team's log = %q; want the migration commit", subjects(cs))
	}
	checkGit(t, s, dir)
	if hasGit() {
		if out, err := tryGit(t, dir, "check-ignore", "-q", teamMemory); err == nil {
			t.Errorf("git ignores %s: %s", teamMemory, out)
		}
		runGit(t, dir, "check-ignore", "-q", teamDir+"notes.txt")
	}

	// Once: another Open changes nothing and says nothing.
	rec.Reset()
	if _, err := gitstore.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	if got := testkit.ReadFile(t, dir, ".gitignore"); got != after {
		t.Errorf(".gitignore after a second Open:\n%s", got)
	}
	if n := countLogs(&rec, ".gitignore"); n != 0 {
		t.Errorf("a second Open logged about the .gitignore %d times", n)
	}
	if again, _ := s.Log(1, "", nil); again[0].SHA != log[0].SHA {
		t.Errorf("a second Open committed %q", again[0].Subject)
	}
}

func countLogs(rec *testkit.LogRecorder, text string) int {
	n := 0
	for _, r := range rec.Records() {
		if strings.Contains(r.Message, text) {
			n++
		}
	}
	return n
}

// The commit index records the paths each commit changed: kept up as the
// store commits, caught up by walking after a commit made with the git
// command line, and rebuilt from the history to the same bytes.
func TestCommitIndexKnowsScopePaths(t *testing.T) {
	gitBin(t)
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)
	if _, err := s.Log(0, "", inTeam); err != nil { // the index is current from here on
		t.Fatal(err)
	}
	testkit.WriteFile(t, dir, teamMemory, "- the team ships on Fridays\n- by git\n")
	runGit(t, dir, "commit", "-q", "-m", "dream: by git", "--", teamMemory)
	cs, err := s.Log(2, "dream:", inTeam)
	if err != nil || len(cs) != 2 || cs[0].Subject != "dream: by git" || cs[1].SHA != h.mixed.SHA {
		t.Fatalf("the team's log after a git commit = %q, %v", subjects(cs), err)
	}
	if cs, _ := s.Log(1, "dream:", inPerson); len(cs) != 1 || cs[0].SHA != h.mixed.SHA {
		t.Errorf("the person's log after the team's git commit = %q", subjects(cs))
	}
	testkit.WriteFile(t, dir, personUser, "- more\n")
	mustCommit(t, s, "dream: person again")

	p := filepath.Join(dir, ".git", gitstore.CommitIndexFile)
	kept, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	s2, err := gitstore.Open(dir, scopedOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []func(string) bool{nil, inTeam, inPerson, inRoot} {
		a, err1 := s.Log(0, "", keep)
		b, err2 := s2.Log(0, "", keep)
		if err1 != nil || err2 != nil || !slices.Equal(shas(a), shas(b)) {
			t.Errorf("kept and rebuilt indexes disagree: %q, %v / %q, %v", subjects(a), err1, subjects(b), err2)
		}
	}
	rebuilt, err := os.ReadFile(p)
	if err != nil || string(rebuilt) != string(kept) {
		t.Errorf("the rebuilt index differs from the kept one: %v\nkept:\n%s\nrebuilt:\n%s", err, kept, rebuilt)
	}
}

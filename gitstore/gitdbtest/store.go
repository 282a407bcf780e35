package gitdbtest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
)

// Paths of the tests' workspace layout: the root's files and two scopes'.
const (
	rootMemory   = "memory/MEMORY.md"
	teamMemory   = "scopes/team-x/memory/MEMORY.md"
	personMemory = "scopes/person-x-u1/memory/MEMORY.md"
)

// Options are the tests' tracked files, each scope on a line of its own,
// stamped by a clock that moves a minute a call.
func Options() gitstore.Options {
	t := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	return gitstore.Options{
		Tracked:  []string{"SOUL.md", "USER.md", rootMemory},
		Patterns: []string{"scopes/*/SOUL.md", "scopes/*/USER.md", "scopes/*/memory/MEMORY.md"},
		Lines:    "scopes",
		Initial:  map[string][]byte{"SOUL.md": []byte("# Soul\n")},
		Now:      func() time.Time { t = t.Add(time.Minute); return t },
	}
}

func change(s *gitstore.Store, t *testing.T, subject string, files map[string]string) gitstore.Commit {
	t.Helper()
	head, err := s.Head()
	if err != nil {
		t.Fatal(err)
	}
	var changes []gitstore.Change
	for p, text := range files {
		changes = append(changes, gitstore.Change{Path: p, Data: []byte(text)})
	}
	c, err := s.CommitChanges(head.SHA, changes, subject, "")
	if err != nil {
		t.Fatalf("CommitChanges(%q): %v", subject, err)
	}
	return c
}

func shas(cs []gitstore.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.SHA
	}
	return out
}

func fileAt(t *testing.T, s *gitstore.Store, rev, p string) string {
	t.Helper()
	data, ok, err := s.FileAt(rev, p)
	if err != nil {
		t.Fatalf("FileAt(%s, %s): %v", rev, p, err)
	}
	if !ok {
		return "(none)"
	}
	return string(data)
}

// StoreOnDB: a Store over the database keeps each scope on its own line
// and the lines as one history; it has no workspace; a second Store (a
// second process) sees the first's commits and is refused a step built on
// an old head; a restore undoes one commit's lines.
func StoreOnDB(t *testing.T, open Open) {
	db := open(t)
	s, err := gitstore.OpenDB(db, Options())
	if err != nil {
		t.Fatal(err)
	}
	init, err := s.Head()
	if err != nil || init.Subject != gitstore.InitSubject {
		t.Fatalf("a new database's first commit: %q, %v", init.Subject, err)
	}
	if got := fileAt(t, s, init.SHA, "SOUL.md"); got != "# Soul\n" {
		t.Errorf("the first commit's SOUL.md = %q, want Options.Initial's", got)
	}
	root := change(s, t, "dream: root", map[string]string{rootMemory: "- root\n"})
	team := change(s, t, "scope created: team-x", map[string]string{teamMemory: "- ships on Fridays\n"})
	person := change(s, t, "scope created: person-x-u1", map[string]string{personMemory: "- SECRET\n"})
	team2 := change(s, t, "dream: team", map[string]string{teamMemory: "- ships on Fridays\n- standup at 10\n"})
	if team.Parent != "" || team2.Parent != team.SHA {
		t.Errorf("the team's line: first parent %q, second's %s; want none, then the first", team.Parent, team2.Parent)
	}
	all, err := s.Log(0, "", nil)
	if err != nil || !slices.Equal(shas(all), shas([]gitstore.Commit{team2, person, team, root, init})) {
		t.Errorf("Log = %v, %v", all, err)
	}
	inTeam := func(p string) bool { return len(p) > 14 && p[:14] == "scopes/team-x/" }
	if cs, _ := s.Log(0, "", inTeam); !slices.Equal(shas(cs), shas([]gitstore.Commit{team2, team})) {
		t.Errorf("the team's log = %v", cs)
	}
	if got := fileAt(t, s, person.SHA, teamMemory); got != "- ships on Fridays\n" {
		t.Errorf("the team's memory as the person's commit found it = %q", got)
	}
	if got := fileAt(t, s, root.SHA, teamMemory); got != "(none)" {
		t.Errorf("the team's memory before the team had any = %q", got)
	}
	after, err := s.CommitsAfter(team.SHA, 0)
	if err != nil || !slices.Equal(shas(after), shas([]gitstore.Commit{person, team2})) {
		t.Errorf("CommitsAfter(team) = %v, %v", after, err)
	}
	noWorkspace(t, s, team.SHA, team2.SHA)
	secondProcess(t, db, s, team2)
	restoreOnDB(t, s, team2)
}

// noWorkspace: nothing is uncommitted, nothing is written, nothing can be
// committed from files.
func noWorkspace(t *testing.T, s *gitstore.Store, from, to string) {
	if st, err := s.Status(nil); err != nil || !st.Empty() {
		t.Errorf("Status = %v, %v; a database has no workspace", st, err)
	}
	if res, err := s.Checkout(from, to, nil); err != nil || len(res.Written)+len(res.Kept) != 0 {
		t.Errorf("Checkout = %+v, %v; nothing to write", res, err)
	}
	if _, err := s.Commit("manual: edits", ""); !errors.Is(err, gitstore.ErrNoWorkspace) {
		t.Errorf("Commit = %v, want ErrNoWorkspace", err)
	}
}

// secondProcess: another Store on the database sees s's history, commits
// on top, and s sees that; a step s builds on its old head is refused.
func secondProcess(t *testing.T, db gitstore.DB, s *gitstore.Store, head gitstore.Commit) {
	s2, err := gitstore.OpenDB(db, Options())
	if err != nil {
		t.Fatal(err)
	}
	if h, err := s2.Head(); err != nil || h.SHA != head.SHA {
		t.Fatalf("the second process's head = %s, %v; want %s", h.Short, err, head.Short)
	}
	other := change(s2, t, "dream: from elsewhere", map[string]string{personMemory: "- SECRET\n- more\n"})
	if h, err := s.Head(); err != nil || h.SHA != other.SHA {
		t.Errorf("the first process's head after the second's commit = %s, %v", h.Short, err)
	}
	_, err = s.CommitChanges(head.SHA, []gitstore.Change{{Path: teamMemory, Data: []byte("late\n")}}, "dream: late", "")
	if !errors.Is(err, gitstore.ErrConcurrentUpdate) {
		t.Errorf("a step built on the old head = %v, want ErrConcurrentUpdate", err)
	}
	// Both at once, each on its own head: one lands, the other is told.
	errs := make(chan error, 2)
	h, _ := s.Head()
	for i, st := range []*gitstore.Store{s, s2} {
		go func() {
			_, err := st.CommitChanges(h.SHA, []gitstore.Change{{Path: rootMemory, Data: []byte("- root\n- race " + string(rune('a'+i)) + "\n")}}, "dream: race", "")
			errs <- err
		}()
	}
	landed := 0
	for range 2 {
		if err := <-errs; err == nil {
			landed++
		} else if !errors.Is(err, gitstore.ErrConcurrentUpdate) {
			t.Errorf("a racing step: %v", err)
		}
	}
	if landed != 1 {
		t.Errorf("%d of two racing steps built on one head landed, want 1", landed)
	}
}

// restoreOnDB: a restore undoes team2's line, as a commit on the team's
// line, with no workspace to write.
func restoreOnDB(t *testing.T, s *gitstore.Store, team2 gitstore.Commit) {
	inTeam := func(p string) bool { return len(p) > 14 && p[:14] == "scopes/team-x/" }
	plan, err := s.PlanRestore(team2.SHA, inTeam)
	if err != nil || len(plan.Files) != 1 {
		t.Fatalf("PlanRestore = %+v, %v", plan, err)
	}
	r, err := s.Restore(team2.SHA, inTeam, gitstore.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fileAt(t, s, r.Commit.SHA, teamMemory); got != "- ships on Fridays\n" {
		t.Errorf("the team's memory after the restore = %q", got)
	}
	if r.Commit.Parent != team2.SHA {
		t.Errorf("the restore's parent is %s, want the team's last commit %s", r.Commit.Parent, team2.Short)
	}
}

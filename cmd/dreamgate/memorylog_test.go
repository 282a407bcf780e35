package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
)

// The Dream commands' log, cut to what an asker may see, over a real
// memory repository: a commit is found and listed only when it changed a
// kept file, and its diff holds only those files.
func TestMemoryLogCutsToTheKeptFiles(t *testing.T) {
	dir := t.TempDir()
	team, ana := "scopes/team-slack-t1/USER.md", "scopes/person-slack-t1-uana/USER.md"
	repo, err := gitstore.Open(dir, gitstore.Options{Tracked: []string{"USER.md", team, ana}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(subject string) gitstore.Commit {
		t.Helper()
		c, err := repo.Commit(subject, "")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	write("USER.md", "- the operator's PIN is 1234\n")
	root := commit("dream: 1 change from history 1-1")
	write(team, "- the team ships on Fridays\n")
	teamC := commit("dream: 1 change from history 2-2")
	write(ana, "- Ana's salary band is K7Q2Z9\n")
	write(team, "- the team ships on Fridays\n- TEAMWIDE\n")
	mixed := commit("dream: 2 changes from history 3-4")
	write(ana, "- Ana's salary band is K7Q2Z9\n- ANAONLY\n")
	anaC := commit("dream: 1 change from history 5-5")

	teamOnly := func(p string) bool {
		s, ok := audience.ScopeOfPath(p)
		return ok && s == "team-slack-t1"
	}
	m := memoryLog{repo}
	c, d, err := m.Latest("dream:", teamOnly)
	if err != nil || c.SHA != mixed.SHA {
		t.Fatalf("Latest = %s, %v; want the mixed commit %s", c.Short, err, mixed.Short)
	}
	if len(d.Files) != 1 || d.Files[0].Path != team || strings.Contains(d.Unified, "K7Q2Z9") || !strings.Contains(d.Unified, "TEAMWIDE") {
		t.Errorf("the mixed commit's diff is not cut to the team's file:\n%s", d.Unified)
	}
	cs, err := m.Log(10, "dream:", teamOnly)
	if err != nil || len(cs) != 2 || cs[0].SHA != mixed.SHA || cs[1].SHA != teamC.SHA {
		t.Errorf("Log = %v, %v; want the mixed and the team's commits", cs, err)
	}
	for _, other := range []gitstore.Commit{root, anaC} {
		if _, d, err := m.Show(other.SHA, teamOnly); err != nil || !d.Empty() {
			t.Errorf("Show(%s) for the team: %v, %v; want an empty diff", other.Short, d.Files, err)
		}
	}
	if _, ok, err := m.LatestAfter(teamC.SHA, "dream:", teamOnly); err != nil || ok {
		t.Errorf("LatestAfter the team's commit: %v, %v; the newest later commit is Ana's alone", ok, err)
	}
	nobody := func(string) bool { return false }
	if _, _, err := m.Latest("dream:", nobody); !errors.Is(err, gitstore.ErrNoMatchingCommit) {
		t.Errorf("Latest for nobody: %v, want ErrNoMatchingCommit", err)
	}
	all, err := m.Log(10, "dream:", nil)
	if err != nil || len(all) != 4 {
		t.Errorf("the operator's Log = %d commits, %v; want 4", len(all), err)
	}
}

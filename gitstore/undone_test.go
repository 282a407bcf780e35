package gitstore_test

import (
	"fmt"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// "Undone by" is said of a commit only when a restore reverted it: not of
// a commit made before an unrelated restore (another scope's, or another
// commit's of the same file), and no longer once the restore itself is
// undone.
func TestUndoneBy(t *testing.T) {
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)
	undoneBy := func(c gitstore.Commit, keep func(string) bool) string {
		t.Helper()
		r, ok, err := s.UndoneBy(c.SHA, keep)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		return r.SHA
	}
	// An admin undoes the team's Dream: the person's own Dreams, made
	// before and after it and read together with the team's, are not
	// undone; the team's later Dream of the same file is not either.
	r := restore(t, s, h.team1.SHA, inTeam)
	inDM := func(p string) bool { return inTeam(p) || inPerson(p) }
	for _, c := range []gitstore.Commit{h.person1, h.person2, h.mixed, h.team2, h.root} {
		if got := undoneBy(c, inDM); got != "" {
			t.Errorf("%s (%s) is said undone by %s", c.Short, c.Subject, got)
		}
	}
	if got := undoneBy(h.team1, inDM); got != r.Commit.SHA {
		t.Errorf("team1 undone by %q, want the restore %s", got, r.Commit.Short)
	}
	// Another reader's filter that does not show the restore's files.
	if got := undoneBy(h.team1, inPerson); got != "" {
		t.Errorf("team1 undone by %q for a reader of the person's files alone", got)
	}
	// Undoing the restore brings team1's change back.
	r2 := restore(t, s, r.Commit.SHA, inTeam)
	if got := undoneBy(h.team1, nil); got != "" {
		t.Errorf("team1 undone by %q after the restore was undone", got)
	}
	if got := undoneBy(r.Commit, nil); got != r2.Commit.SHA {
		t.Errorf("the restore undone by %q, want %s", got, r2.Commit.Short)
	}
	// And undoing that undo undoes team1 again.
	r3 := restore(t, s, r2.Commit.SHA, inTeam)
	if got := undoneBy(h.team1, nil); got != r.Commit.SHA {
		t.Errorf("team1 undone by %q after the undo of the undo, want %s (in effect again through %s)", got, r.Commit.Short, r3.Commit.Short)
	}
}

// A restore made before restores carried trailers put whole files back:
// it undid the commit its subject names and the later ones its message
// lists, no other.
func TestUndoneByReadsRestoresBeforeTrailers(t *testing.T) {
	s, dir := openStore(t)
	write := func(i int) { testkit.WriteFile(t, dir, "memory/MEMORY.md", fmt.Sprintf("mem %d\n", i)) }
	write(0)
	d0 := mustCommit(t, s, "dream: 0")
	write(1)
	d1 := mustCommit(t, s, "dream: 1")
	write(2)
	d2 := mustCommit(t, s, "dream: 2")
	testkit.WriteFile(t, dir, "USER.md", "- other\n")
	d3 := mustCommit(t, s, "dream: 3")
	write(0)
	old, err := s.CommitPaths([]string{"memory/MEMORY.md"}, gitstore.RevertPrefix+d1.Short,
		"Restored the memory files to their state before "+d1.Short+" (dream: 1).\n\n- memory/MEMORY.md: restored\n\n"+
			"This also undoes later commits:\n- "+d2.Short+" dream: 2\n\nmemory/MEMORY.md: +1 -1")
	if err != nil {
		t.Fatal(err)
	}
	for c, want := range map[gitstore.Commit]bool{d0: false, d1: true, d2: true, d3: false} {
		r, ok, err := s.UndoneBy(c.SHA, nil)
		if err != nil || ok != want || ok && r.SHA != old.SHA {
			t.Errorf("UndoneBy(%s) = %s %v %v, want %v", c.Subject, r.Short, ok, err, want)
		}
	}
}

func TestLogPrefixes(t *testing.T) {
	s, dir := openStore(t)
	testkit.WriteFile(t, dir, "USER.md", "a\n")
	a := mustCommit(t, s, "dream: a")
	testkit.WriteFile(t, dir, "USER.md", "b\n")
	b := mustCommit(t, s, gitstore.ManualSubject)
	testkit.WriteFile(t, dir, "USER.md", "c\n")
	mustCommit(t, s, "other: c")
	cs, err := s.LogPrefixes(0, []string{"dream:", gitstore.ManualSubject}, nil)
	if err != nil || len(cs) != 2 || cs[0].SHA != b.SHA || cs[1].SHA != a.SHA {
		t.Errorf("LogPrefixes = %q, %v", subjects(cs), err)
	}
	if cs, err := s.LogPrefixes(1, []string{"dream:", gitstore.ManualSubject}, nil); err != nil || len(cs) != 1 || cs[0].SHA != b.SHA {
		t.Errorf("LogPrefixes(1) = %q, %v", subjects(cs), err)
	}
}

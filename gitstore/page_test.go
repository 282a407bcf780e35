package gitstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// Paging through the history with LogBefore gives what one Log gives, page
// by page, for every filter; a page starts after the commit it is given.
func TestLogBeforePages(t *testing.T) {
	s, dir := scopedStore(t)
	makeScopedHistory(t, s, dir)
	for _, tc := range []struct {
		name   string
		prefix string
		keep   func(string) bool
	}{
		{"all", "", nil},
		{"dreams", "dream:", nil},
		{"team", "", inTeam},
		{"person's dreams", "dream:", inPerson},
		{"nobody", "", func(string) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := s.Log(0, tc.prefix, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			for size := 1; size <= 3; size++ {
				var paged []gitstore.Commit
				before := ""
				for range 20 {
					page, err := s.LogBefore(before, size, tc.prefix, tc.keep)
					if err != nil {
						t.Fatal(err)
					}
					if len(page) > size {
						t.Fatalf("a page of %d holds %d", size, len(page))
					}
					paged = append(paged, page...)
					if len(page) < size {
						break
					}
					before = page[len(page)-1].SHA
				}
				if !slices.Equal(shas(paged), shas(whole)) {
					t.Errorf("pages of %d = %q, want %q", size, subjects(paged), subjects(whole))
				}
			}
		})
	}
}

func TestLogBeforeRefusesWhatIsNotAFullIDOnTheHistory(t *testing.T) {
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)
	for _, bad := range []string{h.team1.Short, "zz" + h.team1.SHA[2:], h.team1.SHA + "0"} {
		if _, err := s.LogBefore(bad, 5, "", nil); !errors.Is(err, gitstore.ErrInvalidRevision) {
			t.Errorf("LogBefore(%q): %v, want ErrInvalidRevision", bad, err)
		}
	}
	if _, err := s.LogBefore(strings.Repeat("ab", 20), 5, "", nil); !errors.Is(err, gitstore.ErrNotInHistory) {
		t.Errorf("LogBefore(unknown id): %v, want ErrNotInHistory", err)
	}
}

// PlanRestore names what Restore then does: the same files and lines,
// and it changes nothing itself.
func TestPlanRestoreIsWhatRestoreDoes(t *testing.T) {
	s, dir := scopedStore(t)
	h := makeScopedHistory(t, s, dir)
	headBefore, _ := s.Log(1, "", nil)
	plan, err := s.PlanRestore(h.team1.SHA, inTeam)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Uncommitted {
		t.Error("a clean workspace planned with uncommitted edits")
	}
	if got, _ := s.Log(1, "", nil); got[0].SHA != headBefore[0].SHA {
		t.Fatal("PlanRestore committed something")
	}
	r, err := s.Restore(h.team1.SHA, inTeam, gitstore.RestoreOptions{Note: "Asked for on the memory page by the operator."})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(plan.Files) != fmt.Sprint(r.Plan.Files) {
		t.Errorf("planned %+v, restore did %+v", plan.Files, r.Plan.Files)
	}
	_, d, err := s.Show(r.Commit.SHA, nil)
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, f := range plan.Files {
		planned = append(planned, f.Path)
	}
	if !slices.Equal(planned, diffPaths(d)) {
		t.Errorf("planned files %q, restore changed %q", planned, diffPaths(d))
	}
	full, _, _ := s.Show(r.Commit.SHA, nil)
	if !strings.Contains(full.Body, "\n\nAsked for on the memory page by the operator.\n\n") {
		t.Errorf("the revert commit's body does not carry the note:\n%s", full.Body)
	}
	checkGit(t, s, dir)

	// Hand edits are announced and planned on; a plan with nothing to
	// restore says so.
	testkit.WriteFile(t, dir, personUser, "- prefers SECRET-TEA\n- edited by hand\n")
	plan, err = s.PlanRestore(h.person2.SHA, inPerson)
	if err != nil || !plan.Uncommitted || len(plan.Files) != 1 || fmt.Sprint(plan.Files[0].Removed) != "[- prefers SECRET-TEA]" {
		t.Errorf("plan with a hand edit = %+v, %v; want Uncommitted, the Dream's line removed", plan, err)
	}
	if st, _ := s.Status(nil); !slices.Equal(diffPaths(st), []string{personUser}) {
		t.Errorf("PlanRestore touched the hand edit: status %q", diffPaths(st))
	}
	if _, err := s.PlanRestore(h.root.SHA, inTeam); !errors.Is(err, gitstore.ErrNothingToCommit) {
		t.Errorf("plan of the root's commit for the team: %v, want ErrNothingToCommit", err)
	}
	log, _ := s.Log(0, "", nil)
	if _, err := s.PlanRestore(log[len(log)-1].SHA, nil); !errors.Is(err, gitstore.ErrRootCommit) {
		t.Errorf("plan of the root commit: %v, want ErrRootCommit", err)
	}
}

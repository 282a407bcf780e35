package dream

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
)

// A restore asked by an audience that reads several scopes (a DM reads its
// team's too) undoes the target's own scope alone: the team's later Dream
// stays, and is not named as undone. Each scope's Dream commits its own
// paths alone. Played against the memory repository itself and against
// the fake the other scope tests use, which must agree with it.
func TestRestoreKeepsToTheTargetsScope(t *testing.T) {
	for _, which := range []string{"gitstore"} {
		t.Run(which, func(t *testing.T) {
			e := newScopedEnv(t)
			var repo Repo = e.repo
			d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: repo})
			if err != nil {
				t.Fatal(err)
			}
			e.add(person, "Ana salary band is K7Q2Z9")
			e.add(team, "team ships on fridays")
			rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
			if err != nil || len(rep.Scopes) != 2 || rep.Scopes[0].Scope != person {
				t.Fatalf("run: %+v, %v", rep, err)
			}
			personCommit, teamCommit := rep.Scopes[0].Commit, rep.Scopes[1].Commit
			for c, s := range map[string]audience.Scope{personCommit: person, teamCommit: team} {
				_, diff, err := repo.Show(c, nil)
				if err != nil || diff.Empty() || slices.ContainsFunc(diff.Files, func(f gitstore.FileChange) bool {
					got, _ := audience.ScopeOfPath(f.Path)
					return got != s
				}) {
					t.Errorf("the %s Dream commit changed %+v, %v", s, diff.Files, err)
				}
			}

			dm := OnlyScopes(team, person)
			res, err := d.Restore(personCommit, dm)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(e.read("scopes/person-slack-t1-u2/USER.md"), "K7Q2Z9") {
				t.Error("the person's Dream was not undone")
			}
			if !strings.Contains(e.read("scopes/team-slack-t1/USER.md"), "fridays") {
				t.Error("the DM's restore of the person's commit undid the team's later Dream")
			}
			if !slices.Equal(res.Files, []string{"scopes/person-slack-t1-u2/USER.md"}) {
				t.Errorf("restored files %q", res.Files)
			}
			for _, c := range res.Undone {
				if c.Short == teamCommit {
					t.Errorf("the team's commit is named as undone: %+v", res.Undone)
				}
			}
			if _, diff, err := repo.Show(res.Revert.SHA, nil); err != nil || len(diff.Files) != 1 {
				t.Errorf("the revert commit changed %+v, %v", diff.Files, err)
			}
		})
	}
}

// PlanRestore names what RestoreFrom then does, through the memory
// repository and the fake alike, with the same answer for a commit of a
// scope the asker does not read; RestoreFrom's origin is in the revert
// commit's message.
func TestPlanRestoreThenRestoreFrom(t *testing.T) {
	for _, which := range []string{"gitstore"} {
		t.Run(which, func(t *testing.T) {
			e := newScopedEnv(t)
			var repo Repo = e.repo
			d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: repo})
			if err != nil {
				t.Fatal(err)
			}
			e.add(person, "Ana salary band is K7Q2Z9")
			e.add(team, "team ships on fridays")
			rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
			if err != nil || len(rep.Scopes) != 2 {
				t.Fatalf("run: %+v, %v", rep, err)
			}
			personCommit, teamCommit := rep.Scopes[0].Commit, rep.Scopes[1].Commit
			e.add(person, "Ana moved to Porto")
			if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
				t.Fatal(err)
			}

			// The team's channel may not even learn the person's commit exists.
			if _, err := d.PlanRestore(personCommit, OnlyScopes(team)); !errors.Is(err, gitstore.ErrUnknownRevision) {
				t.Errorf("the team planned a restore of the person's commit: %v", err)
			}
			plan, err := d.PlanRestore(personCommit, OnlyScopes(team, person))
			if err != nil {
				t.Fatal(err)
			}
			if plan.Target.Short != personCommit || plan.Uncommitted || len(plan.Undone) != 1 ||
				!slices.Equal(plan.Files, []string{"scopes/person-slack-t1-u2/USER.md"}) {
				t.Errorf("plan = %+v", plan)
			}
			res, err := d.RestoreFrom(personCommit, OnlyScopes(team, person), "Asked for on the memory page by the operator.")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(shortIDs(res.Undone), shortIDs(plan.Undone)) || !slices.Equal(res.Files, plan.Files) {
				t.Errorf("restore undid %q and restored %q; the plan said %q and %q",
					shortIDs(res.Undone), res.Files, shortIDs(plan.Undone), plan.Files)
			}
			if slices.Contains(shortIDs(res.Undone), teamCommit) {
				t.Error("the team's commit was undone")
			}
			full, _, err := repo.Show(res.Revert.SHA, nil)
			if err != nil || !strings.Contains(full.Body, "Asked for on the memory page by the operator.") {
				t.Errorf("the revert commit's body does not say where it came from: %q, %v", full.Body, err)
			}
		})
	}
}

func shortIDs(cs []gitstore.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Short
	}
	return out
}

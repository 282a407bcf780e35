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
			res, err := d.Restore(personCommit, dm, RestoreOptions{})
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
			for _, c := range res.Plan.Later {
				if c.Short == teamCommit {
					t.Errorf("the team's commit is named as a later change: %+v", res.Plan.Later)
				}
			}
			if _, diff, err := repo.Show(res.Revert.SHA, nil); err != nil || len(diff.Files) != 1 {
				t.Errorf("the revert commit changed %+v, %v", diff.Files, err)
			}
		})
	}
}

// PlanRestore names what Restore then does, with the same answer for a
// commit of a scope the asker does not read; the origin is in the revert
// commit's message, with the scope's trailer.
func TestPlanRestoreThenRestore(t *testing.T) {
	e := newScopedEnv(t)
	repo := e.repo
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
	if plan.Target.Short != personCommit || plan.Uncommitted || plan.Conflicts() != 0 || len(plan.Files) != 1 ||
		plan.Files[0].Path != "scopes/person-slack-t1-u2/USER.md" || len(plan.Files[0].Removed) != 1 ||
		!strings.HasPrefix(plan.Files[0].Removed[0], "- Ana salary band is K7Q2Z9") {
		t.Errorf("plan = %+v", plan)
	}
	res, err := d.Restore(personCommit, OnlyScopes(team, person), RestoreOptions{Origin: "Asked for on the memory page by the operator."})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Files, []string{plan.Files[0].Path}) || !slices.Equal(res.Plan.Files[0].Removed, plan.Files[0].Removed) {
		t.Errorf("restore did %+v; the plan said %+v", res.Plan.Files, plan.Files)
	}
	if got := e.read("scopes/person-slack-t1-u2/USER.md"); strings.Contains(got, "K7Q2Z9") || !strings.Contains(got, "Porto") {
		t.Errorf("the person's USER.md after the restore:\n%s", got)
	}
	if slices.Contains(shortIDs(res.Plan.Later), teamCommit) {
		t.Error("the team's commit is named")
	}
	full, _, err := repo.Show(res.Revert.SHA, nil)
	if err != nil || !strings.Contains(full.Body, "Asked for on the memory page by the operator.") ||
		!strings.Contains(full.Body, "Reverts: ") || !strings.Contains(full.Body, "Scope: "+string(person)) {
		t.Errorf("the revert commit's body does not say what it undid and where it came from: %q, %v", full.Body, err)
	}
}

func shortIDs(cs []gitstore.Commit) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Short
	}
	return out
}

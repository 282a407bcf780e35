package web

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
)

// The timeline says whose memory each change touched and what it changed,
// from the diff as the viewer may see it, not from the subject alone.
func TestTimelineSaysWhoseAndWhat(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	page := f.operator().get("/timeline").body
	mustContain(t, page,
		"The team&#39;s memory (slack t1)", `added “Standup is at 10.”`,
		"The operator&#39;s memory (the workspace root)", `added “The operator likes green tea.”`,
		`added “Ana&#39;s salary band is `+anaSecret+`.”`, "Direct messages (slack t1 uana)")
	// Ana sees her own and the team's changes, never Bob's.
	page = f.person(ana).get("/timeline").body
	mustContain(t, page, `added “Standup is at 10.”`, anaSecret)
	mustNotContain(t, page, "Bob likes hiking", "UBOB", "green tea")
	// A line Dream only stamped anew is neither added nor removed.
	added, removed := changedLines("--- a/USER.md\n+++ b/USER.md\n@@ -1 +1 @@\n-- Likes tea. <!-- durable 2026-01-01 src:1 -->\n+- Likes tea. <!-- durable 2026-02-01 src:1,4 -->\n")
	if len(added) != 0 || len(removed) != 0 {
		t.Errorf("a restamped line: added %q, removed %q", added, removed)
	}
}

// A short id opens its commit, as chat and the timeline show it and as
// git takes it; a prefix naming several commits lists them; only the
// commits the viewer may see count.
func TestShortCommitIDs(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	op, ana := f.operator(), f.person(ana)
	team2 := f.commit["team2"]
	for _, short := range []string{team2.Short, team2.SHA[:4], strings.ToUpper(team2.Short)} {
		res := op.get("/commit/" + short)
		if res.code != http.StatusSeeOther || res.header.Get("Location") != "/commit/"+team2.SHA {
			t.Errorf("/commit/%s: %d %q", short, res.code, res.header.Get("Location"))
		}
	}
	if res := op.get("/commit?sha=" + team2.Short); res.code != http.StatusSeeOther || res.header.Get("Location") != "/commit/"+team2.Short {
		t.Errorf("the open-commit form: %d %q", res.code, res.header.Get("Location"))
	}
	// Bob's commit is not Ana's to find, by a short id either.
	bobs := f.commit["bob"]
	if res := ana.get("/commit/" + bobs.Short); res.code != http.StatusNotFound {
		t.Errorf("Bob's commit by a short id, for Ana: %d", res.code)
	}
	for _, bad := range []string{"abc", "zzzz", "0000000"} {
		if res := op.get("/commit/" + bad); res.code != http.StatusNotFound {
			t.Errorf("/commit/%s: %d", bad, res.code)
		}
	}

	// A prefix several commits share (the repository's own answer,
	// gitstore.AmbiguousRevisionError, for a prefix we choose): the
	// operator chooses among them; Ana among hers alone.
	f.srv.deps.Repo = ambiguous{Repo: f.repo, prefix: "abcd", candidates: []string{team2.SHA, bobs.SHA}}
	res := op.get("/commit/abcd")
	if res.code != http.StatusMultipleChoices || !strings.Contains(res.body, "/commit/"+team2.SHA) || !strings.Contains(res.body, "/commit/"+bobs.SHA) {
		t.Errorf("an ambiguous prefix for the operator: %d\n%s", res.code, res.body)
	}
	if res := ana.get("/commit/abcd"); res.code != http.StatusSeeOther || res.header.Get("Location") != "/commit/"+team2.SHA {
		t.Errorf("an ambiguous prefix, one of them Ana's: %d %q", res.code, res.header.Get("Location"))
	}
}

// ambiguous answers for prefix as the repository does for a prefix that
// names several commits.
type ambiguous struct {
	Repo
	prefix     string
	candidates []string
}

func (a ambiguous) Show(rev string, keep func(string) bool) (gitstore.Commit, gitstore.Diff, error) {
	if rev == a.prefix {
		return gitstore.Commit{}, gitstore.Diff{}, &gitstore.AmbiguousRevisionError{Prefix: rev, Candidates: a.candidates}
	}
	return a.Repo.Show(rev, keep)
}

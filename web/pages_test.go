package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func mustContain(t *testing.T, page string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q:\n%s", w, page)
		}
	}
}

func mustNotContain(t *testing.T, page string, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(page, b) {
			t.Errorf("the page holds %q", b)
		}
	}
}

func TestOverview(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	op := f.operator().get("/")
	if op.code != http.StatusOK {
		t.Fatalf("overview: %d\n%s", op.code, op.body)
	}
	mustContain(t, op.body, "llama3.2", "unreachable", "connection", "reconnecting", "socket closed by the operator&#39;s proxy",
		"<code>0 */2 * * *</code> (UTC)", "Dream: last: never", "/commit/"+f.commit["team2"].SHA,
		"Model llama3.2 is unreachable: its last call failed (connection).", "1,200")

	// A person reads their own scopes' Dream and none of the operator's
	// detail, nor the gateway's tokens, which every audience's
	// conversations and Dream make (as /status in a chat).
	page := f.person(bob).get("/").body
	mustContain(t, page, "llama3.2", "not answering right now", "/commit/"+f.commit["team2"].SHA)
	mustNotContain(t, page, "socket closed", "(connection)", "Tokens used", "1,200")
	page = f.person(ana).get("/").body
	mustContain(t, page, "/commit/"+f.commit["team2"].SHA)
}

func TestMemoryPage(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	c := f.person(ana)
	page := c.get("/memory/" + string(anaScope))
	if page.code != http.StatusOK {
		t.Fatalf("Ana's memory: %d\n%s", page.code, page.body)
	}
	mustContain(t, page.body,
		"Ana&#39;s salary band is "+anaSecret+".", "prio-durable", "2026-11-22",
		fmt.Sprintf(`href="/entries/%s?c=%d"`, anaScope, f.cur["ana"]), // its provenance
		"Cold memory", anaColdSecret, "prio-ephemeral", // cold memory
		`<meter min="0" max="1200"`, "About 600 of 1,200 tokens (50%)") // the gauge
	mustNotContain(t, page.body, "<!--", "src:")

	// A hand-written line is a durable fact of unknown age and source.
	page = f.person(bob).get("/memory/" + string(bobScope))
	mustContain(t, page.body, "Bob wrote this by hand.", "undated")

	// The memory index lists the viewer's scopes; the operator's, all.
	idx := c.get("/memory").body
	mustContain(t, idx, "/memory/"+string(teamScope), "/memory/"+string(anaScope))
	mustNotContain(t, idx, string(bobScope), "/memory/default")
	idx = f.operator().get("/memory").body
	mustContain(t, idx, "/memory/default", "/memory/"+string(teamScope), "/memory/"+string(anaScope), "/memory/"+string(bobScope))
	if got := f.operator().get("/memory/default").body; !strings.Contains(got, "The operator likes green tea.") || !strings.Contains(got, "prio-permanent") {
		t.Errorf("the operator's memory:\n%s", got)
	}
}

func TestEntriesShowWhereALineCameFrom(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	page := f.person(ana).get(fmt.Sprintf("/entries/%s?c=%d", anaScope, f.cur["ana"]))
	if page.code != http.StatusOK {
		t.Fatalf("entries: %d\n%s", page.code, page.body)
	}
	mustContain(t, page.body, fmt.Sprintf("Entry %d", f.cur["ana"]), "slack:DANA", anaSecret)
	mustNotContain(t, page.body, "not shown")

	// A cursor compacted away, or never written, is said to be missing.
	page = f.person(ana).get(fmt.Sprintf("/entries/%s?c=%d,9999", anaScope, f.cur["ana"]))
	mustContain(t, page.body, "1 entry is not shown")
}

func TestTimeline(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	op := f.operator()
	page := op.get("/timeline").body
	for _, name := range []string{"op", "team1", "ana", "bob", "team2", "manual"} {
		mustContain(t, page, "/commit/"+f.commit[name].SHA)
	}
	mustContain(t, page, "hand edit", "setup", "Dream")

	// Filters: Dreams only, one scope.
	page = op.get("/timeline?kind=manual").body
	mustContain(t, page, "/commit/"+f.commit["manual"].SHA)
	mustNotContain(t, page, "/commit/"+f.commit["team2"].SHA)
	page = op.get("/timeline?kind=dream&scope=" + string(teamScope)).body
	mustContain(t, page, "/commit/"+f.commit["team1"].SHA, "/commit/"+f.commit["team2"].SHA)
	mustNotContain(t, page, "/commit/"+f.commit["ana"].SHA, "/commit/"+f.commit["manual"].SHA)
	if res := op.get("/timeline?kind=everything"); res.code != http.StatusNotFound {
		t.Errorf("an unknown kind: %d", res.code)
	}
}

// Paging walks the whole history a page at a time, each commit once.
func TestTimelinePages(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	for i := range 2 * timelinePageSize {
		f.write(fmt.Sprintf("scopes/team-slack-t1/memory/MEMORY.md"), fmt.Sprintf("# Memory\n\n- fact %d\n", i))
		if _, err := f.repo.Commit(fmt.Sprintf("dream: 1 change from history %d-%d", 100+i, 100+i), ""); err != nil {
			t.Fatal(err)
		}
	}
	all, err := f.repo.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	op := f.operator()
	seen := map[string]bool{}
	next, pages := "/timeline", 0
	for next != "" && pages < 10 {
		page := op.get(next).body
		pages++
		for _, l := range links(page) {
			if sha, ok := strings.CutPrefix(l, "/commit/"); ok {
				if seen[sha] {
					t.Errorf("%s listed twice", sha)
				}
				seen[sha] = true
			}
		}
		next = ""
		for _, l := range links(page) {
			if strings.Contains(l, "before=") {
				next = l
			}
		}
	}
	if len(seen) != len(all) || pages != (len(all)+timelinePageSize-1)/timelinePageSize {
		t.Errorf("%d pages listed %d commits; the history has %d", pages, len(seen), len(all))
	}
}

func (f *fixture) write(rel, text string) {
	f.t.Helper()
	writeFile(f.t, f.dir, rel, text)
}

func TestCommitPage(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, admins: []string{"slack:UBOB"}})
	team2 := f.commit["team2"]
	page := f.person(bob).get("/commit/" + team2.SHA).body
	mustContain(t, page, team2.Subject, `class="add">+- Standup is at 10.`, "scopes/team-slack-t1/memory/MEMORY.md",
		"/restore/"+team2.SHA) // Bob is an admin
	mustNotContain(t, page, "Scope: team") // the body is the operator's
	page = f.person(ana).get("/commit/" + team2.SHA).body
	mustNotContain(t, page, "/restore/") // Ana is not
	page = f.operator().get("/commit/" + f.commit["ana"].SHA).body
	mustContain(t, page, anaBodySecret, "/restore/"+f.commit["ana"].SHA)
	// A hand edit can be undone too; a scope's first files cannot.
	mustContain(t, f.operator().get("/commit/"+f.commit["manual"].SHA).body, "/restore/"+f.commit["manual"].SHA)
	mustNotContain(t, f.operator().get("/commit/"+f.commit["init "+string(teamScope)].SHA).body, "/restore/")
}

func TestSearchPage(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	page := f.person(ana).get("/search?q=salary+band").body
	mustContain(t, page, anaSecret, fmt.Sprintf("/entries/%s?c=%d", anaScope, f.cur["ana"]))
	page = f.person(ana).get("/search?q=desk").body
	mustContain(t, page, anaColdSecret, "/memory/"+string(anaScope)+"?cold=1#memory-COLD-md-L1")
	page = f.person(ana).get("/search?q=fridays&scope=" + string(teamScope)).body
	mustContain(t, page, "The team ships on Fridays.")
}

// Every answer carries the security headers, and no page holds the token
// or the signing key.
func TestSecurityHeadersAndNoSecrets(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	op := f.operator()
	for _, p := range []string{"/", "/memory/default", "/timeline", "/commit/" + f.commit["ana"].SHA, "/restore/" + f.commit["ana"].SHA,
		"/search?q=tea", "/signin", "/static/style.css", "/memory/nobody"} {
		res := op.get(p)
		h := res.header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
			"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
			if h.Get(k) != v {
				t.Errorf("%s: %s = %q", p, k, h.Get(k))
			}
		}
		mustNotContain(t, res.body, opToken, "a test key that is 32 bytes long", "<script")
	}
	// The sign-in link's value is kept in a cookie, not in the page.
	link, _ := f.srv.SignInLink(ana)
	_, value, _ := strings.Cut(link, "link=")
	page := f.anonymous().get("/signin?link=" + value)
	mustNotContain(t, page.body, value)
	mustContain(t, page.body, "slack user UANA")
}

// A commit body's fenced diff is left out of the page, which shows the
// diff itself; the rest of the body stays.
func TestCommitBodyWithoutDiff(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"USER.md: +1 -0\n1 file changed, 1 insertion(+)\n\n```diff\n+- a\n```\nScope: team-slack-t1",
			"USER.md: +1 -0\n1 file changed, 1 insertion(+)\n\nScope: team-slack-t1"},
		{"a: +1 -0\n\n````diff\n+```go\n+x\n+```\n````", "a: +1 -0"},
		{"Asked for on the memory page by the operator.", "Asked for on the memory page by the operator."},
		{"```diff\n+- never closed", "```diff\n+- never closed"},
	} {
		if got := withoutDiff(c.body); got != c.want {
			t.Errorf("withoutDiff(%q) = %q, want %q", c.body, got, c.want)
		}
	}
}

// Cold memory is shown a page of coldPageLines at a time, each line with
// its number in the file, its priority and date; a page past the last
// shows the last.
func TestColdMemoryPages(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	var cold strings.Builder
	for i := 1; i <= 2*coldPageLines+50; i++ {
		fmt.Fprintf(&cold, "- Old team fact %d. <!-- ephemeral 2025-03-%02d src:1 -->\r\n", i, 1+i%28)
	}
	writeFile(t, f.dir, teamScope.Dir()+"/memory/COLD.md", cold.String())
	c := f.operator()
	for _, q := range []string{"3", "99"} {
		page := c.get("/memory/" + string(teamScope) + "?cold=" + q).body
		last := 2*coldPageLines + 50
		mustContain(t, page, "Page 3 of 3", `id="memory-COLD-md-L401"`, "Old team fact 401.", fmt.Sprintf("Old team fact %d.", last),
			fmt.Sprintf(`id="memory-COLD-md-L%d"`, last), "prio-ephemeral", fmt.Sprintf("2025-03-%02d", 1+last%28), "earlier lines")
		mustNotContain(t, page, "Old team fact 400.", "later lines", "<!--")
	}
	page := c.get("/memory/" + string(teamScope) + "?cold=2").body
	mustContain(t, page, "Page 2 of 3", `id="memory-COLD-md-L201"`, "Old team fact 201.", "Old team fact 400.", "earlier lines", "later lines")
	mustNotContain(t, page, "Old team fact 200.", "Old team fact 401.")
}

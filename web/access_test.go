package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

// Bob, an admin in Ana's team, tries every way into Ana's DM scope he can
// think of: her scope's name in every URL that takes one, her commit's sha
// in every URL that takes one, her history cursors, a search for her
// secrets, and every link of every page he may see. Each answer is the
// one for something that does not exist, and no answer holds her secrets.
func TestAPersonsScopeIsNeverShownToAnother(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, admins: []string{"slack:UBOB"}})
	anaCommit := f.commit["ana"].SHA
	secrets := []string{anaSecret, anaColdSecret, anaBodySecret, string(anaScope), anaCommit, anaCommit[:8], "slack:DANA"}

	for _, who := range []audience.Audience{bob, eve} {
		c := f.person(who)
		notFound := c.get("/memory/person-slack-t1-unobody") // a scope that does not exist
		if notFound.code != http.StatusNotFound {
			t.Fatalf("a scope that does not exist: %d", notFound.code)
		}
		unknownCommit := c.get("/commit/" + strings.Repeat("ab", 20))
		for _, p := range []string{
			"/memory/" + string(anaScope),
			"/memory/" + string(anaScope) + "?cold=1",
			fmt.Sprintf("/entries/%s?c=%d,%d", anaScope, f.cur["ana"], f.cur["anacold"]),
			"/timeline?scope=" + string(anaScope),
			"/timeline?before=" + anaCommit,
			"/search?q=salary&scope=" + string(anaScope),
			"/commit/" + anaCommit,
			"/commit/" + anaCommit[:8], // a prefix: never resolved
			"/commit/" + strings.ToUpper(anaCommit),
			"/restore/" + anaCommit,
			"/memory/..%2f..%2fUSER.md", "/memory/%2e%2e", "/memory/scopes%2f" + string(anaScope),
		} {
			res := c.get(p)
			want := http.StatusNotFound
			if strings.HasPrefix(p, "/restore/") && who == eve {
				want = http.StatusForbidden // not an admin: told so before anything is looked up
			}
			if res.code != want {
				t.Errorf("%s: %s answered %d, want %d", who, p, res.code, want)
			}
			mustNotContain(t, res.body, secrets...)
		}
		// The same words as for a commit that does not exist.
		if res := c.get("/commit/" + anaCommit); res.body != unknownCommit.body {
			t.Errorf("%s: Ana's commit does not read as an unknown one", who)
		}
		if res := c.post("/restore/"+anaCommit, url.Values{"csrf": {csrfOf(t, c)}, "expect": {"x"}}); res.code != http.StatusNotFound && res.code != http.StatusForbidden {
			t.Errorf("%s: a restore of Ana's commit answered %d", who, res.code)
		}
		// Entries of Ana's asked for under a scope Bob reads are not shown.
		res := c.get(fmt.Sprintf("/entries/%s?c=%d,%d", teamScope, f.cur["ana"], f.cur["anacold"]))
		mustNotContain(t, res.body, secrets...)
		// Searches for her words, in his scopes and with hostile syntax.
		for _, q := range []string{"salary band", anaSecret, "desk " + anaColdSecret, `scope:` + string(anaScope) + ` salary`, "* OR salary"} {
			res := c.get("/search?q=" + url.QueryEscape(q))
			// The query is shown back in its box: what the page found is
			// the rest.
			found := searchValueRe.ReplaceAllString(res.body, "")
			mustNotContain(t, found, secrets...)
			mustContain(t, found, "Nothing found.")
		}
		// Every link of every page he can reach, followed.
		crawl(t, c, secrets)
	}
	// The search was never asked about a scope Bob or Eve may not read.
	for _, scopes := range f.search.asked {
		if slices.Contains(scopes, anaScope) && !slices.Contains(scopes, audience.Default) {
			// Ana's own searches (none here) would; Bob's and Eve's never.
			t.Errorf("a search was given Ana's scope: %q", scopes)
		}
	}
	// Eve's team is another Slack workspace: not even the team's scope.
	if res := f.person(eve).get("/memory/" + string(teamScope)); res.code != http.StatusNotFound {
		t.Errorf("a person of another workspace read the team's memory: %d", res.code)
	}
	// And Ana still reads all of it.
	page := f.person(ana).get("/memory/" + string(anaScope)).body
	mustContain(t, page, anaSecret, anaColdSecret)
	// As a guest of the workspace (or a person of another organisation)
	// her link reads what her DM then reads: her own memory, never the
	// team's.
	guest := f.person(audience.Audience{Kind: audience.Guest, Platform: "slack", Team: "T1", Person: "UANA"})
	mustContain(t, guest.get("/memory/"+string(anaScope)).body, anaSecret)
	if res := guest.get("/memory/" + string(teamScope)); res.code != http.StatusNotFound {
		t.Errorf("a guest read the team's memory: %d", res.code)
	}
}

// crawl follows every link of the pages c can reach from the overview,
// breadth first, and fails when a page holds one of secrets.
func crawl(t *testing.T, c *client, secrets []string) {
	t.Helper()
	seen := map[string]bool{"/": true}
	queue := []string{"/"}
	for len(queue) > 0 && len(seen) < 200 {
		p := queue[0]
		queue = queue[1:]
		res := c.get(p)
		for _, s := range secrets {
			if strings.Contains(res.body, s) {
				t.Errorf("%s: %s holds %q", c.name, p, s)
			}
		}
		for _, l := range links(res.body) {
			l, _, _ = strings.Cut(l, "#")
			if !seen[l] && !strings.HasPrefix(l, "/static/") {
				seen[l] = true
				queue = append(queue, l)
			}
		}
	}
	if len(seen) < 8 {
		t.Errorf("%s: the crawl saw only %d pages: %v", c.name, len(seen), seen)
	}
}

var searchValueRe = regexp.MustCompile(`name="q" value="[^"]*"`)

func csrfOf(t *testing.T, c *client) string {
	t.Helper()
	return formValue(t, csrfRe, c.get("/").body)
}

// A restore asks first, naming every file and line it changes; the form
// is refused without its token, with another session's, from another
// site, and when the memory changed since it was shown; then the restore
// is a commit that says it came from this page, and the later Dream's line
// and the hand edit stay.
func TestRestoreConfirmsAndIsProtected(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, admins: []string{"slack:UBOB"}})
	team1, team2 := f.commit["team1"], f.commit["team2"]
	bobC := f.person(bob)
	confirm := bobC.get("/restore/" + team1.SHA)
	if confirm.code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", confirm.code, confirm.body)
	}
	// It names the file and the lines that go; the later Dream of the same
	// file and the hand edit of SOUL.md are not undone, nor named.
	mustContain(t, confirm.body, "scopes/team-slack-t1/memory/MEMORY.md", `<span class="del">-- The team ships on Fridays.`, "Undo it</button>")
	mustNotContain(t, confirm.body, "/commit/"+team2.SHA, "/commit/"+f.commit["manual"].SHA, `value="all"`)
	token, expect := formValue(t, csrfRe, confirm.body), formValue(t, expectRe, confirm.body)
	path := "/restore/" + team1.SHA
	checkRefusedRestores(t, f, bobC, path, token, expect)

	// Ana is no admin: she is told so, and cannot post either.
	anaC := f.person(ana)
	if res := anaC.get(path); res.code != http.StatusForbidden || !strings.Contains(res.body, "for admins") {
		t.Errorf("Ana's confirmation: %d", res.code)
	}
	if res := anaC.post(path, url.Values{"csrf": {csrfOf(t, anaC)}, "expect": {expect}}); res.code != http.StatusForbidden {
		t.Errorf("Ana's restore: %d", res.code)
	}

	// The memory changes after the confirmation: the new plan is shown.
	f.write("scopes/team-slack-t1/USER.md", "# Users\n\n- edited by hand\n")
	res := bobC.post(path, url.Values{"csrf": {token}, "expect": {expect}})
	if res.code != http.StatusConflict || !strings.Contains(res.body, "The memory changed") || !strings.Contains(res.body, "edits made by hand") {
		t.Fatalf("a stale confirmation: %d\n%s", res.code, res.body)
	}
	expect = formValue(t, expectRe, res.body)
	res = bobC.post(path, url.Values{"csrf": {token}, "expect": {expect}})
	if res.code != http.StatusSeeOther {
		t.Fatalf("restore: %d\n%s", res.code, res.body)
	}
	loc := res.header.Get("Location")
	checkRestoreCommit(t, f, bobC, loc, team1)
	// Once done, doing it again has nothing to undo.
	again := bobC.get(path)
	if again.code != http.StatusConflict || !strings.Contains(again.body, "changes nothing now") {
		t.Errorf("a second confirmation: %d", again.code)
	}
}

// checkRefusedRestores posts Bob's confirmed restore in every way it must be
// refused, then checks that none of them changed the memory.
func checkRefusedRestores(t *testing.T, f *fixture, bobC *client, path, token, expect string) {
	t.Helper()
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers map[string]string
	}{
		{"no token", url.Values{"expect": {expect}}, nil},
		{"a wrong token", url.Values{"csrf": {"AAAA" + token[4:]}, "expect": {expect}}, nil},
		{"another session's token", url.Values{"csrf": {csrfOf(t, f.person(bob))}, "expect": {expect}}, nil},
		{"from another site", url.Values{"csrf": {token}, "expect": {expect}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"from another origin", url.Values{"csrf": {token}, "expect": {expect}}, map[string]string{"Origin": "https://evil.example"}},
	} {
		h := map[string]string{"Origin": f.http.URL, "Sec-Fetch-Site": "same-origin"}
		if tc.headers != nil {
			h = tc.headers
		}
		if res := bobC.postWith(path, tc.form, h); res.code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", tc.name, res.code)
		}
	}
	// Not signed in at all.
	if res := f.anonymous().post(path, url.Values{"csrf": {token}, "expect": {expect}}); res.code != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", res.code)
	}
	if log, _ := f.repo.Log(1, "", nil); log[0].SHA != f.commit["manual"].SHA {
		t.Fatalf("a refused form changed the memory: %s", log[0].Subject)
	}
}

// checkRestoreCommit checks the commit Bob's restore made, at loc, and
// what it left on disk.
func checkRestoreCommit(t *testing.T, f *fixture, bobC *client, loc string, team1 gitstore.Commit) {
	t.Helper()
	revertSHA := strings.TrimSuffix(strings.TrimPrefix(loc, "/commit/"), "?restored=1")
	full, d, err := f.repo.Show(revertSHA, nil)
	if err != nil || !strings.HasPrefix(full.Subject, "revert: undo "+team1.Short) {
		t.Fatalf("the restore commit: %+v, %v", full, err)
	}
	if !strings.Contains(full.Body, "Asked for on the memory page by slack user UBOB.") {
		t.Errorf("the restore commit does not say where it came from:\n%s", full.Body)
	}
	for _, fc := range d.Files {
		if !strings.HasPrefix(fc.Path, "scopes/team-slack-t1/") {
			t.Errorf("the team's restore changed %s", fc.Path)
		}
	}
	page := bobC.get(loc).body
	mustContain(t, page, "Undone: this commit took out the lines")
	if got := readFile(t, f.dir, "scopes/team-slack-t1/memory/MEMORY.md"); got != "# Memory\n- Standup is at 10. <!-- ephemeral 2026-11-23 src:6 -->\n" {
		t.Errorf("the team's MEMORY.md after the restore: %q", got)
	}
	if got := readFile(t, f.dir, anaScope.Dir()+"/USER.md"); !strings.Contains(got, anaSecret) {
		t.Error("the team's restore touched Ana's files")
	}
}

func TestSignIn(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	checkTokenSignIn(t, f)

	// A link: tampered, expired, or a session's value used as a link.
	link, _ := f.srv.SignInLink(ana)
	_, value, _ := strings.Cut(link, "link=")
	payload, sig, _ := strings.Cut(value, ".")
	bobLink, _ := f.srv.SignInLink(bob)
	_, bobValue, _ := strings.Cut(bobLink, "link=")
	bobPayload, _, _ := strings.Cut(bobValue, ".")
	op := f.operator()
	session := sessionCookieOf(t, f, op)
	for name, v := range map[string]string{
		"Bob's payload with Ana's signature": bobPayload + "." + sig,
		"no signature":                       payload,
		"a session as a link":                session,
	} {
		if res := f.anonymous().get("/signin?link=" + v); res.code != http.StatusUnauthorized {
			t.Errorf("%s: %d", name, res.code)
		}
	}
	later := f.srv
	later.cfg.Now = func() time.Time { return time.Now().Add(DefaultLinkTTL + time.Minute) }
	if res := f.anonymous().get("/signin?link=" + value); res.code != http.StatusUnauthorized {
		t.Errorf("an expired link: %d", res.code)
	}
	later.cfg.Now = time.Now
	checkLinkAfterRestart(t, f, value)
	// A link as a session cookie is refused too.
	jar := f.anonymous()
	u, _ := url.Parse(f.http.URL)
	jar.c.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: value}})
	if res := jar.get("/"); res.code != http.StatusSeeOther {
		t.Errorf("a link used as a session: %d", res.code)
	}
	// The post without the page's cookie signs nobody in.
	if res := f.anonymous().post("/signin", url.Values{"link": {"1"}}); res.code != http.StatusUnauthorized {
		t.Errorf("a link post without the link: %d", res.code)
	}
	if _, err := f.srv.SignInLink(audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}); err == nil {
		t.Error("a link for a channel's audience")
	}

	// A new token ends the old token's sessions.
	f.srv.cfg.Token = "a-new-token"
	if res := op.get("/"); res.code != http.StatusSeeOther {
		t.Errorf("a session of the old token: %d", res.code)
	}
	f.srv.cfg.Token = opToken

	// Signing out ends the session.
	c := f.person(ana)
	if res := c.post("/signout", url.Values{"csrf": {csrfOf(t, c)}}); res.code != http.StatusSeeOther {
		t.Errorf("sign out: %d", res.code)
	}
	if res := c.get("/"); res.code != http.StatusSeeOther {
		t.Errorf("after sign out: %d", res.code)
	}
}

// checkTokenSignIn signs in with the token, on the form and as a bearer
// header, rightly and wrongly.
func checkTokenSignIn(t *testing.T, f *fixture) {
	t.Helper()
	anon := f.anonymous()
	if res := anon.get("/"); res.code != http.StatusSeeOther || res.header.Get("Location") != "/signin" {
		t.Errorf("anonymous overview: %d %s", res.code, res.header.Get("Location"))
	}
	if res := anon.post("/signin", url.Values{"token": {"wrong"}}); res.code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", res.code)
	}
	if res := anon.postWith("/signin", url.Values{"token": {opToken}}, map[string]string{"Origin": "https://evil.example"}); res.code != http.StatusForbidden {
		t.Errorf("a sign-in posted from another site: %d", res.code)
	}
	// The token as a bearer header, for scripts.
	bearer := f.anonymous()
	bearer.bearer = opToken
	if res := bearer.get("/memory/default"); res.code != http.StatusOK {
		t.Errorf("bearer: %d", res.code)
	}
	bearer.bearer = "wrong"
	if res := bearer.get("/memory/default"); res.code != http.StatusSeeOther {
		t.Errorf("a wrong bearer: %d", res.code)
	}
}

// checkLinkAfterRestart checks value, Ana's link made before a restart,
// against a server restarted with the same key.
func checkLinkAfterRestart(t *testing.T, f *fixture, value string) {
	t.Helper()
	// After a restart (another server with the same key), a link made
	// before it is refused: the used links died with the old process.
	restarted, err := New(func() Config {
		c := f.srv.cfg
		c.Now = func() time.Time { return time.Now().Add(time.Minute) }
		return c
	}(), f.srv.deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := restarted.readLink(value); err == nil {
		t.Error("a link made before a restart signs in after it")
	}
	fresh, _ := restarted.SignInLink(ana)
	_, freshValue, _ := strings.Cut(fresh, "link=")
	if _, _, err := restarted.readLink(freshValue); err != nil {
		t.Errorf("a link made after the restart: %v", err)
	}
}

func sessionCookieOf(t *testing.T, f *fixture, c *client) string {
	t.Helper()
	u, _ := url.Parse(f.http.URL)
	for _, ck := range c.c.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			return ck.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// Without a token the page still takes nobody for the operator without a
// secret: not a request from this machine, not one naming another host,
// not one through a proxy that says so or one that does not. The operator
// signs in with a one-time link made with the page's key (what `dreamgate
// web-link` prints); a person with their /web-link, as with a token.
func TestNoTokenNeedsALink(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	c := f.anonymous()
	for name, h := range map[string][2]string{
		"this machine":  {"", ""},
		"DNS rebinding": {"Host", "evil.example:80"},
		"a proxy":       {"X-Forwarded-For", "203.0.113.9"},
		"Forwarded":     {"Forwarded", "for=203.0.113.9"},
	} {
		req, _ := http.NewRequest(http.MethodGet, f.http.URL+"/memory/"+string(anaScope), nil)
		switch h[0] {
		case "":
		case "Host":
			req.Host = h[1]
		default:
			req.Header.Set(h[0], h[1])
		}
		res := c.do(req)
		if res.code != http.StatusSeeOther || res.header.Get("Location") != "/signin" || strings.Contains(res.body, anaSecret) {
			t.Errorf("%s: %d %q", name, res.code, res.header.Get("Location"))
		}
	}
	if res := c.post("/restore/"+f.commit["team2"].SHA, url.Values{"csrf": {"x"}}); res.code != http.StatusUnauthorized {
		t.Errorf("a restore posted by nobody signed in: %d", res.code)
	}
	page := c.get("/signin")
	mustContain(t, page.body, "dreamgate web-link", "/web-link")
	mustNotContain(t, page.body, `name="token"`)
	for _, token := range []string{"", "anything"} {
		if res := c.post("/signin", url.Values{"token": {token}}); res.code != http.StatusUnauthorized {
			t.Errorf("the token %q without web.token: %d", token, res.code)
		}
	}
	// The operator's link: the page it opens says whom it signs in; it
	// signs in once.
	op := f.operatorByLink()
	if res := op.get("/memory/" + string(anaScope)); res.code != http.StatusOK || !strings.Contains(res.body, anaSecret) {
		t.Errorf("the operator signed in by a link: %d", res.code)
	}
	mustContain(t, op.get("/").body, "operator · admin", "Sign out")
	// A person's link works without a token too.
	if res := f.person(bob).get("/memory/" + string(anaScope)); res.code != http.StatusNotFound {
		t.Errorf("Bob reads Ana's memory: %d", res.code)
	}
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:80": true, "localhost:1": true,
		"0.0.0.0:8080": false, ":8080": false, "192.168.1.4:80": false, "[::]:80": false, "example.com:80": false} {
		if LoopbackAddr(addr) != want {
			t.Errorf("LoopbackAddr(%q) = %v", addr, !want)
		}
	}
}

// A form's token belongs to its session and changes with time: another
// session's token is refused, a token of the window before is still
// taken, an older one is not, and the page then carries a new one.
func TestFormTokensRotate(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, admins: []string{"slack:UBOB"}})
	now := time.Now()
	f.srv.cfg.Now = func() time.Time { return now }
	bobC, bob2 := f.person(bob), f.person(bob)
	first := csrfOf(t, bobC)
	if other := csrfOf(t, bob2); other == first {
		t.Fatal("two sessions of one person share a form token")
	}
	signOut := func(c *client, token string) int {
		t.Helper()
		return c.post("/signout", url.Values{"csrf": {token}}).code
	}
	if code := signOut(bobC, csrfOf(t, bob2)); code != http.StatusForbidden {
		t.Errorf("another session's token: %d", code)
	}
	now = now.Add(csrfWindow)
	if second := csrfOf(t, bobC); second == first {
		t.Error("the form token did not change after its window")
	}
	now = now.Add(csrfWindow)
	if code := signOut(bobC, first); code != http.StatusForbidden {
		t.Errorf("a token two windows old: %d", code)
	}
	if code := signOut(bobC, csrfOf(t, bobC)); code != http.StatusSeeOther {
		t.Errorf("the current token: %d", code)
	}
	// The window before is still taken (a form opened a little earlier).
	prev := csrfOf(t, bob2)
	now = now.Add(csrfWindow)
	if code := signOut(bob2, prev); code != http.StatusSeeOther {
		t.Errorf("a token of the window before: %d", code)
	}
}

// With memory shared (memory.scoped false) everyone reads the root's
// memory, as in chat — and nothing else.
func TestSharedMemory(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, shared: true})
	c := f.person(bob)
	if res := c.get("/memory/default"); res.code != http.StatusOK || !strings.Contains(res.body, "green tea") {
		t.Errorf("shared memory: %d", res.code)
	}
	if res := c.get("/memory/" + string(teamScope)); res.code != http.StatusNotFound {
		t.Errorf("a scope folder under shared memory: %d", res.code)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	return testkit.ReadFile(t, dir, rel)
}

// A sign-in link signs in once: a second browser that opened it before the
// first signed in is refused at its click, and one that opens it after is
// refused at once; a new link works.
func TestSignInLinkWorksOnce(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	link, err := f.srv.SignInLink(ana)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	first, second := f.anonymous(), f.anonymous()
	for _, c := range []*client{first, second} {
		if res := c.get("/signin?" + u.RawQuery); res.code != http.StatusOK || !strings.Contains(res.body, "slack user UANA") {
			t.Fatalf("the link's page: %d\n%s", res.code, res.body)
		}
	}
	if res := first.post("/signin", url.Values{"link": {"1"}}); res.code != http.StatusSeeOther {
		t.Fatalf("the first sign-in: %d\n%s", res.code, res.body)
	}
	if res := first.get("/memory/" + string(anaScope)); res.code != http.StatusOK {
		t.Errorf("signed in by the link: %d", res.code)
	}
	if res := second.post("/signin", url.Values{"link": {"1"}}); res.code != http.StatusUnauthorized || !strings.Contains(res.body, "used already") {
		t.Errorf("the link's second use: %d\n%s", res.code, res.body)
	}
	if res := second.get("/memory/" + string(anaScope)); res.code != http.StatusSeeOther {
		t.Errorf("the second browser reads Ana's memory: %d", res.code)
	}
	if res := f.anonymous().get("/signin?" + u.RawQuery); res.code != http.StatusUnauthorized {
		t.Errorf("the used link opened again: %d", res.code)
	}
	f.person(ana) // a new link signs in
}

// Behind a proxy the browser's origin is the page's configured URL, not
// the address the page listens on: a form posted from there is the
// page's own, even from a browser that sends Origin without
// Sec-Fetch-Site; one from another site is refused, signing in included.
func TestCrossOriginBehindAProxy(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, baseURL: "https://memory.example.com/", admins: []string{"slack:UBOB"}})
	anon := f.anonymous()
	proxied := map[string]string{"Origin": "https://memory.example.com"}
	if res := anon.postWith("/signin", url.Values{"token": {opToken}}, proxied); res.code != http.StatusSeeOther {
		t.Errorf("signing in through the proxy: %d %s", res.code, res.body)
	}
	c := f.person(bob)
	if res := c.postWith("/signout", url.Values{"csrf": {csrfOf(t, c)}}, proxied); res.code != http.StatusSeeOther {
		t.Errorf("a form posted through the proxy: %d %s", res.code, res.body)
	}
	for name, h := range map[string]map[string]string{
		"another origin":    {"Origin": "https://evil.example"},
		"another site":      {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
		"a same-site other": {"Sec-Fetch-Site": "same-site", "Origin": "https://other.example.com"},
	} {
		if res := f.anonymous().postWith("/signin", url.Values{"token": {opToken}}, h); res.code != http.StatusForbidden {
			t.Errorf("signing in from %s: %d", name, res.code)
		}
	}
}

// Where a later change rewrote a line the commit added, the confirmation
// shows the line now and as it was before, with a button for each choice;
// "undo it whole" takes the later line out too.
func TestRestoreChoosesWhereLaterChangesTouchedTheLines(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken, admins: []string{"slack:UBOB"}})
	team1 := f.commit["team1"]
	mem := "scopes/team-slack-t1/memory/MEMORY.md"
	f.write(mem, strings.Replace(readFile(t, f.dir, mem), "- The team ships on Fridays.", "- The team ships on Thursdays now.", 1))
	if _, err := f.repo.CommitPaths([]string{mem}, "dream: 1 change from history 9-9", "Scope: team-slack-t1"); err != nil {
		t.Fatal(err)
	}
	bobC := f.person(bob)
	confirm := bobC.get("/restore/" + team1.SHA)
	if confirm.code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", confirm.code, confirm.body)
	}
	mustContain(t, confirm.body, "Where later changes touched the same lines", "The team ships on Thursdays now.",
		`value="keep"`, `value="all"`, "Undo it whole")
	token, expect := formValue(t, csrfRe, confirm.body), formValue(t, expectRe, confirm.body)
	res := bobC.post("/restore/"+team1.SHA, url.Values{"csrf": {token}, "expect": {expect}, "resolution": {"all"}})
	if res.code != http.StatusSeeOther {
		t.Fatalf("restore: %d\n%s", res.code, res.body)
	}
	if got := readFile(t, f.dir, mem); strings.Contains(got, "Thursdays") || strings.Contains(got, "Fridays") || !strings.Contains(got, "Standup is at 10.") {
		t.Errorf("MEMORY.md after undoing it whole: %q", got)
	}
}

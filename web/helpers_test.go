package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/workspace"
)

// A workspace of a Slack team with two people: the operator's root, the
// team's scope, Ana's DM scope and Bob's. Each scope's memory lines name
// their history entries; each scope's Dream is a commit of its own. What
// Ana said in her DM carries secrets that must never reach Bob's pages.
var (
	ana = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	bob = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UBOB"}
	// eve is in another Slack workspace altogether.
	eve = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T2", Person: "UEVE"}

	teamScope = audience.Scope("team-slack-t1")
	anaScope  = ana.Home()
	bobScope  = bob.Home()
)

// Secrets planted in Ana's scope: in her memory file, her cold memory, her
// history entries and her Dream commit's message.
const (
	anaSecret     = "SECRETANAK7Q2"
	anaColdSecret = "SECRETANACOLD"
	anaBodySecret = "SECRETANABODY"
	opToken       = "operator-token-Zq8Xw3"
)

type fixture struct {
	t      *testing.T
	dir    string
	srv    *Server
	http   *httptest.Server
	repo   *gitstore.Store
	hist   *history.Store
	dream  *dream.Dreamer
	search *fakeSearch
	// cursors of the history entries, by name.
	cur map[string]int
	// commits by name.
	commit map[string]gitstore.Commit
}

type fixtureOpts struct {
	token string // "" for no token
	// baseURL is the page's configured URL (web.url), "" none.
	baseURL string
	admins  []string
	shared  bool
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: filepath.Join(t.TempDir(), "workspace"), cur: map[string]int{}, commit: map[string]gitstore.Commit{}}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	root, err := workspace.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	f.repo, err = gitstore.Open(f.dir, gitstore.Options{Tracked: workspace.TrackedFiles(), Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir, Files: root})
	if err != nil {
		t.Fatal(err)
	}
	f.hist, err = history.Open(filepath.Join(f.dir, "memory"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.plant()
	f.dream, err = dream.New(dream.Config{Workspace: f.dir}, dream.Deps{Model: noModel{}, History: f.hist, Repo: f.repo, Files: root})
	if err != nil {
		t.Fatal(err)
	}
	f.search = newFakeSearch(f)
	key := make([]byte, 32)
	copy(key, "a test key that is 32 bytes long")
	f.srv, err = New(Config{
		Key: key, Token: o.token, Admins: o.admins, BaseURL: o.baseURL,
		DreamCron: "0 */2 * * *", DreamTimezone: "UTC", Location: time.UTC,
	}, Deps{
		Memory: memory.New(memory.NewDisk(f.dir), o.shared),
		Repo:   f.repo, Dream: f.dream, History: f.hist, Search: f.search,
		Budget: fixedBudget{}, Health: testHealth, Usage: func() map[string]llm.Usage {
			return map[string]llm.Usage{"chat": {PromptTokens: 1200, CompletionTokens: 300, Calls: 4}}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv.Handler())
	t.Cleanup(f.http.Close)
	return f
}

// plant writes the scopes' history entries, memory files and commits.
func (f *fixture) plant() {
	t := f.t
	entry := func(name string, s audience.Scope, content, session string) int {
		e, err := f.hist.AppendIn(s, content, session)
		if err != nil {
			t.Fatal(err)
		}
		f.cur[name] = e.Cursor
		return e.Cursor
	}
	commit := func(name, subject, body string, files map[string]string) {
		var paths []string
		for p, text := range files {
			testkit.WriteFile(t, f.dir, p, text)
			paths = append(paths, p)
		}
		slices.Sort(paths)
		c, err := f.repo.CommitPaths(paths, subject, body)
		if err != nil {
			t.Fatalf("commit %s: %v", name, err)
		}
		f.commit[name] = c
	}
	op := entry("op", audience.Default, "- The operator likes green tea.", "terminal:direct")
	team := entry("team", teamScope, "- The team ships on Fridays.", "slack:C1")
	a := entry("ana", anaScope, "- Ana's salary band is "+anaSecret+".", "slack:DANA")
	aCold := entry("anacold", anaScope, "- Ana's old desk code was "+anaColdSecret+".", "slack:DANA")
	b := entry("bob", bobScope, "- Bob likes hiking.", "slack:DBOB")
	team2 := entry("team2", teamScope, "- Standup is at 10.", "slack:C1")

	commit("op", fmt.Sprintf("dream: 1 change from history %d-%d", op, op), "Changed USER.md", map[string]string{
		"USER.md": "# User\n\n- The operator likes green tea. <!-- permanent 2026-11-20 src:" + fmt.Sprint(op) + " -->\n",
	})
	for _, s := range []audience.Scope{teamScope, anaScope, bobScope} {
		commit("init "+string(s), dream.ScopeCreatedPrefix+string(s), "Scope: "+string(s), map[string]string{
			s.Dir() + "/SOUL.md": "# Soul\n", s.Dir() + "/USER.md": "# Users\n", s.Dir() + "/memory/MEMORY.md": "# Memory\n",
		})
	}
	commit("team1", fmt.Sprintf("dream: 1 change from history %d-%d", team, team), "Scope: "+string(teamScope), map[string]string{
		"scopes/team-slack-t1/memory/MEMORY.md": "# Memory\n\n- The team ships on Fridays. <!-- durable 2026-11-21 src:" + fmt.Sprint(team) + " -->\n",
	})
	commit("ana", fmt.Sprintf("dream: 1 change from history %d-%d", a, a), "Scope: "+string(anaScope)+"\n"+anaBodySecret, map[string]string{
		anaScope.Dir() + "/USER.md":        "# Users\n\n## Ana\n- Ana's salary band is " + anaSecret + ". <!-- durable 2026-11-22 src:" + fmt.Sprint(a) + " -->\n",
		anaScope.Dir() + "/memory/COLD.md": "- Ana's old desk code was " + anaColdSecret + ". <!-- ephemeral 2026-10-01 src:" + fmt.Sprint(aCold) + " -->\n",
	})
	commit("bob", fmt.Sprintf("dream: 1 change from history %d-%d", b, b), "Scope: "+string(bobScope), map[string]string{
		bobScope.Dir() + "/USER.md": "# Users\n\n- Bob likes hiking. <!-- durable src:" + fmt.Sprint(b) + " -->\n- Bob wrote this by hand.\n",
	})
	commit("team2", fmt.Sprintf("dream: 1 change from history %d-%d", team2, team2), "Scope: "+string(teamScope), map[string]string{
		"scopes/team-slack-t1/memory/MEMORY.md": "# Memory\n\n- The team ships on Fridays. <!-- durable 2026-11-21 src:" + fmt.Sprint(team) + " -->\n" +
			"- Standup is at 10. <!-- ephemeral 2026-11-23 src:" + fmt.Sprint(team2) + " -->\n",
	})
	commit("manual", gitstore.ManualSubject, "", map[string]string{
		"scopes/team-slack-t1/SOUL.md": "# Soul\n\nBe brief.\n",
	})
}

// noModel is a model that is never asked: these pages run no Dream.
type noModel struct{}

func (noModel) Chat(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("no model in these tests")
}

// fixedBudget reports a scope half way through its budget.
type fixedBudget struct{}

func (fixedBudget) HotUsage(audience.Scope) gateway.HotUsage {
	return gateway.HotUsage{Tokens: 600, Budget: 1200, Shown: 3, Total: 3}
}

func testHealth() Health {
	return Health{Status: "degraded",
		Models: []ModelHealth{{Name: "llama3.2", State: "unreachable", LastError: "connection", LastErrorAt: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}},
		Channels: []ChannelHealth{{Name: "slack", State: "reconnecting", Detail: "socket closed by the operator's proxy", Since: time.Date(2026, 11, 26, 9, 5, 0, 0, time.UTC)},
			{Name: "terminal", State: "connected"}},
	}
}

// fakeSearch searches the documents of the fixture's scopes for every word
// of a query, within the scopes it is given, as recall's index does; it
// records the scopes each search was given.
type fakeSearch struct {
	mu    sync.Mutex
	docs  []SearchMatch
	asked [][]audience.Scope
}

func newFakeSearch(f *fixture) *fakeSearch {
	entries, err := f.hist.Since(0, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	s := &fakeSearch{}
	for _, e := range entries {
		s.docs = append(s.docs, SearchMatch{Scope: e.Scope, Kind: "history", Cursor: e.Cursor, Conversation: e.SessionKey, Text: e.Content})
	}
	s.docs = append(s.docs, SearchMatch{Scope: anaScope, Kind: "cold", Line: 1, Text: "Ana's old desk code was " + anaColdSecret})
	return s
}

func (s *fakeSearch) Search(_ context.Context, query string, readable []audience.Scope, limit int) (SearchResults, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, slices.Clone(readable))
	words := strings.Fields(strings.ToLower(query))
	var out SearchResults
	for _, d := range s.docs {
		if !slices.Contains(readable, d.Scope) {
			continue
		}
		text := strings.ToLower(d.Text)
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) }) && len(out.Matches) < limit {
			out.Matches = append(out.Matches, d)
		}
	}
	return out, nil
}

// client is a browser: a cookie jar, and who it is for the test's
// messages.
type client struct {
	f    *fixture
	name string
	c    *http.Client
	// bearer, when set, is sent as the Authorization header.
	bearer string
}

func (f *fixture) anonymous() *client {
	jar, _ := cookiejar.New(nil)
	return &client{f: f, name: "anonymous", c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// operator signs in with the token, through the form.
func (f *fixture) operator() *client {
	c := f.anonymous()
	c.name = "operator"
	res := c.post("/signin", url.Values{"token": {opToken}})
	if res.code != http.StatusSeeOther {
		f.t.Fatalf("operator sign-in: %d %s", res.code, res.body)
	}
	return c
}

// operatorByLink signs the operator in with a one-time link, as
// `dreamgate web-link` prints it.
func (f *fixture) operatorByLink() *client {
	f.t.Helper()
	c := f.person(audience.Audience{Kind: audience.Operator})
	c.name = "operator (link)"
	return c
}

// person signs in with the link /web-link would send a.
func (f *fixture) person(a audience.Audience) *client {
	f.t.Helper()
	c := f.anonymous()
	c.name = a.String()
	link, err := f.srv.SignInLink(a)
	if err != nil {
		f.t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil {
		f.t.Fatal(err)
	}
	if res := c.get("/signin?" + u.RawQuery); res.code != http.StatusOK {
		f.t.Fatalf("sign-in page for %s: %d %s", a, res.code, res.body)
	}
	if res := c.post("/signin", url.Values{"link": {"1"}}); res.code != http.StatusSeeOther {
		f.t.Fatalf("sign-in of %s: %d %s", a, res.code, res.body)
	}
	return c
}

type response struct {
	code   int
	body   string
	header http.Header
}

func (c *client) do(req *http.Request) response {
	c.f.t.Helper()
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	res, err := c.c.Do(req)
	if err != nil {
		c.f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{code: res.StatusCode, body: string(b), header: res.Header}
}

func (c *client) get(path string) response {
	c.f.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.f.http.URL+path, nil)
	if err != nil {
		c.f.t.Fatal(err)
	}
	return c.do(req)
}

// post sends a form as our own page would: same-origin.
func (c *client) post(path string, form url.Values) response {
	c.f.t.Helper()
	return c.postWith(path, form, map[string]string{"Origin": c.f.http.URL, "Sec-Fetch-Site": "same-origin"})
}

func (c *client) postWith(path string, form url.Values, headers map[string]string) response {
	c.f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.f.http.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		c.f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return c.do(req)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
var expectRe = regexp.MustCompile(`name="expect" value="([^"]+)"`)

// formValue reads a hidden field's value from a page.
func formValue(t *testing.T, re *regexp.Regexp, page string) string {
	t.Helper()
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s in the page:\n%s", re, page)
	}
	return m[1]
}

var hrefRe = regexp.MustCompile(`href="(/[^"]*)"`)

// links are the page's own links, unescaped.
func links(page string) []string {
	var out []string
	for _, m := range hrefRe.FindAllStringSubmatch(page, -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}

func writeFile(t *testing.T, dir, rel, text string) {
	t.Helper()
	testkit.WriteFile(t, dir, rel, text)
}

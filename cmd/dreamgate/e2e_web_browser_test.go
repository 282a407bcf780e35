package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// webScreenshots, when set (make screenshots), is the folder the browser
// test writes its pictures of the pages into: docs/img for the docs.
var webScreenshots = flag.String("web-screenshots", "", "write PNG screenshots of the memory page into this folder (TestWebPageInABrowser)")

// browserNames are the commands a Chrome is installed as: Debian's
// chromium first (.ci/run installs it).
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// findBrowser is the browser the page test drives: DREAMGATE_BROWSER when
// set, else the first of browserNames on PATH.
func findBrowser() (string, bool) {
	if p := os.Getenv("DREAMGATE_BROWSER"); p != "" {
		return p, true
	}
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, true
		}
	}
	return "", false
}

// The memory page in a real browser, served by the binary: the operator
// signs in with the token, reads the overview, reads a line Dream wrote on
// the memory page, follows its provenance link to the conversation it came
// from, finds what was said with the search, opens that Dream's diff on the
// timeline and undoes it; the
// confirmation names the file and the lines that go, the later Dream's
// line stays, and the restore is a commit on disk that says it came from
// the page.
func TestWebPageInABrowser(t *testing.T) {
	browser, ok := findBrowser()
	if !ok {
		t.Skipf("no headless browser to drive: none of %s is on PATH (.ci/run installs Debian's chromium; DREAMGATE_BROWSER may name another Chrome)", strings.Join(browserNames, ", "))
	}
	h := newHarness(t)
	userMD := func() []byte { return readMemoryFile(t, h.ws, "USER.md") }

	// Two conversations, each archived by /new and dreamed into USER.md:
	// the first Dream's restore takes its lines out and leaves the
	// second's.
	converse := func(said, summary string, dreamed ...llmtest.Reply) {
		t.Helper()
		h.llm.Push(llmtest.Text("Noted."), llmtest.Text(summary))
		for _, m := range []string{said, "/new"} {
			if r := h.run("chat", "-m", m); r.code != 0 {
				t.Fatalf("chat %q: exit %d\n%s", m, r.code, r.stderr)
			}
		}
		h.llm.Push(dreamed...)
		if r := h.run("dream", "run"); r.code != 0 {
			t.Fatalf("dream run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	converse("I prefer tea over coffee, and I answer email only in the mornings.",
		"- The user prefers tea over coffee.\n- The user answers email only in the mornings.",
		llmtest.Text("[USER] prefers tea over coffee\n[USER] answers email only in the mornings"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## Preferences\n","new_text":"## Preferences\n- Prefers tea over coffee.\n- Answers email only in the mornings.\n"}`),
		llmtest.Text("Added two preferences to USER.md."))
	converse("I moved to Lisbon last month.",
		"- The user moved to Lisbon last month.",
		llmtest.Text("[USER] lives in Lisbon"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## People\n","new_text":"## People\n- The user lives in Lisbon (moved there in 2026).\n"}`),
		llmtest.Text("Added where the user lives to USER.md."))
	if b := userMD(); !strings.Contains(string(b), "- Prefers tea over coffee. <!--") {
		t.Fatalf("Dream did not write the dated line:\n%s", b)
	}
	// A team's scope the operator reads too, with one unread entry: the
	// pages list every scope for the operator.
	teamFacts(t, h)

	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	h.set("web.token", testWebToken)
	p := h.startGateway(t)
	base := "http://" + addr
	waitWeb(t, p, base)

	b := newBrowser(t, browser)
	b.do("sign in",
		chromedp.Navigate(base+"/signin"),
		chromedp.SendKeys(chromedp.ID("token"), testWebToken))
	b.follow("the sign-in form", chromedp.Submit(chromedp.ID("token")))
	overview := text(b, chromedp.CSS("main"))
	for _, want := range []string{"test-model", "Dream", "Backlog", "Newest Dream commit", "1 entry read, 1 change", "1 unread history entry"} {
		if !strings.Contains(overview, want) {
			t.Errorf("the overview lacks %q:\n%s", want, overview)
		}
	}
	b.shot("overview")

	browseMemory(t, b)
	browseSearch(t, b)
	browseTimelineRestore(t, b, h, userMD)
}

// browseMemory reads, on the memory page, the line Dream wrote and follows
// its provenance link (TestWebPageInABrowser).
func browseMemory(t *testing.T, b *browser) {
	t.Helper()
	b.follow("the Memory tab", chromedp.Click(chromedp.CSS(`nav a[href="/memory"]`)))
	b.follow("the default scope", chromedp.Click(chromedp.CSS(`main a[href="/memory/default"]`)))
	const fact = `//p[contains(@class,"fact")][span[@class="text"][contains(.,"Prefers tea over coffee.")]]`
	line := text(b, chromedp.Search(fact))
	for _, want := range []string{"Prefers tea over coffee.", "durable", "1 source"} {
		if !strings.Contains(line, want) {
			t.Errorf("the memory line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "<!--") {
		t.Errorf("the memory line shows its raw comment: %q", line)
	}
	b.shot("memory")

	b.follow("the line's provenance link", chromedp.Click(chromedp.Search(fact+`//a[@class="src"]`)))
	came := text(b, chromedp.CSS("main"))
	for _, want := range []string{"Where this came from", "The user prefers tea over coffee.", "terminal:"} {
		if !strings.Contains(came, want) {
			t.Errorf("the provenance page lacks %q:\n%s", want, came)
		}
	}
	if strings.Contains(came, "Lisbon") {
		t.Errorf("the provenance page shows an entry the line did not come from:\n%s", came)
	}
	b.shot("provenance")

}

// browseSearch finds what was said with the page's search
// (TestWebPageInABrowser).
func browseSearch(t *testing.T, b *browser) {
	t.Helper()
	// Search is the recall index, built at the first search: until it
	// has the archive, the page says so and the search is asked again.
	b.follow("the Search tab", chromedp.Click(chromedp.CSS(`nav a[href="/search"]`)))
	b.do("type a search", chromedp.SendKeys(chromedp.CSS(`input[name="q"]`), "tea coffee"))
	b.follow("the search", chromedp.Submit(chromedp.CSS(`input[name="q"]`)))
	for deadline := time.Now().Add(time.Minute); ; {
		found := text(b, chromedp.CSS("main"))
		if strings.Contains(found, "prefers tea over coffee") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the search found nothing:\n%s", found)
		}
		time.Sleep(100 * time.Millisecond)
		b.follow("the search again", chromedp.Reload())
	}
	b.shot("search")

}

// browseTimelineRestore opens the first Dream's diff on the timeline and
// undoes it from the page: the confirmation names the file and the lines
// that go, the later Dream's line stays, and the restore is a commit that
// says it came from the page (TestWebPageInABrowser).
func browseTimelineRestore(t *testing.T, b *browser, h *harness, userMD func() []byte) {
	t.Helper()
	b.follow("the Timeline tab", chromedp.Click(chromedp.CSS(`nav a[href="/timeline"]`)))
	timeline := text(b, chromedp.CSS("main"))
	if strings.Count(timeline, "dream: ") != 2 {
		t.Errorf("the timeline does not list both Dreams:\n%s", timeline)
	}
	b.shot("timeline")
	// The older Dream is the last of them, newest first.
	const first = `(//table[contains(@class,"timeline")]//a[starts-with(.,"dream: ")])[last()]`
	b.follow("the first Dream's commit", chromedp.Click(chromedp.Search(first)))
	diff := text(b, chromedp.CSS("pre.diff"))
	if !strings.Contains(diff, "+- Prefers tea over coffee.") || strings.Contains(diff, "Lisbon") {
		t.Errorf("the first Dream's diff:\n%s", diff)
	}
	b.shot("commit")

	b.follow("Undo this change", chromedp.Click(chromedp.CSS(`a.button[href^="/restore/"]`)))
	confirm := text(b, chromedp.CSS("main"))
	if !strings.Contains(confirm, "USER.md") || !strings.Contains(confirm, "-- Prefers tea over coffee.") || strings.Contains(confirm, "Lisbon") {
		t.Errorf("the confirmation does not name the file and the lines that go, alone:\n%s", confirm)
	}
	b.shot("restore")
	if b := userMD(); !strings.Contains(string(b), "Prefers tea") {
		t.Fatal("the confirmation page changed USER.md")
	}

	b.follow("Undo it", chromedp.Click(chromedp.CSS("button.danger")))
	done := text(b, chromedp.CSS("main"))
	if !strings.Contains(done, "Undone") || !strings.Contains(done, "revert: undo") || !strings.Contains(done, "Asked for on the memory page by the operator") {
		t.Errorf("after the restore:\n%s", done)
	}
	after := userMD()
	if strings.Contains(string(after), "Prefers tea") || !strings.Contains(string(after), "Lisbon") {
		t.Errorf("USER.md after the restore holds the first Dream's lines, or lost the second's:\n%s", after)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git not installed; skipping the git command-line checks (.ci/run installs it)")
		return
	}
	repoDir, _, err := memoryRepoDir(h.ws) // on PostgreSQL, the database's exported
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", repoDir, "log", "-1", "--format=%s%n%b").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "revert: undo ") || !strings.Contains(string(out), "memory page") {
		t.Errorf("git log -1: %v\n%s", err, out)
	}
	if out, err := exec.Command("git", "-C", repoDir, "fsck", "--full").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// teamFacts gives the workspace a team's scope with one remembered line
// and the history entry it came from.
func teamFacts(t *testing.T, h *harness) {
	t.Helper()
	const team audience.Scope = "team-slack-t1"
	a := h.app()
	e, err := a.history.AppendIn(team, "- The team ships on Fridays at noon; Ana reviews the release notes.", "slack:T1:C1")
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	text := fmt.Sprintf("# Long-term memory\n\n## Decisions\n\n- The team ships on Fridays at noon. <!-- durable 2026-11-26 src:%d -->\n- Ana reviews the release notes. <!-- durable 2026-11-26 src:%d -->\n", e.Cursor, e.Cursor)
	writeMemory(t, h, team, workspace.Memory, text)
}

// browser is one headless Chrome tab the test drives.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 800),
		// The sandbox needs a user namespace, which neither root nor many
		// CI containers get; the browser only loads our own page.
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// Nothing but the page: no connection out of this machine.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	// Bounds a hung browser, not the page's speed (the benchmarks
	// measure that).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("the browser %s did not start: %v", path, err)
	}
	return &browser{t: t, ctx: bctx}
}

// do runs actions, failing the test with what was being done.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// follow runs an action that loads another page (a click on a link, a
// form's submit) and waits for that page, which must answer 200.
func (b *browser) follow(what string, action chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.ctx, action)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	if res == nil || res.Status != 200 {
		url, _ := chromedp.Run(b.ctx, chromedp.Location())
		b.t.Fatalf("%s: %s answered %v:\n%s", what, url, res, text(b, chromedp.CSS("body")))
	}
}

// text is the visible text of the first element sel finds, once it is
// visible.
func text[S chromedp.Selectable](b *browser, sel S) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(sel))
	if err != nil {
		b.t.Fatalf("read %v: %v", sel, err)
	}
	return s
}

// shot writes the page as docs/img/web-<name>.png when -web-screenshots
// names a folder.
func (b *browser) shot(name string) {
	b.t.Helper()
	if *webScreenshots == "" {
		return
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(*webScreenshots, "web-"+name+".png")
	if err := os.MkdirAll(*webScreenshots, 0o755); err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	b.t.Logf("wrote %s", p)
}

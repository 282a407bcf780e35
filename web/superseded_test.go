package web

import (
	"net/http"
	"path"
	"testing"
)

// Issue 28, point 10: the page showed "office Harbour" and "office Canal
// Road" side by side as current. A line a later one replaced shows as
// superseded, with what stands for it now (a link to it when it is hot),
// and a cold line says when and why it left hot memory.
func TestMemoryPageShowsSupersededLines(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	dir := string(teamScope.Dir())
	writeFile(t, f.dir, path.Join(dir, "USER.md"), "# Users\n\n- Ana's office is Canal Road. <!-- durable 2026-12-01 id:00c2 replaces:00b1 -->\n")
	writeFile(t, f.dir, path.Join(dir, "memory/COLD.md"), "# Cold memory\n\n"+
		"- Ana's office is Harbour. <!-- durable 2026-10-01 id:00b1 out:2026-11-20 why:budget superseded-by:00c2 -->\n"+
		"- Ana's desk is by the window. <!-- durable 2026-10-01 id:00b2 out:2026-11-20 why:moved -->\n")
	page := f.operator().get("/memory/" + string(teamScope))
	if page.code != http.StatusOK {
		t.Fatalf("the team's memory: %d\n%s", page.code, page.body)
	}
	mustContain(t, page.body,
		`class="fact old"`, "superseded, no longer current; now: “Ana&#39;s office is Canal Road.”",
		`href="#USER-md-L3"`, "left hot memory 2026-11-20: moved out to keep memory within its budget",
		"left hot memory 2026-11-20: moved out by the deep Dream to make room")
	mustNotContain(t, page.body, "<!--", "superseded-by")
}

package recall

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// Issue 28, point 10: recall showed "office Harbour" and "office Canal
// Road" side by side as current. A cold line a later one replaced is
// found as superseded, with what stands for it now (a hot line here); a
// change of that line shows anew; and each cold line says why it left.
func TestColdLineShowsWhatReplacedIt(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		team := audience.Scope("team-slack-t1")
		f.cold(t, team, "# Cold memory\n\n"+
			"- Ana's office is Harbour. <!-- durable 2026-10-01 id:00b1 out:2026-11-20 why:budget superseded-by:00c2 -->\n"+
			"- Ana's desk is by the window. <!-- durable 2026-10-01 id:00b2 out:2026-11-20 why:moved -->\n")
		user := filepath.Join(f.ws, team.Dir(), "USER.md")
		write := func(text string) {
			t.Helper()
			if err := os.WriteFile(user, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write("- Ana's office is Canal Road. <!-- durable 2026-12-01 id:00c2 replaces:00b1 -->\n")
		f.update(t)
		got := f.search(t, "office harbour", team)
		if len(got) != 1 || got[0].Text != "- Ana's office is Harbour. (superseded, no longer current; now: “Ana's office is Canal Road.”) [left hot memory 2026-11-20: moved out to keep memory within its budget (still true then)]" {
			t.Fatalf("search = %+v", got)
		}
		if desk := f.search(t, "desk window", team); len(desk) != 1 || strings.Contains(desk[0].Text, "superseded") || !strings.Contains(desk[0].Text, "to make room") {
			t.Errorf("a current cold line: %+v", desk)
		}
		write("- Ana's office is Dock 9. <!-- durable 2026-12-20 id:00c2 replaces:00b1 -->\n")
		f.update(t)
		if got := f.search(t, "office harbour", team); len(got) != 1 || !strings.Contains(got[0].Text, "now: “Ana's office is Dock 9.”") {
			t.Errorf("after the replacement changed: %+v", got)
		}
	})
}

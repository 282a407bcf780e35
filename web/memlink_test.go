package web

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// One symbolic link in a scope leaves out only that file: the scope's
// page shows its other files and cold memory, and says the linked file is
// not shown (it answered 500 for the whole scope); nothing of what the
// link points at is ever shown.
func TestMemoryPageLeavesOutALinkedFile(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	dir := string(teamScope.Dir())
	writeFile(t, f.dir, path.Join(dir, "memory/COLD.md"), "# Cold memory\n\n- The team once shipped on Mondays. <!-- durable 2025-03-01 -->\n")
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("- The vault code is 4711.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(f.dir, filepath.FromSlash(dir), "USER.md")
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, user); err != nil {
		t.Fatal(err)
	}
	page := f.operator().get("/memory/" + string(teamScope))
	if page.code != http.StatusOK {
		t.Fatalf("the team's memory: %d\n%s", page.code, page.body)
	}
	mustContain(t, page.body, "Be brief.", "Standup is at 10.", "The team once shipped on Mondays.",
		"Not shown: this file is a symbolic link")
	mustNotContain(t, page.body, "4711")
}

package web

import (
	"net/http"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
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
	if err := os.WriteFile(secret, []byte("- The vault code is VAULTSECRET.\n"), 0o600); err != nil {
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
	mustNotContain(t, page.body, "VAULTSECRET")
}

// Undoing a commit that replaced a symbolic link never brings the link
// back, and the page says so: the confirmation names the file as staying
// as it is, and where nothing else is left to undo the refusal says why
// (it said "its change is undone already").
func TestRestoreSaysALinkIsNeverBroughtBack(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: opToken})
	dir := string(teamScope.Dir())
	user := filepath.Join(f.dir, filepath.FromSlash(dir), "USER.md")
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("- The vault code is VAULTSECRET.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	commit := func(replace func()) string {
		t.Helper()
		if err := os.Remove(user); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, user); err != nil {
			t.Fatal(err)
		}
		if _, err := f.repo.Commit(gitstore.ManualSubject, ""); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(user); err != nil {
			t.Fatal(err)
		}
		replace()
		c, err := f.repo.Commit(gitstore.ManualSubject, "")
		if err != nil {
			t.Fatal(err)
		}
		return c.SHA
	}
	op := f.operator()
	sha := commit(func() {
		f.write(path.Join(dir, "USER.md"), "# Users\n\n- Ana\n")
		f.write(path.Join(dir, "memory/MEMORY.md"), "# Memory\n\n- Lunch is at noon.\n")
	})
	page := op.get("/restore/" + sha)
	if page.code != http.StatusOK {
		t.Fatalf("the confirmation: %d\n%s", page.code, page.body)
	}
	mustContain(t, page.body, "-- Lunch is at noon.",
		"<code>scopes/team-slack-t1/USER.md</code> stays as it is: before this commit it was a symbolic link, and a restore never brings a link back.")

	sha = commit(func() { f.write(path.Join(dir, "USER.md"), "# Users\n\n- Bob\n") })
	page = op.get("/restore/" + sha)
	if page.code != http.StatusConflict {
		t.Fatalf("the refusal: %d\n%s", page.code, page.body)
	}
	mustContain(t, page.body, "Undoing this commit changes nothing: before it, scopes/team-slack-t1/USER.md was a symbolic link, and a restore never brings a link back.")
	mustNotContain(t, page.body, "undone already", "VAULTSECRET")
}

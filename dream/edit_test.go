package dream

import (
	"errors"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/memory"
)

// A hand edit through Edit is a commit of hand edits, written to the
// file; a scope new to the repository gets its first files first, edits
// made on disk are saved first, and the same content again changes
// nothing.
func TestEditCommitsAHandEdit(t *testing.T) {
	e := newEnv(t)
	d := e.dreamer(Config{})
	team := audience.Scope("team-slack-t1")
	res, err := d.Edit(team, memory.User, []byte("- Ana leads the team.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Subject != gitstore.ManualSubject || len(res.Diff.Files) != 1 {
		t.Fatalf("the edit's commit: %+v, diff %+v", res.Commit, res.Diff.Files)
	}
	if got := e.read("scopes/team-slack-t1/USER.md"); got != "- Ana leads the team.\n" {
		t.Errorf("USER.md after the edit: %q", got)
	}
	subjects := func() []string {
		var out []string
		for _, c := range e.log(3) {
			out = append(out, c.Subject)
		}
		return out
	}
	if got := subjects(); got[0] != gitstore.ManualSubject || !strings.HasPrefix(got[1], ScopeCreatedPrefix) {
		t.Errorf("the log: %q, want the edit on top of the scope's first files", got)
	}
	if again, err := d.Edit(team, memory.User, []byte("- Ana leads the team.\n")); err != nil || again.Commit.SHA != "" {
		t.Errorf("the same content again: %+v, %v", again, err)
	}
	testkit.WriteFile(t, e.ws, "scopes/team-slack-t1/memory/MEMORY.md", "- written by hand on disk\n")
	res, err = d.Edit(team, memory.User, []byte("- Ana leads the team.\n- Bob joined.\n"))
	if err != nil || res.Saved == "" || res.Commit.SHA == "" {
		t.Fatalf("an edit after a change on disk: %+v, %v", res, err)
	}
	if got := e.read("scopes/team-slack-t1/memory/MEMORY.md"); got != "- written by hand on disk\n" {
		t.Errorf("the change on disk after the edit: %q", got)
	}
	if _, err := d.Edit(team, "notes.md", []byte("x")); !errors.Is(err, memory.ErrNotMemory) {
		t.Errorf("an edit of no memory file: %v", err)
	}
}

package dream

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/memory"
)

// A conversation's memory moves to the scope it belongs in: its entries
// (also its threads'), and the lines traced to them alone, leave the team's
// scope for the private channel's in one commit; a line traced to another
// conversation's entry too stays and is copied; another conversation's
// lines and entries stay. Asked again, it moves nothing; a dry run
// changes nothing; entries not dreamed yet are refused.
func TestMoveAConversationsMemory(t *testing.T) {
	e := newScopedEnv(t)
	const private audience.Scope = "private-slack-t1-c1"
	add := func(key, fact string) {
		t.Helper()
		if _, err := e.hist.AppendIn(team, "- "+fact, key); err != nil {
			t.Fatal(err)
		}
	}
	add("slack:C1", "merger code name is BLUEHERON")
	add("slack:C2", "team ships on fridays")
	add("slack:C1:1712.5", "merger closes in May")
	d := e.dreamer(Config{})
	if _, err := d.Move(MoveRequest{Conversation: "slack:C1", To: private}); !errors.Is(err, ErrNotDreamed) {
		t.Fatalf("a move of entries not dreamed yet: %v", err)
	}
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	teamUser := "scopes/" + string(team) + "/USER.md"
	// A line said in both conversations (entries 1 and 2).
	testkit.WriteFile(t, e.ws, teamUser, e.read(teamUser)+"- the launch is on Monday <!-- durable 2026-12-01 src:1,2 -->\n")
	before := e.read(teamUser)

	dry, err := d.Move(MoveRequest{Conversation: "slack:C1", To: private, DryRun: true})
	if err != nil || len(dry.Entries) != 2 || len(dry.Lines) != 3 || dry.Commit.SHA != "" {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if e.read(teamUser) != before {
		t.Error("a dry run changed the team's memory")
	}

	res, err := d.Move(MoveRequest{Conversation: "slack:C1", To: private})
	if err != nil {
		t.Fatal(err)
	}
	if got := cursorsOf(res); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("entries moved %v, want 1 and 3", got)
	}
	teamText, privText := e.read(teamUser), e.read("scopes/"+string(private)+"/USER.md")
	for _, want := range []string{"BLUEHERON", "closes in May", "launch is on Monday"} {
		if !strings.Contains(privText, want) {
			t.Errorf("the private channel's memory lacks %q:\n%s", want, privText)
		}
	}
	for _, gone := range []string{"BLUEHERON", "closes in May"} {
		if strings.Contains(teamText, gone) {
			t.Errorf("the team's memory still holds %q:\n%s", gone, teamText)
		}
	}
	if !strings.Contains(teamText, "fridays") || !strings.Contains(teamText, "launch is on Monday") {
		t.Errorf("the team lost what it heard itself:\n%s", teamText)
	}
	log := e.log(1)
	if len(log) != 1 || !strings.HasPrefix(log[0].Subject, MoveSubject) || log[0].SHA != res.Commit.SHA {
		t.Fatalf("the last commit is %+v, want the move's %+v", log, res.Commit)
	}
	checkMoveCommits(t, e.repo)
	byCursor := map[int]audience.Scope{}
	for _, en := range e.hist.all(t) {
		byCursor[en.Cursor] = en.Scope
	}
	if byCursor[1] != private || byCursor[3] != private || byCursor[2] != team {
		t.Errorf("entries' scopes after the move: %v", byCursor)
	}

	// Asked again: nothing left to move, nothing added twice.
	again, err := d.Move(MoveRequest{Conversation: "slack:C1", To: private})
	if err != nil || len(again.Entries) != 0 || again.Commit.SHA != "" {
		t.Errorf("asked again: %+v, %v", again, err)
	}
	if n := strings.Count(e.read("scopes/"+string(private)+"/USER.md"), "launch is on Monday"); n != 1 {
		t.Errorf("the copied line is there %d times", n)
	}
	if _, err := d.Move(MoveRequest{Conversation: "slack:C1", To: "../x"}); err == nil {
		t.Error("a scope that is none was taken")
	}
}

// A dry run of a move reads the scopes' files as they stand through the
// memory, never through a symbolic link: a link in the team's folder to
// the operator's USER.md (inside the workspace, where a plain open follows
// it), whose line names an entry of the conversation, is refused, and
// nothing of the operator's memory is shown.
func TestMoveDryRunNeverReadsThroughALink(t *testing.T) {
	e := newScopedEnv(t)
	if _, err := e.hist.AppendIn(team, "- merger code name is BLUEHERON", "slack:C1"); err != nil {
		t.Fatal(err)
	}
	d := e.dreamer(Config{})
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, e.ws, "USER.md", initUser+"- the operator's PIN is ROOT42 <!-- durable 2026-12-01 src:1 -->\n")
	user := filepath.Join(e.ws, "scopes", string(team), "USER.md")
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "USER.md"), user); err != nil {
		t.Fatal(err)
	}
	dry, err := d.Move(MoveRequest{Conversation: "slack:C1", To: "private-slack-t1-c1", DryRun: true})
	for _, l := range dry.Lines {
		if strings.Contains(l.Text, "ROOT42") {
			t.Errorf("the dry run read the operator's memory through the link: %+v", l)
		}
	}
	if !errors.Is(err, memory.ErrLink) {
		t.Errorf("dry run through a link: %+v, %v; want it refused", dry.Lines, err)
	}
}

// checkMoveCommits: a move is one commit on each scope's line, each
// changing that scope's file.
func checkMoveCommits(t *testing.T, repo *gitstore.Store) {
	t.Helper()
	moves, err := repo.Log(0, MoveSubject, nil)
	if err != nil || len(moves) != 2 {
		t.Fatalf("the move's commits: %+v, %v", moves, err)
	}
	for _, c := range moves {
		if _, diff, err := repo.Show(c.SHA, nil); err != nil || len(diff.Files) != 1 {
			t.Errorf("the move's commit %s changed %+v, %v", c.Short, diff.Files, err)
		}
	}
}

func cursorsOf(r MoveResult) []int {
	var out []int
	for _, e := range r.Entries {
		out = append(out, e.Cursor)
	}
	return out
}

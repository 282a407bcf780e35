package memory

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/memory/memline"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

func writeFile(t *testing.T, ws string, s audience.Scope, rel, text string) {
	t.Helper()
	testkit.WriteFile(t, filepath.Join(ws, filepath.FromSlash(s.Dir())), rel, text)
}

// wordCounter counts words: enough to check what is counted.
type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }

func TestCostCountsEachLineAsShown(t *testing.T) {
	text := "# Users\n\n- Ana prefers tea. <!-- durable 2026-11-26 src:4 -->\n- Bob is away today. <!-- ephemeral 2026-11-26 -->\nProse line here."
	// "# Users" 2+1, blank 0+1, "- Ana prefers tea. (Nov 2026)" 6+1,
	// "- Bob is away today. (2026-11-26)" 6+1, prose 3+1.
	if got := Cost(wordCounter{}, text); got != 3+1+7+7+4 {
		t.Errorf("Cost = %d", got)
	}
	if got := Cost(wordCounter{}, "", text, ""); got != 22 {
		t.Errorf("Cost with empty files = %d", got)
	}
	it := memline.ParseFile([]byte("- Ana prefers tea. <!-- durable 2026-11-26 src:4 -->")).Items[0]
	if s, dated := ShownLine(it); s != "- Ana prefers tea. (Nov 2026)" || !dated {
		t.Errorf("ShownLine = %q, %v", s, dated)
	}
}

// A file still as the template made it is no memory: a prompt leaves it
// out, and so does the cost; the default scope's SOUL.md is the
// operator's voice and always shown.
func TestShownTextLeavesTheTemplateOut(t *testing.T) {
	tpl, err := workspacetemplate.Read(User)
	if err != nil {
		t.Fatal(err)
	}
	if got := ShownText(teamT1.Home(), User, tpl); got != "" {
		t.Errorf("the template's USER.md shows %q", got)
	}
	soul, _ := workspacetemplate.Read(Soul)
	if got := ShownText(audience.Default, Soul, soul); got == "" {
		t.Error("the default scope's SOUL.md as the template made it is not shown")
	}
	if got := ShownText(teamT1.Home(), User, []byte("\n- Ana\n\n")); got != "- Ana" {
		t.Errorf("ShownText = %q", got)
	}
}

func TestHotReadsAgainOnlyWhenAFileChanged(t *testing.T) {
	ws := t.TempDir()
	s := teamT1.Home()
	writeFile(t, ws, s, User, "- Ana prefers tea.\n")
	files := &countingFiles{Files: NewDisk(ws)}
	m := New(files, false)
	for range 3 {
		hot, err := m.Hot(s)
		if err != nil || hot[1].Text != "- Ana prefers tea." || hot[0].Text != "" || hot[2].Text != "" {
			t.Fatalf("Hot = %+v, %v", hot, err)
		}
	}
	if files.reads != 1 {
		t.Errorf("%d reads of unchanged files, want 1", files.reads)
	}
	writeFile(t, ws, s, User, "- Ana prefers green tea.\n")
	if hot, _ := m.Hot(s); hot[1].Text != "- Ana prefers green tea." {
		t.Errorf("after a change: %q", hot[1].Text)
	}
	if n, err := m.HotCost(s, wordCounter{}); err != nil || n != 6 {
		t.Errorf("HotCost = %d, %v", n, err)
	}
}

type countingFiles struct {
	Files
	reads int
}

func (c *countingFiles) ReadFile(s audience.Scope, rel string) ([]byte, error) {
	c.reads++
	return c.Files.ReadFile(s, rel)
}

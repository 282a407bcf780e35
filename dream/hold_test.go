package dream

import (
	"context"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// A restored deep Dream holds: the next Dreams leave what it brought back
// in hot memory (for the scope's size, for a prompt's request, for the
// number of Dreams since the last deep one) until the memory grows past
// the hold; undoing the restore ends the hold.
func TestRestoredDeepDreamHolds(t *testing.T) {
	e, _ := deepEnv(t)
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("DONE") })
	d := e.dreamer(Config{HotTokens: 1000, DeepAtShare: 0.5, DeepEvery: 1})
	rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 1 {
		t.Fatalf("deep Dream: %+v, %v", rep.Deep, err)
	}
	compacted := hotOf(t, e)
	res, err := d.Restore(rep.Deep[0].Commit, AllScopes(), RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restored := hotOf(t, e)
	if len(res.Held) != 1 || res.Held[0].Scope != DefaultScope || res.Held[0].Tokens != restored ||
		res.Held[0].Until != restored+(restored-compacted) {
		t.Fatalf("held = %+v; want the scope at %d tokens, held until %d", res.Held, restored, 2*restored-compacted)
	}
	user := e.read("USER.md")

	// The next Dream, a prompt's request, and a Dream with something new
	// to read: the restored lines stay hot.
	calls := len(e.srv.Requests())
	if rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil); err != nil || len(rep.Deep) != 0 {
		t.Fatalf("the next Dream: %+v, %v", rep.Deep, err)
	}
	if err := d.Ledger().RequestDeep(DefaultScope); err != nil {
		t.Fatal(err)
	}
	e.hist.seed(t, 0, 1, func(int) string { return "- Ana likes figs." })
	e.srv.SetResponder(llmtest.MemoryModel)
	rep, err = d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 0 || rep.Outcome != OutcomeCompleted {
		t.Fatalf("a Dream with news: %+v, %v", rep, err)
	}
	if len(e.srv.Requests()) == calls {
		t.Fatal("the Dream with news called no model")
	}
	if got := d.Ledger().DeepRequested(); len(got) != 0 {
		t.Errorf("the prompt's request is still pending: %v", got)
	}
	for _, line := range strings.Split(strings.TrimSpace(user), "\n") {
		if !strings.Contains(e.read("USER.md"), line) {
			t.Errorf("a restored line left hot memory: %q", line)
		}
	}
	if p := e.progress(); p.DeepHeld != res.Held[0].Until {
		t.Errorf("hold in the ledger = %d, want %d", p.DeepHeld, res.Held[0].Until)
	}

	// Grown past the hold, it is compacted again.
	var b strings.Builder
	b.WriteString(e.read("USER.md"))
	for hotOf(t, e) <= res.Held[0].Until {
		b.WriteString("- Ana keeps a long list of things she likes, item " + strings.Repeat("x", 40) + ".\n")
		testkit.WriteFile(t, e.ws, "USER.md", b.String())
	}
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("DONE") })
	rep, err = d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 1 {
		t.Fatalf("after it grew past the hold: %+v, %v", rep.Deep, err)
	}
	if p := e.progress(); p.DeepHeld != 0 {
		t.Errorf("hold after it grew past = %d", p.DeepHeld)
	}
}

// Undoing the restore of a deep Dream brings the compaction back and ends
// the hold.
func TestUndoingARestoredDeepDreamEndsTheHold(t *testing.T) {
	e, _ := deepEnv(t)
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("DONE") })
	d := e.dreamer(Config{HotTokens: 1000, DeepAtShare: 0.5})
	rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 1 {
		t.Fatalf("deep Dream: %+v, %v", rep.Deep, err)
	}
	compacted := e.read("USER.md")
	res, err := d.Restore(rep.Deep[0].Commit, AllScopes(), RestoreOptions{})
	if err != nil || len(res.Held) != 1 {
		t.Fatalf("restore: %+v, %v", res.Held, err)
	}
	again, err := d.Restore(res.Revert.Short, AllScopes(), RestoreOptions{})
	if err != nil || len(again.Held) != 0 {
		t.Fatalf("undo of the restore: %+v, %v", again.Held, err)
	}
	if got := e.read("USER.md"); got != compacted {
		t.Errorf("USER.md after undoing the restore:\n%s\nwant the deep Dream's:\n%s", got, compacted)
	}
	if p := e.progress(); p.DeepHeld != 0 {
		t.Errorf("hold after the undo of the restore = %d", p.DeepHeld)
	}
}

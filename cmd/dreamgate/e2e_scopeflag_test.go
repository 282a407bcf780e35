package main

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The operator's CLI sees every memory scope and --scope narrows it to
// one: `dream run --scope` dreams that scope alone, `status --scope` says
// how far Dream has read it, `dream log --scope` shows only its changes.
func TestScopeFlagThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	a := h.app()
	const team audience.Scope = "team-slack-t1"
	if _, err := a.history.AppendIn(team, "- The team ships on Fridays at noon.", "slack:C1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.history.AppendIn(audience.Default, "- The operator keeps the spare keys in the blue box.", "terminal:main"); err != nil {
		t.Fatal(err)
	}
	a.close()

	if r := h.run("dream", "run", "--scope", string(team)); r.code != 0 {
		t.Fatalf("dream run --scope: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("status", "--scope", "default"); !strings.Contains(r.stdout, "Dream has read of the default scope up to 0") {
		t.Errorf("status --scope default after the team's Dream:\n%s", r.stdout)
	}
	if r := h.run("status", "--scope", string(team)); !strings.Contains(r.stdout, "Dream has read of the team-slack-t1 scope up to 2") {
		t.Errorf("status --scope %s:\n%s", team, r.stdout)
	}
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("status"); !strings.Contains(r.stdout, "Memory scopes: default and 1 more (team-slack-t1)") {
		t.Errorf("status does not list the scopes:\n%s", r.stdout)
	}
	if r := h.run("dream", "log", "--scope", "default"); r.code != 0 || !strings.Contains(r.stdout, "spare keys") {
		t.Errorf("dream log --scope default: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("dream", "log", "--scope", string(team)); strings.Contains(r.stdout+r.stderr, "spare keys") ||
		!strings.Contains(r.stdout, "ships on Fridays") {
		t.Errorf("dream log --scope %s does not show the team's change alone:\n%s\n%s", team, r.stdout, r.stderr)
	}
	// The team's Dream read entry 1, the default scope's entry 2.
	if r := h.run("dream", "restore", "--scope", string(team)); strings.Contains(r.stdout, "history 2-2") ||
		!strings.Contains(r.stdout, "history 1-1") {
		t.Errorf("dream restore --scope %s does not list the team's commit alone:\n%s", team, r.stdout)
	}
	for _, bad := range []string{"Team-slack-t1", "../x", "scopes/team-slack-t1"} {
		if r := h.run("dream", "log", "--scope", bad); r.code != 2 || !strings.Contains(r.stderr, "not a memory scope") {
			t.Errorf("--scope %q: exit %d\n%s", bad, r.code, r.stderr)
		}
	}
}

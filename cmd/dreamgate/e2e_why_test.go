package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/workspace"
)

// `dreamgate why` shows the operator every scope's lines with their
// sources, and --scope one scope's alone.
func TestWhyThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	a := h.app()
	const team audience.Scope = "team-slack-t1"
	te, err := a.history.AppendIn(team, "- The team ships on Fridays at noon.", "slack:T1:C1")
	if err != nil {
		t.Fatal(err)
	}
	oe, err := a.history.AppendIn(audience.Default, "- The operator ships the spare keys on Fridays.", "terminal:main")
	if err != nil {
		t.Fatal(err)
	}
	a.close()
	write := func(s audience.Scope, text string) { writeMemory(t, h, s, workspace.Memory, text) }
	write(team, fmt.Sprintf("- The team ships on Fridays at noon. <!-- durable 2026-11-26 src:%d -->\n", te.Cursor))
	write(audience.Default, fmt.Sprintf("- The spare keys ship on Fridays. <!-- ephemeral 2026-11-27 src:%d -->\n", oe.Cursor))

	// The default scope's line lacks "ships" (it says "ship"): every word
	// must be in a line.
	r := h.run("why", "ships", "fridays")
	if r.code != 0 {
		t.Fatalf("why: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`1 remembered line holds "ships fridays":`,
		"- The team ships on Fridays at noon.\n  durable, last confirmed 2026-11-26 — scopes/team-slack-t1/memory/MEMORY.md (scope team-slack-t1)\n  from slack:T1:C1, archived ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("why lacks %q:\n%s", want, r.stdout)
		}
	}
	r = h.run("why", "--scope", "default", "spare", "keys")
	if r.code != 0 || !strings.Contains(r.stdout, "ephemeral, last confirmed 2026-11-27 — memory/MEMORY.md (scope default)\n  from terminal:main") {
		t.Errorf("why --scope default: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := h.run("why", "--scope", "default", "noon"); r.code != 1 || !strings.Contains(r.stdout, `No remembered line holds "noon".`) {
		t.Errorf("why --scope default noon (the team's): exit %d\n%s", r.code, r.stdout)
	}
	// No line holds every word: where they were said before, from the
	// recall index, within the scopes asked about only.
	r = h.run("why", "--scope", "default", "operator", "ships", "noon")
	if r.code != 1 || !strings.Contains(r.stdout, "What was said before holds it") ||
		!strings.Contains(r.stdout, "archived from terminal:main: - The operator ships the spare keys on Fridays.") {
		t.Errorf("why with the words in the archive only: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "team ships") || strings.Contains(r.stdout, "slack:T1:C1") {
		t.Errorf("why --scope default shows the team's archive:\n%s", r.stdout)
	}
	if r := h.run("why"); r.code != 2 {
		t.Errorf("why without words: exit %d", r.code)
	}
}

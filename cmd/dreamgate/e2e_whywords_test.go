package main

import (
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// Issue 28, point 11: `/why Ana` matched "Banana" and "Panama" (a
// substring, not a word). Through the binary, in chat and at the shell,
// /why finds a word whole; and a line a later one replaced shows as
// superseded, with what stands for it now, never as current.
func TestWhyMatchesWholeWordsThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.app().close() // the workspace, as onboarding makes it
	writeMemory(t, h, audience.Default, "USER.md", "# Users\n\n- Ana likes green tea. <!-- durable 2026-11-02 id:00a1 -->\n"+
		"- Bring a banana to the standup. <!-- durable 2026-11-02 id:00a2 -->\n"+
		"- Kenji runs the Panama account. <!-- durable 2026-11-02 id:00a3 -->\n"+
		"- Ana's office is Canal Road. <!-- durable 2026-12-01 id:00c2 replaces:00b1 -->\n")
	writeMemory(t, h, audience.Default, "memory/COLD.md", "# Cold memory\n\n"+
		"- Ana's office is Harbour. <!-- durable 2026-10-01 id:00b1 out:2026-11-20 why:budget superseded-by:00c2 -->\n")

	chat := h.run("chat", "-m", "/why Ana")
	shell := h.run("why", "Ana")
	for name, r := range map[string]runResult{"/why in chat": chat, "dreamgate why": shell} {
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", name, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, `3 remembered lines hold "ana"`) || strings.Contains(r.stdout, "banana") || strings.Contains(r.stdout, "Panama") {
			t.Errorf("%s matched a word inside another:\n%s", name, r.stdout)
		}
		if !strings.Contains(r.stdout, "- Ana's office is Harbour.\n  superseded, no longer current; now: “Ana's office is Canal Road.”") ||
			!strings.Contains(r.stdout, "left hot memory 2026-11-20: moved out to keep memory within its budget") {
			t.Errorf("%s does not show the old office as superseded:\n%s", name, r.stdout)
		}
	}
}

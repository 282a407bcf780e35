package llmtest

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// A correction ("…, not X") names every current line shown — in the files
// or in the cold memory below them — that holds X, as a careful model
// does; a superseded line is not current, and with no such line shown it
// falls back to removing X.
func TestMemoryModelAnalysisNamesWhatACorrectionReplaces(t *testing.T) {
	prompt := "## Archive entries (oldest first)\n[2026-12-01 10:00] - My office is Canal Road now, not Harbour.\n- I moved to Porto, not Lisbon.\n" +
		"\n## Today\n2026-12-01 (Tuesday)\n\n## Current USER.md (10 characters)\n# Users\n- Ana plays the cello. <!-- durable 2026-01-01 id:00aa -->\n" +
		"\n## Cold memory that may concern these entries (lines that left the files; not shown to chat turns)\n" +
		"- Ana's office is Harbour. <!-- durable 2026-10-01 id:7f3a out:2026-11-20 why:budget -->\n" +
		"- Ana's old office was near Harbour. <!-- durable 2025-10-01 id:1111 superseded-by:7f3a -->\n"
	got := MemoryModel(Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
	want := "[USER] [replaces:7f3a] My office is Canal Road now.\n[FILE-REMOVE] Lisbon\n[USER] I moved to Porto."
	if got.Text != want {
		t.Errorf("analysis:\n%s\nwant:\n%s", got.Text, want)
	}
}

// A finding with [replaces:<ids>] replaces the line with that id where a
// file holds it, else is added; either way its line says what it replaces.
func TestMemoryModelEditReplacesByID(t *testing.T) {
	user := "# Users\n- Ana's office is Harbour. <!-- durable 2026-10-01 id:7f3a -->\n- Bob's office is Harbour too. <!-- durable 2026-10-01 id:9b2c -->"
	edit := func(findings string) string {
		prompt := "## Findings to apply\n" + findings + "\n\n## Current memory files\n" +
			"\n### USER.md (" + strconv.Itoa(len([]rune(user))) + " characters)\n" + user + "\n"
		got := MemoryModel(Request{Tools: []string{"read_file", "edit_file"}, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "edit"}, {Role: llm.RoleUser, Content: prompt}}})
		if len(got.ToolCalls) != 1 {
			t.Fatalf("edit of %q: %+v", findings, got)
		}
		var args map[string]string
		_ = json.Unmarshal([]byte(got.ToolCalls[0].Arguments), &args)
		return editResult(user, args)
	}
	if got := edit("[USER] [correction] [replaces:7f3a] Ana's office is Canal Road."); got != "# Users\n- Ana's office is Canal Road. <!-- replaces:7f3a -->\n- Bob's office is Harbour too. <!-- durable 2026-10-01 id:9b2c -->" {
		t.Errorf("a hot line replaced:\n%s", got)
	}
	if got := edit("[USER] [replaces:c0c0] Ana's office is Canal Road."); got != user+"\n- Ana's office is Canal Road. <!-- replaces:c0c0 -->" {
		t.Errorf("a cold line replaced:\n%s", got)
	}
}

// The deep Dream's fake merges facts that say the same and replaces a
// fact corrected by a later one.
func TestMemoryModelDeepReplaces(t *testing.T) {
	prompt := "## Deep Dream\nToday: 2026-12-01 (Tuesday)\n\n## USER.md\n" +
		"U1 [durable 2026-01-10] Ana lives in Lisbon.\nU2 [durable 2026-02-01] Ana drinks green tea.\n" +
		"U3 [durable 2026-10-20] Ana lives in Porto.\nU4 [durable 2026-09-01] ana drinks green tea\n"
	got := MemoryModel(Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
	if want := "REPLACE U1 WITH U3\nMERGE U2 U4: ana drinks green tea"; got.Text != want {
		t.Errorf("deep:\n%s\nwant:\n%s", got.Text, want)
	}
}

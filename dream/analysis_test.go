package dream

import (
	"fmt"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory/memline"

	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseAnalysis(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		findings []finding
		skips    int
		ignored  int
	}{
		{"plain", "[USER] prefers tea over coffee\n[SOUL] answer in German\n[MEMORY] release is on May 5\n[FILE-REMOVE] MEMORY.md: the old release date",
			[]finding{{Tag: tagUser, Text: "prefers tea over coffee"}, {Tag: tagSoul, Text: "answer in German"}, {Tag: tagMemory, Text: "release is on May 5"}, {Tag: tagFileRemove, Text: "MEMORY.md: the old release date"}}, 0, 0},
		{"skip only", "[SKIP]", nil, 1, 0},
		{"skip with a note", "[SKIP] nothing durable here\n\n", nil, 1, 0},
		{"markdown decorations", "- [USER] likes cats\n* **[MEMORY]** uses Go 1.26\n1. [soul]: be brief\n2) [File-Remove] - the duplicate name line\n• [USER] — lives in Lisbon",
			[]finding{{Tag: tagUser, Text: "likes cats"}, {Tag: tagMemory, Text: "uses Go 1.26"}, {Tag: tagSoul, Text: "be brief"}, {Tag: tagFileRemove, Text: "the duplicate name line"}, {Tag: tagUser, Text: "lives in Lisbon"}}, 0, 0},
		{"code fence around the answer", "```\n[USER] likes cats\n```", []finding{{Tag: tagUser, Text: "likes cats"}}, 0, 0},
		{"prose and unknown tags ignored", "Here is my analysis:\n[SKILL] deploy: how to deploy\n[USER] likes cats\n[] nothing\n[USER]\nThanks!",
			[]finding{{Tag: tagUser, Text: "likes cats"}}, 0, 5},
		{"duplicates kept once", "[USER] likes cats\n[USER] likes cats", []finding{{Tag: tagUser, Text: "likes cats"}}, 0, 0},
		{"prose only", "I think the user likes cats.", nil, 0, 1},
		{"unclosed bracket", "[USER likes cats", nil, 0, 1},
		{"CRLF", "[USER] likes cats\r\n[SKIP]\r\n", []finding{{Tag: tagUser, Text: "likes cats"}}, 1, 0},
		{"priorities", "[USER] [ephemeral] Ana is away\n- [permanent] [SOUL] be brief\n[MEMORY] [Durable]: uses Go\n[USER] [ephemeral] [permanent] first one wins",
			[]finding{{Tag: tagUser, Text: "Ana is away", Priority: memline.Ephemeral}, {Tag: tagSoul, Text: "be brief", Priority: memline.Permanent},
				{Tag: tagMemory, Text: "uses Go", Priority: memline.Durable}, {Tag: tagUser, Text: "first one wins", Priority: memline.Ephemeral}}, 0, 0},
		{"correction, as nanobot tags it", "[USER] [correction] lives in Porto\n[MEMORY] [correction] [durable] release in June",
			[]finding{{Tag: tagUser, Text: "lives in Porto", Correction: true}, {Tag: tagMemory, Text: "release in June", Priority: memline.Durable, Correction: true}}, 0, 0},
		{"a bracket that is no priority stays in the text", "[MEMORY] [2026] the year of the move",
			[]finding{{Tag: tagMemory, Text: "[2026] the year of the move"}}, 0, 0},
		{"a priority without a tag", "[ephemeral] Ana is away", nil, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := parseAnalysis(tc.in)
			if !reflect.DeepEqual(a.findings, tc.findings) {
				t.Errorf("findings = %#v\nwant %#v", a.findings, tc.findings)
			}
			if a.skips != tc.skips || len(a.ignored) != tc.ignored {
				t.Errorf("skips %d ignored %q, want %d and %d", a.skips, a.ignored, tc.skips, tc.ignored)
			}
		})
	}
}

func TestPhase1Input(t *testing.T) {
	long := strings.Repeat("é", entryCap+10)
	batch := []history.Entry{{Cursor: 7, Timestamp: "2026-04-03 00:02", Content: "- User prefers dark mode\n- Decided on PostgreSQL"}, {Cursor: 8, Timestamp: "2026-04-03 00:05", Content: long}}
	files := []memFile{{rel: fileMemory, text: strings.Repeat("m", memoryCap+1)}, {rel: fileSoul}, {rel: fileUser, text: "# User\n- Ana\n"}}
	msgs := phase1Messages("", batch, time.Date(2026, 4, 3, 9, 0, 0, 0, time.UTC), files)
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Fatalf("messages = %+v", msgs)
	}
	if !strings.HasPrefix(msgs[0].Content, phase1Guidance) || !strings.HasSuffix(msgs[0].Content, phase1Rules) {
		t.Error("system prompt is not guidance + rules")
	}
	in := msgs[1].Content
	for _, want := range []string{
		"[2026-04-03 00:02] - User prefers dark mode\n- Decided on PostgreSQL\n",
		"[2026-04-03 00:05] " + strings.Repeat("é", entryCap) + "…[truncated]\n",
		"## Today\n2026-04-03 (Friday)\n",
		fmt.Sprintf("## Current memory/MEMORY.md (%d characters)\n", memoryCap+1),
		fmt.Sprintf("[cut at %d characters; the rest of memory/MEMORY.md is not shown]", memoryCap),
		"## Current SOUL.md (0 characters)\n(empty)\n",
		"## Current USER.md (12 characters)\n# User\n- Ana\n",
	} {
		if !strings.Contains(in, want) {
			t.Errorf("phase 1 input lacks %q", want)
		}
	}
	if strings.Contains(in, strings.Repeat("é", entryCap+1)) {
		t.Error("entry not capped")
	}
	// Phase 1 has no tools: its input must not point the model at one.
	if strings.Contains(in, "read_file") {
		t.Error("phase 1 input tells the model to use read_file, which it does not have")
	}
	// Phase 2 has read_file, and its note says so.
	p2 := phase2Messages("", []finding{{Tag: tagMemory, Text: "x"}}, files)[1].Content
	if !strings.Contains(p2, fmt.Sprintf("[cut at %d characters; use read_file on memory/MEMORY.md to see the rest]", memoryCap)) {
		t.Errorf("phase 2 input lacks the read_file cut note")
	}
}

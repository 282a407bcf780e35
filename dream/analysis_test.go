package dream

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/tokens"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
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
	long := strings.Repeat("é", 5_000)
	batch := []history.Entry{{Cursor: 7, Timestamp: "2026-04-03 00:02", Content: "- User prefers dark mode\n- Decided on PostgreSQL"}, {Cursor: 8, Timestamp: "2026-04-03 00:05", Content: long}}
	files := []memFile{{rel: fileMemory, text: strings.Repeat("m", memoryCap+1)}, {rel: fileSoul}, {rel: fileUser, text: "# User\n- Ana\n"}}
	d := newEnv(t).dreamer(Config{})
	parts := d.phase1Parts(batch, d.room(0))
	if len(parts) != 1 {
		t.Fatalf("parts = %d, want the two entries in one call", len(parts))
	}
	msgs := phase1Messages("", parts[0], time.Date(2026, 4, 3, 9, 0, 0, 0, time.UTC), files, nil)
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Fatalf("messages = %+v", msgs)
	}
	if !strings.HasPrefix(msgs[0].Content, phase1Guidance) || !strings.HasSuffix(msgs[0].Content, phase1Rules) {
		t.Error("system prompt is not guidance + rules")
	}
	in := msgs[1].Content
	for _, want := range []string{
		"[2026-04-03 00:02] - User prefers dark mode\n- Decided on PostgreSQL\n",
		"[2026-04-03 00:05] " + long + "\n",
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
	// Phase 1 has no tools: its input must not point the model at one.
	if strings.Contains(in, "read_file") {
		t.Error("phase 1 input tells the model to use read_file, which it does not have")
	}
	// Phase 2 has read_file, and its note says so.
	p2 := phase2Messages("", []finding{{Tag: tagMemory, Text: "x"}}, files, nil)[1].Content
	if !strings.Contains(p2, fmt.Sprintf("[cut at %d characters; use read_file on memory/MEMORY.md to see the rest]", memoryCap)) {
		t.Errorf("phase 2 input lacks the read_file cut note")
	}
}

// Phase 1 reads every entry whole (issue point 7: entries were cut at
// 4,000 characters, and a fact at the end of a long one never reached
// memory): a batch that does not fit the Dream model's window is read in
// several calls, an entry too long for one call in parts of its own, each
// call within the window, every line of the entry in exactly one of them.
func TestPhase1ReadsLongEntriesInParts(t *testing.T) {
	e := newEnv(t)
	var long strings.Builder
	for i := range 400 {
		fmt.Fprintf(&long, "Line %03d of a long note about the weather in the valley today.\n", i)
	}
	long.WriteString("- I am a tea drinker")
	e.hist.seed(t, 0, 1, func(int) string { return long.String() })
	e.hist.seed(t, 1, 1, func(int) string { return "- The project is called dreamgate" })
	e.srv.SetResponder(llmtest.MemoryModel)
	cfg := Config{Window: 4000, MaxTokens: 500}
	d := e.dreamer(cfg)
	rep, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	if user := e.read("USER.md"); !strings.Contains(user, "tea drinker") {
		t.Errorf("the fact at the end of the long entry is not in USER.md:\n%s", user)
	}
	if mem := e.read("memory/MEMORY.md"); !strings.Contains(mem, "called dreamgate") {
		t.Errorf("the short entry's fact is not in MEMORY.md:\n%s", mem)
	}
	var count tokens.Counter
	calls, seen := 0, map[string]int{}
	for _, r := range e.srv.Requests() {
		if len(r.Tools) > 0 {
			continue
		}
		calls++
		n := count.Count(r.Messages[0].Content) + count.Count(r.Messages[1].Content)
		if n > d.cfg.Window-d.cfg.MaxTokens {
			t.Errorf("an analysis call holds %d tokens, over the window's %d", n, d.cfg.Window-d.cfg.MaxTokens)
		}
		for line := range strings.Lines(r.Messages[1].Content) {
			if i := strings.Index(line, "Line "); i >= 0 {
				seen[strings.TrimSpace(line[i:])]++
			}
		}
	}
	if calls < 3 {
		t.Errorf("%d analysis calls, want the long entry in parts of its own", calls)
	}
	for i := range 400 {
		if key := fmt.Sprintf("Line %03d of a long note about the weather in the valley today.", i); seen[key] != 1 {
			t.Errorf("%q was read %d times", key, seen[key])
		}
	}
}

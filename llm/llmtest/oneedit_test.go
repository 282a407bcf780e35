package llmtest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

func TestOneEditModelAnalysis(t *testing.T) {
	prompt := "## Archive entries (oldest first)\n" +
		"[2026-04-03 00:02] - My favourite editor is Vim.\n- Please sign off with Cheers.\n" +
		"[2026-04-03 00:05] - Actually, my favourite editor is Helix, not Vim.\n- The release train leaves every Thursday.\n- I drink tea.\n" +
		"\n## Today\n2026-04-03 (Friday)\n"
	got := OneEditModel(Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
	want := strings.Join([]string{
		"[USER] My favourite editor is Vim.",
		"[SOUL] Please sign off with Cheers.",
		"[USER] My favourite editor is Helix. (instead of Vim)",
		"[MEMORY] The release train leaves every Thursday.",
		"[USER] I drink tea.",
	}, "\n")
	if got.Text != want {
		t.Errorf("analysis:\n%s\nwant:\n%s", got.Text, want)
	}
}

// Phase 2 plays out as a conversation: one edit_file call per reply, each
// computed from the prompt's files and the edits that succeeded, then
// "Done.".
func TestOneEditModelEditsOneFindingPerCall(t *testing.T) {
	user := "# Users\n## Preferences\n- My favourite editor is Vim."
	prompt := "## Findings to apply\n[USER] I drink tea.\n[USER] My favourite editor is Helix. (instead of Vim)\n[USER] I drink tea.\n[MEMORY] We deploy on Fridays.\n" +
		"\n## Current memory files\n" +
		"\n### memory/MEMORY.md (0 characters)\n(empty)\n" +
		"\n### SOUL.md (6 characters)\n# Soul\n" +
		"\n### USER.md (" + strconv.Itoa(len([]rune(user))) + " characters)\n" + user + "\n"
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "edit"}, {Role: llm.RoleUser, Content: prompt}}
	tools := []string{"read_file", "edit_file"}
	files := map[string]string{"USER.md": user + "\n", "memory/MEMORY.md": ""}
	for call := 1; ; call++ {
		reply := OneEditModel(Request{Messages: msgs, Tools: tools})
		if len(reply.ToolCalls) == 0 {
			if reply.Text != "Done." || call != 4 {
				t.Fatalf("call %d: %q, want Done. after three edits", call, reply.Text)
			}
			break
		}
		if len(reply.ToolCalls) != 1 || call > 3 {
			t.Fatalf("call %d: %+v", call, reply.ToolCalls)
		}
		var a oneEditCall
		if err := json.Unmarshal([]byte(reply.ToolCalls[0].Arguments), &a); err != nil {
			t.Fatal(err)
		}
		if a.OldText != "" && strings.Count(files[a.Path], a.OldText) != 1 {
			t.Fatalf("call %d: old_text %q is not once in %s:\n%s", call, a.OldText, a.Path, files[a.Path])
		}
		files[a.Path] = applyEdit(files[a.Path], a)
		id := "call_" + strconv.Itoa(call)
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "edit_file", Arguments: reply.ToolCalls[0].Arguments}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "edit_file", Content: "Edited " + a.Path + ": replaced the text at line 1."})
	}
	if want := "# Users\n## Preferences\n- My favourite editor is Helix.\n- I drink tea.\n"; files["USER.md"] != want {
		t.Errorf("USER.md:\n%s\nwant:\n%s", files["USER.md"], want)
	}
	if want := "- We deploy on Fridays.\n"; files["memory/MEMORY.md"] != want {
		t.Errorf("MEMORY.md:\n%q\nwant %q", files["memory/MEMORY.md"], want)
	}
}

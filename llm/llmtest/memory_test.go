package llmtest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

func TestMemoryModelArchive(t *testing.T) {
	transcript := "Archive this part of the conversation (4 messages, oldest first):\n\n" +
		"[2026-04-03 00:02] USER: Hi, I'm Alice and I live in Lisbon. How are you?\n" +
		"[2026-04-03 00:02] ASSISTANT: I am fine and I remember everything you say.\n" +
		"[2026-04-03 00:03] USER: thanks a lot\n" +
		"[2026-04-03 00:03] TOOL read_file: Dana is on call this week.\nEscalate to Priya after an hour."
	got := MemoryModel(Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "archive"}, {Role: llm.RoleUser, Content: transcript}}})
	want := "- Hi, I'm Alice and I live in Lisbon.\n- Dana is on call this week.\n- Escalate to Priya after an hour."
	if got.Text != want {
		t.Errorf("archive:\n%s\nwant:\n%s", got.Text, want)
	}
	small := "Archive this part of the conversation (2 messages, oldest first):\n\n[x] USER: hi there\n[x] ASSISTANT: Hello! How can I help you today?"
	if got := MemoryModel(Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: small}}}); got.Text != "(nothing)" {
		t.Errorf("small talk archived: %q", got.Text)
	}
}

func TestMemoryModelAnalysis(t *testing.T) {
	prompt := "## Archive entries (oldest first)\n" +
		"[2026-04-03 00:02] - Hi, I'm Alice and I live in Lisbon.\n- My phone number is 555-0142.\n" +
		"[2026-04-03 00:05] - Actually I moved to Porto last month, not Lisbon.\n- Please forget my phone number.\n" +
		"- Please keep your answers short.\n- We deploy on Fridays.\n" +
		"- I'm in Berlin until Friday for a workshop.\n- Please always answer in English.\n" +
		"\n## Today\n2026-04-03 (Friday)\n\n## Current USER.md (3 characters)\n- x\n"
	got := MemoryModel(Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}})
	want := strings.Join([]string{
		"[USER] Hi, I'm Alice and I live in Lisbon.",
		"[USER] My phone number is 555-0142.",
		"[FILE-REMOVE] Lisbon",
		"[USER] Actually I moved to Porto last month.",
		"[FILE-REMOVE] phone number",
		"[SOUL] Please keep your answers short.",
		"[MEMORY] We deploy on Fridays.",
		"[USER] [ephemeral] I'm in Berlin until Friday for a workshop.",
		"[SOUL] [permanent] Please always answer in English.",
	}, "\n")
	if got.Text != want {
		t.Errorf("analysis:\n%s\nwant:\n%s", got.Text, want)
	}
	empty := "## Archive entries (oldest first)\n[x] [RAW] 2 messages\n\n## Today\n"
	if got := MemoryModel(Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: empty}}}); got.Text != "[SKIP]" {
		t.Errorf("no facts: %q", got.Text)
	}
}

func TestMemoryModelEdit(t *testing.T) {
	user := "# Users\n- Hi, I'm Alice and I live in Lisbon.\n- Phone number 555"
	prompt := "## Findings to apply\n[USER] Actually I moved to Porto.\n[FILE-REMOVE] lisbon\n[MEMORY] We deploy on Fridays.\n[FILE-REMOVE] phone number\n" +
		"\n## Current memory files\n" +
		"\n### memory/MEMORY.md (0 characters)\n(empty)\n" +
		"\n### SOUL.md (6 characters)\n# Soul\n" +
		"\n### USER.md (" + strconv.Itoa(len([]rune(user))) + " characters)\n" + user + "\n"
	req := Request{Tools: []string{"read_file", "edit_file"}, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "edit"}, {Role: llm.RoleUser, Content: prompt}}}
	got := MemoryModel(req)
	if len(got.ToolCalls) != 2 {
		t.Fatalf("want one edit per changed file (MEMORY, USER), got %+v", got)
	}
	var mem, usr map[string]string
	_ = json.Unmarshal([]byte(got.ToolCalls[0].Arguments), &mem)
	_ = json.Unmarshal([]byte(got.ToolCalls[1].Arguments), &usr)
	if mem["path"] != "memory/MEMORY.md" || mem["old_text"] != "" || mem["new_text"] != "- We deploy on Fridays." {
		t.Errorf("MEMORY edit: %v", mem)
	}
	if usr["path"] != "USER.md" || editResult(user, usr) != "# Users\n- Actually I moved to Porto." {
		t.Errorf("USER edit: %v", usr)
	}
	// A finding's priority is not part of its fact, and a line that states
	// the fact already is not added again, whatever its metadata comment.
	stamped := "# Users\n- Alice moved to Porto. <!-- durable 2026-04-03 src:2 -->"
	again := "## Findings to apply\n[USER] [ephemeral] Alice moved to Porto.\n[USER] [durable] Alice codes in Go.\n" +
		"\n## Current memory files\n" +
		"\n### USER.md (" + strconv.Itoa(len([]rune(stamped))) + " characters)\n" + stamped + "\n"
	got2 := MemoryModel(Request{Tools: req.Tools, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "edit"}, {Role: llm.RoleUser, Content: again}}})
	var usr2 map[string]string
	if len(got2.ToolCalls) == 1 {
		_ = json.Unmarshal([]byte(got2.ToolCalls[0].Arguments), &usr2)
	}
	if editResult(stamped, usr2) != stamped+"\n- Alice codes in Go." {
		t.Errorf("edit of a stamped file: %+v", got2)
	}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: got.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c", Content: "ok"})
	if got := MemoryModel(req); got.Text != "Done." || len(got.ToolCalls) != 0 {
		t.Errorf("after the tool results: %+v", got)
	}
}

// editResult is what edit_file makes of text: old_text found once, replaced.
func editResult(text string, args map[string]string) string {
	if args == nil || strings.Count(text, args["old_text"]) != 1 {
		return "(old_text not found once)"
	}
	return strings.Replace(text, args["old_text"], args["new_text"], 1)
}

func TestMemoryModelChat(t *testing.T) {
	system := "You are an AI assistant.\n\n# Instructions (AGENTS.md)\n- Deploy everything on Mondays.\n\n# Soul (SOUL.md)\n- Short answers.\n\n" +
		"# Users (USER.md)\n- Alice lives in Porto.\n- Bob answers the slack channel on Monday.\n\n# Recent history\n\n- [2026-03-01 10:00] - Bob lives in Porto."
	chat := func(msgs ...llm.Message) Reply {
		return MemoryModel(Request{Tools: []string{"read_file", "write_file"},
			Messages: append([]llm.Message{{Role: llm.RoleSystem, Content: system}}, msgs...)})
	}
	if got := chat(llm.Message{Role: llm.RoleUser, Content: "Where does Alice live?"}); got.Text != "Alice lives in Porto." {
		t.Errorf("question: %q", got.Text)
	}
	// The gateway's header and the sender's name are not the question.
	if got := chat(llm.Message{Role: llm.RoleUser, Content: "[Now: Monday 2026-03-02 09:00 UTC. Channel: slack. Conversation: slack:C1. Sender: Bob (U2).]\n\n[Bob] Where does Alice live?"}); got.Text != "Alice lives in Porto." {
		t.Errorf("question under a header: %q", got.Text)
	}
	if got := chat(llm.Message{Role: llm.RoleUser, Content: "When do we deploy?"}); got.Text != "I don't know." {
		t.Errorf("AGENTS.md is not memory: %q", got.Text)
	}
	got := chat(llm.Message{Role: llm.RoleUser, Content: "Could you read notes/oncall.txt, please?"})
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "read_file" || got.ToolCalls[0].Arguments != `{"path":"notes/oncall.txt"}` {
		t.Errorf("read request: %+v", got)
	}
	if got := chat(llm.Message{Role: llm.RoleTool, Content: "Dana is on call.\nmore"}); got.Text != "It says: Dana is on call." {
		t.Errorf("after a tool result: %q", got.Text)
	}
	if got := chat(llm.Message{Role: llm.RoleUser, Content: "I like tea."}); got.Text != "Got it." {
		t.Errorf("statement: %q", got.Text)
	}
}

// With the recall tool offered, a question no memory line answers whole
// is searched for with the question's words, and the search's best match
// answers it; a question the memory shown answers is answered directly.
func TestMemoryModelRecall(t *testing.T) {
	system := "You are an AI assistant.\n\n# Users (USER.md)\n- The code word for project P101 is MAPLE1.\n"
	chat := func(msgs ...llm.Message) Reply {
		return MemoryModel(Request{Tools: []string{"read_file", "recall"},
			Messages: append([]llm.Message{{Role: llm.RoleSystem, Content: system}}, msgs...)})
	}
	if got := chat(llm.Message{Role: llm.RoleUser, Content: "What is the code word for project P101?"}); got.Text != "The code word for project P101 is MAPLE1." {
		t.Errorf("a question the memory answers: %+v", got)
	}
	q := llm.Message{Role: llm.RoleUser, Content: "[Ana] What is the code word for project P202?"}
	got := chat(q)
	if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "recall" || got.ToolCalls[0].Arguments != `{"query":"code word project p202"}` {
		t.Fatalf("a question the memory does not answer: %+v", got)
	}
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "recall", Arguments: got.ToolCalls[0].Arguments}}}
	result := "2 found for \"code word project p202\", best first:\n" +
		"- 2026-03-01 10:00, archive entry 4 from conversation slack:C1: - The code word for project P2021 is OAK12.\n" +
		"- 2026-03-01 10:00, archive entry 9 from conversation slack:C1: - The code word for project P202 is MAPLE2."
	if got := chat(q, call, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: result}); got.Text != "I found: The code word for project P202 is MAPLE2." {
		t.Errorf("after the recall result: %q", got.Text)
	}
	if got := chat(q, call, llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: `Nothing found for "code word project p202" in what this conversation may see.`}); got.Text != "I don't know." {
		t.Errorf("after an empty recall result: %q", got.Text)
	}
}

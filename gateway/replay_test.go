package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/llm"
)

func TestReplayKeepsTheWireValid(t *testing.T) {
	st, err := session.NewStore(filepath.Join(t.TempDir(), "s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _ := st.Get("k")
	msgs := []llm.Message{
		{Role: llm.RoleTool, ToolCallID: "orphan", Content: "left from an archived turn"},
		{Role: llm.RoleAssistant, Content: "before any user"},
		{Role: llm.RoleUser, Content: "u1"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "read_file"}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "ok"},
		{Role: llm.RoleAssistant, Content: "partial", ToolCalls: []llm.ToolCall{{ID: "crashed", Name: "read_file"}}},
		{Role: llm.RoleUser, Content: "u2"},
	}
	if err := s.Append(msgs...); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range replay(s, s.LastConsolidated()) {
		tag := m.Role + ":" + m.Content
		if len(m.ToolCalls) > 0 {
			tag += "+calls"
		}
		got = append(got, tag)
	}
	want := "user:u1,assistant:+calls,tool:ok,assistant:partial,user:u2"
	if strings.Join(got, ",") != want {
		t.Errorf("replay = %s\nwant     %s", strings.Join(got, ","), want)
	}
}

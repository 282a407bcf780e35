package consolidator

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The archive outcomes again, through the real client and the fake
// OpenAI-compatible server: what the wire carries, not what a Go fake
// returns.
func TestArchiveOutcomesOverTheWire(t *testing.T) {
	tests := []struct {
		name      string
		reply     llmtest.Reply
		wantEntry string // "" no entry; "[RAW]" a raw one
	}{
		{"summary", llmtest.Text("- Ana prefers tea"), "- Ana prefers tea"},
		{"nothing", llmtest.Text("(nothing)"), ""},
		{"server error", llmtest.Status(500, ""), "[RAW]"},
		{"rejected request", llmtest.Status(400, ""), "[RAW]"},
		{"malformed body", llmtest.Malformed(), "[RAW]"},
		{"empty answer", llmtest.Text(""), "[RAW]"},
		{"cut-off answer", llmtest.Reply{Text: "- Ana prefers", FinishReason: "length"}, "[RAW]"},
		{"tool call", llmtest.ToolCall("write_file", `{"path":"USER.md","content":"x"}`), "[RAW]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tt.reply, llmtest.Text("- later facts"))
			client := llm.New(llm.Config{
				BaseURL: srv.URL(), Model: "default-model", MaxTries: 1,
				BaseDelay: time.Millisecond, Timeout: 10 * time.Second,
			})
			c, store := newTestConsolidator(t, client, baseConfig)
			s := outcomeSession()

			rep, err := before(c, t.Context(), s)
			if err != nil {
				t.Fatal(err)
			}
			entries, _ := store.Since(0, 0)
			switch {
			case tt.wantEntry == "" && len(entries) != 0:
				t.Errorf("want no entry, got %.60q", entries[0].Content)
			case tt.wantEntry == "[RAW]" && (len(entries) != 1 || !strings.HasPrefix(entries[0].Content, "[RAW] 4 messages\n")):
				t.Errorf("want a raw entry, got %d entries", len(entries))
			case tt.wantEntry != "" && tt.wantEntry != "[RAW]" && (len(entries) != 1 || entries[0].Content != tt.wantEntry):
				t.Errorf("want entry %q, got %+v", tt.wantEntry, entries)
			}
			if s.lc != 4 {
				t.Errorf("LastConsolidated = %d, want 4", s.lc)
			}
			if rep.Raw != (tt.wantEntry == "[RAW]") {
				t.Errorf("Raw = %v", rep.Raw)
			}
			if usage := client.Usage()[llm.PurposeArchive]; tt.reply.Status == 0 && tt.reply.Body == "" && (usage.Calls != 1 || rep.Usage != usage) {
				t.Errorf("usage: report %+v, client %+v", rep.Usage, usage)
			}

			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			req := reqs[0]
			if req.Problem != "" || len(req.Tools) != 0 || req.Model != "archiver" || len(req.Messages) != 2 {
				t.Errorf("request: problem %q, tools %v, model %q, %d messages", req.Problem, req.Tools, req.Model, len(req.Messages))
			}
			if tr := req.Messages[1].Content; !strings.Contains(tr, "TOOL read_file: EVIDENCE-42 Ana prefers tea") {
				t.Error("the archive request lacks the tool result")
			}

			// The failed (or done) slice is never sent again.
			if _, err := c.ArchiveTail(t.Context(), s); err != nil {
				t.Fatal(err)
			}
			reqs = srv.Requests()
			if len(reqs) != 2 || strings.Contains(reqs[1].Messages[1].Content, "EVIDENCE-42") {
				t.Error("archived messages were sent again")
			}
			all, _ := store.Since(0, 0)
			if got := cursors(all); !slices.Equal(got, append(cursors(entries), len(entries)+1)) {
				t.Errorf("cursors %v", got)
			}
		})
	}
}

package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/audience"
)

func TestToolDefinition(t *testing.T) {
	d := Tool(nil, nil, nil).Def()
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if d.Name != "recall" || schema.Type != "object" || len(schema.Required) != 1 || schema.Required[0] != "query" ||
		schema.Properties["query"] == nil || schema.Properties["limit"] == nil {
		t.Errorf("definition: %+v %s", d, d.Parameters)
	}
}

// The tool searches the scopes it was built with and no others, and says
// when and where each match was said, or plainly that nothing matched.
func TestToolSearchesItsAudienceOnly(t *testing.T) {
	f := secretsFixture(t)
	readable := anaDM.Readable()
	tool := Tool(f.idx, readable, nil)
	readable[0], readable[1] = audience.Default, private.Home() // the caller's slice changing later changes nothing
	run := func(args string) string {
		t.Helper()
		out, err := tool.Run(context.Background(), json.RawMessage(args))
		if err != nil {
			t.Fatalf("Run(%s): %v", args, err)
		}
		return out
	}
	out := run(`{"query":"salary band"}`)
	for _, want := range []string{
		"found for \"salary band\"",
		"Ana in conversation slack:DANA (message 0)",
		"archive entry 1 from conversation slack:DANA",
		"cold memory line 1",
		"2026-11-20 14:03",
		"2026-01-02",
		"[person-slack-t1-uana]",
		"[team-slack-t1]",
		"K7Q2Z9",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("result lacks %q:\n%s", want, out)
		}
	}
	for _, leak := range []string{"VORTEXPLUM", "operator notes", "team two"} {
		if strings.Contains(out, leak) {
			t.Errorf("result holds %q from a scope Ana's DM may not read:\n%s", leak, out)
		}
	}
	if out := run(`{"query":"salary","limit":1}`); strings.Count(out, "\n- ") != 1 {
		t.Errorf("limit 1:\n%s", out)
	}
	if out := run(`{"query":"VORTEXPLUM"}`); out != `Nothing found for "VORTEXPLUM" in what this conversation may see.` {
		t.Errorf("nothing found: %q", out)
	}
	if out := run(`{"query":"?!"}`); !strings.Contains(out, "no words") {
		t.Errorf("query without words: %q", out)
	}
	for _, bad := range []string{`{}`, `{"query":""}`, `{"query":3}`, `not json`} {
		if _, err := tool.Run(context.Background(), json.RawMessage(bad)); err == nil {
			t.Errorf("Run(%s) did not fail", bad)
		}
	}
}

type failingSearcher struct{ err error }

func (s failingSearcher) Search(context.Context, string, []audience.Scope, int) (Results, error) {
	return Results{}, s.err
}

// Errors reach the model as one sentence, never the index's own words.
func TestToolErrorsAreSentences(t *testing.T) {
	for _, err := range []error{ErrUnavailable, errors.New("sqlite: disk I/O error at /secret/path")} {
		_, got := Tool(failingSearcher{err}, []audience.Scope{audience.Default}, nil).Run(context.Background(), json.RawMessage(`{"query":"x"}`))
		if got == nil || strings.Contains(got.Error(), "/secret") || strings.Contains(got.Error(), "sqlite") {
			t.Errorf("error %v shown as %v", err, got)
		}
	}
}

// manySearcher finds n long matches.
type manySearcher struct{ n int }

func (s manySearcher) Search(_ context.Context, q string, readable []audience.Scope, limit int) (Results, error) {
	var res Results
	for i := range min(s.n, limit) {
		res.Matches = append(res.Matches, Match{Scope: readable[0], Kind: KindMessage, Conversation: "slack:C1", Index: i, Who: "Ana",
			Text: fmt.Sprintf("match %d: ", i) + strings.TrimSpace(strings.Repeat("a long sentence about the thing asked for. ", 6))})
	}
	res.Incomplete = true
	return res, nil
}

// The answer stays short whatever the limit asked for: whole match lines,
// best first, and a note of how many were left out; within what the
// archive keeps of a tool result, so it is never cut mid-line there.
func TestToolAnswerIsBounded(t *testing.T) {
	out, err := Tool(manySearcher{n: 50}, []audience.Scope{audience.Default, "team-slack-t1"}, nil).Run(context.Background(), json.RawMessage(`{"query":"thing","limit":50}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(out); n > maxResultChars {
		t.Errorf("the answer has %d characters, over %d", n, maxResultChars)
	}
	lines := strings.Split(out, "\n")
	shown := 0
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "- ") {
			if !strings.HasSuffix(l, "asked for.") {
				t.Errorf("a match line is cut: %q", l)
			}
			if !strings.Contains(l, fmt.Sprintf("match %d:", shown)) {
				t.Errorf("line %d is not the match %d: %q", shown+1, shown, l)
			}
			shown++
		}
	}
	if shown == 0 || shown == 50 || !strings.Contains(out, fmt.Sprintf("(%d more not shown", 50-shown)) {
		t.Errorf("%d matches shown; the answer:\n%s", shown, out)
	}
	if !strings.Contains(out, "still being built") {
		t.Errorf("the incomplete note was dropped:\n%s", out)
	}
}

package recall

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

func TestToolDefinition(t *testing.T) {
	d := Tool(nil, nil).Def()
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
	tool := Tool(f.idx, readable)
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
		_, got := Tool(failingSearcher{err}, []audience.Scope{audience.Default}).Run(context.Background(), json.RawMessage(`{"query":"x"}`))
		if got == nil || strings.Contains(got.Error(), "/secret") || strings.Contains(got.Error(), "sqlite") {
			t.Errorf("error %v shown as %v", err, got)
		}
	}
}

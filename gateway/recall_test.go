package gateway

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/recall"
)

// scopeSearcher records the scopes each search may read and finds one
// thing in each scope it is given.
type scopeSearcher struct {
	mu    sync.Mutex
	asked [][]audience.Scope
}

func (s *scopeSearcher) Search(_ context.Context, query string, readable []audience.Scope, _ int) (recall.Results, error) {
	s.mu.Lock()
	s.asked = append(s.asked, slices.Clone(readable))
	s.mu.Unlock()
	var res recall.Results
	for _, sc := range readable {
		res.Matches = append(res.Matches, recall.Match{Scope: sc, Kind: recall.KindCold, Line: 1, Text: query + " in [" + string(sc) + "]"})
	}
	return res, nil
}

// Every turn is offered the recall tool, and it searches the scopes the
// turn's audience may read: a public channel its team's, a DM its team's
// and the person's, the operator the default scope; with memory shared,
// everyone the default scope.
func TestRecallToolSearchesTheTurnsAudience(t *testing.T) {
	dm := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	team := audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	for _, shared := range []bool{false, true} {
		searcher := &scopeSearcher{}
		env := newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
			last := req.Messages[len(req.Messages)-1]
			if last.Role == llm.RoleUser && slices.ContainsFunc(req.Tools, func(d llm.ToolDef) bool { return d.Name == recall.ToolName }) {
				return llm.Response{ToolCalls: []llm.ToolCall{{ID: "r1", Name: recall.ToolName, Arguments: `{"query":"falcon"}`}}, FinishReason: llm.FinishToolCalls}, nil
			}
			return textReply("tool said: " + last.Content), nil
		}, func(c *Config, d *Deps) {
			d.Recall = searcher
			d.ScopeFiles = nil
			d.Memory = memory.New(memory.NewDisk(c.Workspace), shared)
		})
		for i, a := range []audience.Audience{team, dm, operator} {
			in := inbound("c"+string(rune('a'+i)), "what about falcon?")
			in.Audience = a
			r := wait(t, must(env.g.Submit(t.Context(), in)))
			want := a.Readable()
			if shared {
				want = []audience.Scope{audience.Default}
			}
			searcher.mu.Lock()
			got := searcher.asked[len(searcher.asked)-1]
			searcher.mu.Unlock()
			if !slices.Equal(got, want) {
				t.Errorf("shared=%v, %s: searched %v, want %v", shared, a, got, want)
			}
			for _, s := range want {
				if !strings.Contains(r.Reply, "falcon in ["+string(s)+"]") {
					t.Errorf("shared=%v, %s: reply %q lacks the match of %q", shared, a, r.Reply, s)
				}
			}
		}
	}
}

// The system prompt names the recall tool exactly when the turn is offered
// it, whatever the prompt builder was told: never a tool the model cannot
// call, and never "what is not here you do not remember" beside a search
// that would find it.
func TestPromptNamesRecallOnlyWhenOffered(t *testing.T) {
	for _, offered := range []bool{false, true} {
		var (
			mu     sync.Mutex
			system string
			tools  []string
		)
		env := newTestEnv(t, func(_ context.Context, req llm.Request) (llm.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			system, tools = "", nil
			for _, m := range req.Messages {
				if m.Role == llm.RoleSystem {
					system += m.Content
				}
			}
			for _, d := range req.Tools {
				tools = append(tools, d.Name)
			}
			return textReply("ok"), nil
		}, func(_ *Config, d *Deps) {
			// Told the opposite of what is wired.
			d.Prompts.WithHotMemory(HotMemory{Recall: !offered})
			if offered {
				d.Recall = &scopeSearcher{}
			}
		})
		wait(t, must(env.g.Submit(t.Context(), inbound("c", "hello"))))
		mu.Lock()
		hasTool := slices.Contains(tools, recall.ToolName)
		named := strings.Contains(system, "recall tool")
		mu.Unlock()
		if hasTool != offered {
			t.Errorf("offered=%v: tools %v", offered, tools)
		}
		if named != offered {
			t.Errorf("offered=%v: the system prompt names the recall tool: %v", offered, named)
		}
		if offered && strings.Contains(system, "If something is not here, you do not remember it") {
			t.Errorf("offered: the prompt still says what is not shown is not known")
		}
	}
}

// /why, when no memory line holds the words, says where they were said
// before, searching only what the asker may read; when a line holds them,
// it does not search.
func TestWhyFallsBackToRecall(t *testing.T) {
	searcher := &scopeSearcher{}
	env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil },
		func(_ *Config, d *Deps) { d.Recall = searcher })
	got := wait(t, must(env.g.Submit(t.Context(), inbound("c", "/why falcon nest")))).Reply
	for _, want := range []string{`No remembered line holds "falcon nest".`, "What was said before holds it", "- undated, cold memory: falcon nest in []"} {
		if !strings.Contains(got, want) {
			t.Errorf("/why lacks %q:\n%s", want, got)
		}
	}
	searcher.mu.Lock()
	asked := slices.Clone(searcher.asked)
	searcher.mu.Unlock()
	if len(asked) != 1 || !slices.Equal(asked[0], operator.Readable()) {
		t.Errorf("/why searched %v, want the operator's scopes once", asked)
	}
	writeMemory(t, env.ws, audience.Default, "USER.md", "# User\n\n- The falcon nest is on the roof.\n")
	got = wait(t, must(env.g.Submit(t.Context(), inbound("c", "/why falcon nest")))).Reply
	if !strings.Contains(got, "The falcon nest is on the roof.") || strings.Contains(got, "said before") {
		t.Errorf("/why with a memory line:\n%s", got)
	}
	searcher.mu.Lock()
	defer searcher.mu.Unlock()
	if len(searcher.asked) != 1 {
		t.Errorf("/why searched the index though memory holds the line: %v", searcher.asked)
	}
}

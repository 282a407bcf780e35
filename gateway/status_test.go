package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"
)

// /status's budget line comes from the consolidator's report: the gateway
// knows neither the context window nor the reply's allowance.
func TestStatusShowsTheConsolidatorsBudget(t *testing.T) {
	tests := []struct {
		name              string
		window, maxTokens int
		usable            string // "" when the budget is off: no line
	}{
		{"small window", 16000, 2000, "13.0k"}, // 16000 - 2000 - 1024
		{"default window", 128000, 4096, "122.9k"},
		{"budget off", 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, func(context.Context, llm.Request) (llm.Response, error) { return textReply("ok"), nil }, nil)
			cons := useRealConsolidator(t, env, tt.window, tt.maxTokens)
			wait(t, must(env.g.Submit(t.Context(), inbound("st", "hello"))))
			r := wait(t, must(env.g.Submit(t.Context(), inbound("st", "/status"))))

			sess, err := env.sessions.Get("test:st")
			if err != nil {
				t.Fatal(err)
			}
			bu := cons.Status(sess, consolidator.Prompt{Fixed: env.g.deps.Prompts.Fixed(operatorView), Tools: env.g.toolText})
			if tt.usable == "" {
				if strings.Contains(r.Reply, "Prompt:") || bu.Limit != 0 || bu.Estimate != 0 {
					t.Errorf("budget off, yet /status shows one:\n%s", r.Reply)
				}
				return
			}
			if kTokens(bu.Limit) != tt.usable || bu.Estimate < 500 { // identity, files, tools: several hundred tokens
				t.Fatalf("consolidator's budget %+v", bu)
			}
			want := fmt.Sprintf("Prompt: about %s tokens of %s usable (%d%%)\n", kTokens(bu.Estimate), tt.usable, bu.Estimate*100/bu.Limit)
			if !strings.Contains(r.Reply, want) {
				t.Errorf("/status lacks %q:\n%s", want, r.Reply)
			}
		})
	}
}

// runningTools is a TurnTools that can say what is running without
// starting it; ForTurn (which would start servers) must not be asked.
type runningTools struct {
	adminTools
	notRunning int
}

func (r *runningTools) RunningTools(t ToolTurn) ([]agent.Tool, int) {
	if !t.Admin {
		return nil, 0
	}
	return []agent.Tool{bigTool{}}, r.notRunning
}

// bigTool is a per-turn tool whose definition costs about 2k tokens.
type bigTool struct{}

func (bigTool) Def() llm.ToolDef {
	return llm.ToolDef{Name: "mcp_docs_search", Description: strings.Repeat("searches the docs ", 500), Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (bigTool) Run(context.Context, json.RawMessage) (string, error) { return "", nil }

// /status counts the tools a turn from its sender would be offered: the
// running MCP servers' tools too, without starting the others, and says
// what it left out.
func TestStatusCountsTheSendersTurnTools(t *testing.T) {
	tests := []struct {
		name       string
		tools      TurnTools
		admin      bool
		extra      []agent.Tool // counted beyond the file tools
		wantSuffix string
	}{
		{"admin, all running", &runningTools{}, true, []agent.Tool{bigTool{}}, ")\n"},
		{"admin, one not running", &runningTools{notRunning: 1}, true, []agent.Tool{bigTool{}},
			"), not counting the tools of 1 MCP server that is not running\n"},
		{"not an admin", &runningTools{notRunning: 2}, false, nil, ")\n"},
		{"cannot tell without starting", &adminTools{}, true, nil, "), not counting MCP tools\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newTestEnv(t, noModel(t), func(c *Config, d *Deps) {
				c.Admins = []string{"test:BOSS"}
				d.TurnTools = tt.tools
			})
			cons := useRealConsolidator(t, env, 128000, 4096)
			in := inbound("st", "/status")
			if tt.admin {
				in.SenderID = "BOSS"
			}
			r := wait(t, must(env.g.Submit(t.Context(), in)))

			sess, err := env.sessions.Get("test:st")
			if err != nil {
				t.Fatal(err)
			}
			bu := cons.Status(sess, consolidator.Prompt{Fixed: env.g.deps.Prompts.Fixed(operatorView), Tools: env.g.toolText + toolText(tt.extra)})
			want := fmt.Sprintf("Prompt: about %s tokens of %s usable (%d%%", kTokens(bu.Estimate), kTokens(bu.Limit), bu.Estimate*100/bu.Limit)
			if !strings.Contains(r.Reply, want+tt.wantSuffix) {
				t.Errorf("/status lacks %q:\n%s", want+tt.wantSuffix, r.Reply)
			}
			switch ft := tt.tools.(type) {
			case *runningTools:
				if len(ft.asked) != 0 {
					t.Error("/status asked ForTurn, which starts servers")
				}
			case *adminTools:
				if len(ft.asked) != 0 {
					t.Error("/status asked ForTurn, which starts servers")
				}
			}
		})
	}
}

func TestStatusShowsCachedInput(t *testing.T) {
	for _, tc := range []struct {
		usage map[string]llm.Usage
		want  string
	}{
		{map[string]llm.Usage{
			"chat":    {PromptTokens: 40000, CachedTokens: 36096, CompletionTokens: 300, Calls: 3},
			"archive": {PromptTokens: 9000, CachedTokens: 1024, CompletionTokens: 200, Calls: 1},
		}, "Tokens used: 49.0k in (37.1k from the provider's cache), 500 out in 4 calls (archive 9.2k, chat 40.3k)\n"},
		// A provider that reports no cache: nothing claimed either way.
		{map[string]llm.Usage{"chat": {PromptTokens: 1500, CompletionTokens: 20, Calls: 2}},
			"Tokens used: 1.5k in, 20 out in 2 calls (chat 1.5k)\n"},
	} {
		if got := usageLine(tc.usage); got != tc.want {
			t.Errorf("usageLine = %q, want %q", got, tc.want)
		}
	}
}

// /status says when the model is unreachable (its last call got no
// answer: a 5xx here, through the real client), in the operator's words at
// the terminal and in one plain sentence elsewhere, and stops saying it
// once a call gets through.
func TestStatusSaysTheModelIsUnreachable(t *testing.T) {
	srv := llmtest.New(t)
	srv.Push(llmtest.Status(503, ""), llmtest.Text("back"))
	client := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", Timeout: 10 * time.Second, MaxTries: 1})
	env := newTestEnv(t, nil, func(_ *Config, d *Deps) { d.Model, d.ModelState = client, client.State })
	status := func(local bool) string {
		t.Helper()
		in := inbound("st", "/status")
		in.Local = local
		first, _, _ := strings.Cut(wait(t, must(env.g.Submit(t.Context(), in))).Reply, "\n")
		return first
	}
	if got := status(true); got != "Model: test-model" {
		t.Errorf("before any call: %q", got)
	}
	if r := wait(t, must(env.g.Submit(t.Context(), inbound("st", "hello")))); r.Err == nil {
		t.Fatalf("the turn on a failing model: %+v", r)
	}
	if got := status(true); !strings.HasPrefix(got, "Model: test-model — unreachable: its last call failed ") || !strings.HasSuffix(got, "(the cause is in the gateway log).") {
		t.Errorf("operator's /status after a failed call: %q", got)
	}
	if got := status(false); got != "Model: test-model — not answering right now; the operator has been told." {
		t.Errorf("a person's /status after a failed call: %q", got)
	}
	if r := wait(t, must(env.g.Submit(t.Context(), inbound("st", "again")))); r.Reply != "back" {
		t.Fatalf("the turn after the model came back: %+v", r)
	}
	if got := status(false); got != "Model: test-model" {
		t.Errorf("/status once the model answers again: %q", got)
	}
}

// /status in a conversation counts its own tokens — its chat turns and the
// archives of its messages — never the gateway's totals, which every
// audience's calls make: Bob's public channel does not read how much Ana
// said in her DM. The operator at the terminal reads the totals.
func TestStatusInAConversationCountsItsOwnTokens(t *testing.T) {
	model := func(_ context.Context, req llm.Request) (llm.Response, error) {
		r := textReply("ok")
		r.Usage = llm.Usage{PromptTokens: 1000, CompletionTokens: 10, Calls: 1}
		if strings.Contains(req.Messages[len(req.Messages)-1].Content, "long") {
			r.Usage = llm.Usage{PromptTokens: 90000, CompletionTokens: 900, Calls: 1}
		}
		return r, nil
	}
	env := newTestEnv(t, model, func(c *Config, d *Deps) {
		ws, err := workspace.Open(c.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		d.ScopeFiles = ScopeFolders{Root: ws}
		d.Consolidator = &archivingConsolidator{}
	})
	env.g.deps.Usage = func() map[string]llm.Usage {
		return map[string]llm.Usage{"chat": {PromptTokens: 93000, CompletionTokens: 930, Calls: 5}}
	}
	say := func(a audience.Audience, key, sender, text string) string {
		t.Helper()
		in := withAudience(inbound(key, text), a)
		in.SenderID = sender
		return wait(t, mustSubmit(t, env, in)).Reply
	}
	say(anaDM, "dm-ana", "UANA", "a long talk about my salary")
	say(anaDM, "dm-ana", "UANA", "more")
	say(slackTeam, "general", "UBOB", "hello")
	say(slackTeam, "general", "UBOB", "hello again")

	got := say(slackTeam, "general", "UBOB", "/status")
	if want := "Tokens used in this conversation: 2.6k in, 30 out in 4 calls (archive 610, chat 2.0k)\n"; !strings.Contains(got, want) {
		t.Errorf("#general's /status lacks %q:\n%s", want, got)
	}
	if strings.Contains(got, "93.0k") || strings.Contains(got, "91.0k") || strings.Contains(got, "Tokens used:") {
		t.Errorf("#general's /status shows tokens of other conversations:\n%s", got)
	}
	if got := say(anaDM, "dm-ana", "UANA", "/status"); !strings.Contains(got, "Tokens used in this conversation: 91.6k in, 920 out in 4 calls") {
		t.Errorf("Ana's /status:\n%s", got)
	}
	if got := say(slackTeam, "quiet", "UBOB", "/status"); !strings.Contains(got, "Tokens used in this conversation: none yet\n") {
		t.Errorf("a new conversation's /status:\n%s", got)
	}
	in := inbound("terminal", "/status")
	in.Local = true
	if got := wait(t, mustSubmit(t, env, in)).Reply; !strings.Contains(got, "Tokens used: 93.0k in, 930 out in 5 calls (chat 93.9k)") {
		t.Errorf("the operator's /status:\n%s", got)
	}
}

// archivingConsolidator archives after every turn, at a cost its report
// states.
type archivingConsolidator struct{ fakeConsolidator }

func (*archivingConsolidator) After(context.Context, consolidator.Session, consolidator.Prompt, consolidator.Sent) (consolidator.Report, error) {
	return consolidator.Report{Usage: llm.Usage{PromptTokens: 300, CompletionTokens: 5, Calls: 1}}, nil
}

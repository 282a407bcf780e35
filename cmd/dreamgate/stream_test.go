package main

import (
	"testing"

	"github.com/dreamgate/dreamgate/channels/terminal"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The terminal shows a reply as the model streams it, through the real llm
// client and llmtest's server-sent events, wired as `dreamgate chat` wires a
// terminal at a TTY: the step before a tool call on a line of its own, the
// answer once, nothing repeated.
func TestTerminalStreamsThroughTheRealClient(t *testing.T) {
	h := newHarness(t)
	step := llmtest.ToolCall("read_file", `{"path":"USER.md"}`)
	step.Text, step.Fragments = "Let me look.", []string{"Let me", " look."}
	h.llm.Push(step, llmtest.Reply{Text: "You are Ana, I think.", Fragments: []string{"You are", " Ana,", " I think."}})

	a := h.app()
	g, _ := a.gateway(false)
	var out, errOut testkit.Buffer
	term := terminal.New(terminal.Config{Out: &out, Err: &errOut, Stream: true})
	g.AddChannel(term)
	done, err := g.Submit(t.Context(), term.Inbound("who am I?"))
	if err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Err != nil {
		t.Fatalf("turn failed: %v (stderr %q)", r.Err, errOut.String())
	}
	if got, want := out.String(), "Let me look.\nYou are Ana, I think.\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	reqs := h.llm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if !r.Stream || r.Problem != "" {
			t.Errorf("request %d: stream %v, problem %q", i, r.Stream, r.Problem)
		}
		if err := r.CheckToolPairs(); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if u := a.model.Usage()[llm.PurposeChat]; u.Calls != 2 || u.PromptTokens == 0 {
		t.Errorf("chat usage with streaming = %+v, want 2 calls with their prompt tokens", u)
	}
}

// A model that leaks its reasoning: the terminal never shows it, and the
// answer is printed once.
func TestTerminalStreamHidesReasoning(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(llmtest.Reply{Text: "<think>secret</think>The visible answer.",
		Fragments: []string{"<think>", "secret", "</think>", "The visible", " answer."}})
	a := h.app()
	g, _ := a.gateway(false)
	var out, errOut testkit.Buffer
	term := terminal.New(terminal.Config{Out: &out, Err: &errOut, Stream: true, OutTerminal: true})
	g.AddChannel(term)
	done, err := g.Submit(t.Context(), term.Inbound("think"))
	if err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Err != nil {
		t.Fatalf("turn failed: %v (stderr %q)", r.Err, errOut.String())
	}
	if got, want := out.String(), "The visible answer.\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// A chat whose prompt cannot show the memory within memory.hotTokens asks
// for a deep Dream (the gateway's Deps.Deep: the Dream ledger's file, kept
// for the next Dream even by a one-shot chat), and the next Dream makes
// it: one "dream: deep" commit, the memory within its budget, every line
// in hot or cold memory.
func TestOverBudgetPromptAsksForADeepDream(t *testing.T) {
	h := newHarness(t)
	h.set("memory.hotTokens", 1000)
	h.llm.SetResponder(llmtest.MemoryModel)
	var b strings.Builder
	b.WriteString("# User\n\n- Ana wants answers in Portuguese. <!-- permanent 2025-01-01 -->\n")
	const facts = 150
	for i := range facts {
		fmt.Fprintf(&b, "- Ana's project P%03d is called Heron%03d. <!-- durable 2026-%02d-01 src:%d -->\n", i, i, 1+i%11, i+1)
	}
	if err := os.MkdirAll(h.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.ws, "USER.md"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("chat", "-m", "Hello there."); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	if asked, data := deepAsked(t, h.ws); len(asked) != 1 || asked[0] != "" {
		t.Fatalf("the request of the prompt over budget: %q", data)
	}

	r := h.run("dream", "run")
	if r.code != 0 || !strings.Contains(r.stdout, "Deep Dream:") {
		t.Fatalf("dream run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	hot, _ := os.ReadFile(filepath.Join(h.ws, "USER.md"))
	cold, _ := os.ReadFile(filepath.Join(h.ws, filepath.FromSlash(workspace.Cold)))
	nHot, nCold := len(memline.ParseFile(hot).Facts()), len(memline.ParseFile(cold).Facts())
	if nHot+nCold != facts+1 || nCold == 0 || !strings.Contains(string(hot), "Portuguese") {
		t.Errorf("%d lines in USER.md and %d in cold memory, want %d in all, the permanent one hot", nHot, nCold, facts+1)
	}
	if l := h.run("dream", "log"); !strings.Contains(l.stdout, "dream: deep —") {
		t.Errorf("dream log:\n%s", l.stdout)
	}
	if asked, data := deepAsked(t, h.ws); len(asked) != 0 {
		t.Errorf("the request after the deep Dream: %q", data)
	}
	t.Logf("%d lines hot, %d cold; %s", nHot, nCold, r.stdout)
}

// deepAsked lists the scopes the Dream ledger holds a deep Dream's request
// for, and the ledger as read.
func deepAsked(t *testing.T, ws string) ([]string, []byte) {
	t.Helper()
	var rec struct {
		Scopes map[string]struct {
			DeepAsked bool `json:"deep_asked"`
		} `json:"scopes"`
	}
	data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(workspace.DreamLedger)))
	if err != nil || json.Unmarshal(data, &rec) != nil {
		t.Fatalf("the Dream ledger: %q, %v", data, err)
	}
	var out []string
	for name, p := range rec.Scopes {
		if p.DeepAsked {
			out = append(out, name)
		}
	}
	return out, data
}

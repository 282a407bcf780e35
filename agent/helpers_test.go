package agent

import (
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/workspace"

	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// fixture is a workspace laid out like a real one, with a sibling directory
// "outside" that no tool may reach, and hostile links planted inside.
type fixture struct {
	base    string // holds ws/ and outside/
	dir     string // the workspace
	outside string
	w       *workspace.Root
}

// fixtureFiles are the regular files of a fresh fixture workspace. Every one
// holds "SECRET" so a test can try an edit that would succeed if allowed.
var fixtureFiles = map[string]string{
	"SOUL.md":              "# Soul\nSECRET soul\n",
	"USER.md":              "# User\nSECRET user\n",
	"AGENTS.md":            "# Agents\nSECRET agents\n",
	"memory/MEMORY.md":     "# Memory\nSECRET memory\n",
	"memory/history.jsonl": `{"cursor": 1, "timestamp": "2026-04-03 00:02", "content": "- SECRET fact"}` + "\n",
	"memory/.cursor":       "1 SECRET\n",
	"memory/.dream_cursor": "0 SECRET\n",
	"memory/history.lock":  "SECRET lock\n",
	".git/config":          "[core]\nSECRET config\n",
	"notes/todo.md":        "- SECRET todo\n",
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	base := tb.TempDir()
	fx := &fixture{base: base, dir: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	write := func(p, content string) {
		tb.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for rel, content := range fixtureFiles {
		write(filepath.Join(fx.dir, filepath.FromSlash(rel)), content)
	}
	write(filepath.Join(fx.outside, "secret.txt"), "SECRET outside\n")
	links := []struct{ target, name string }{
		{"../outside/secret.txt", "link_out"},                 // relative, out
		{filepath.Join(fx.outside, "secret.txt"), "link_abs"}, // absolute, out
		{"../outside", "linkdir"},                             // a directory out
		{"memory/history.jsonl", "link_hist"},                 // in, to a denied file
		{"memory", "memlink"},                                 // in, a directory
		{"../../outside/x", "memory/link_up"},                 // dangling, out
	}
	for _, l := range links {
		if err := os.Symlink(l.target, filepath.Join(fx.dir, filepath.FromSlash(l.name))); err != nil {
			tb.Skipf("symbolic links unavailable: %v", err)
		}
	}
	// A hard link to a file outside: the same file under a workspace name.
	if err := os.Link(filepath.Join(fx.outside, "secret.txt"), filepath.Join(fx.dir, "hardout")); err != nil {
		tb.Skipf("hard links unavailable: %v", err)
	}
	w, err := workspace.Open(fx.dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.Close() })
	fx.w = w
	return fx
}

// snapshot describes every entry under dir: type, mode, link target and a
// hash of the content, so a before/after comparison catches any write.
func snapshot(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	snap := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		snap[p] = desc
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return snap
}

func diffSnapshots(before, after map[string]string) []string {
	var d []string
	for p, b := range before {
		if a, ok := after[p]; !ok {
			d = append(d, "removed "+p)
		} else if a != b {
			d = append(d, "changed "+p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			d = append(d, "added "+p)
		}
	}
	return d
}

func toolByName(tb testing.TB, tools []Tool, name string) Tool {
	tb.Helper()
	for _, t := range tools {
		if t.Def().Name == name {
			return t
		}
	}
	tb.Fatalf("no tool %s", name)
	return nil
}

func args(tb testing.TB, kv ...string) json.RawMessage {
	tb.Helper()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkToolPairs is the rule strict providers enforce on a conversation:
// tool call ids are non-empty and unique; every assistant message with tool
// calls is followed by exactly one tool result per call, in order, with the
// call's id and name; no tool result stands anywhere else.
func checkToolPairs(msgs []llm.Message) error {
	seen := map[string]bool{}
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == llm.RoleTool {
			return fmt.Errorf("message %d: tool result %q answers no call", i, m.ToolCallID)
		}
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for k, c := range m.ToolCalls {
			if c.ID == "" {
				return fmt.Errorf("message %d: tool call %d has no id", i, k)
			}
			if seen[c.ID] {
				return fmt.Errorf("message %d: tool call id %q used twice", i, c.ID)
			}
			seen[c.ID] = true
			j := i + 1 + k
			if j >= len(msgs) {
				return fmt.Errorf("message %d: tool call %q has no result", i, c.ID)
			}
			r := msgs[j]
			if r.Role != llm.RoleTool || r.ToolCallID != c.ID || r.Name != c.Name {
				return fmt.Errorf("message %d: want the result of %s %q, got role %s id %q name %q",
					j, c.Name, c.ID, r.Role, r.ToolCallID, r.Name)
			}
		}
		i += len(m.ToolCalls)
	}
	return nil
}

func TestCheckToolPairsCatchesBrokenWires(t *testing.T) {
	call := func(id string) llm.ToolCall { return llm.ToolCall{ID: id, Name: "t", Arguments: "{}"} }
	result := func(id string) llm.Message { return llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "t"} }
	tests := []struct {
		name string
		msgs []llm.Message
		ok   bool
	}{
		{"valid", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("a"), call("b")}}, result("a"), result("b")}, true},
		{"two results for one id", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("a")}}, result("a"), result("a")}, false},
		{"missing result", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("a"), call("b")}}, result("a")}, false},
		{"out of order", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("a"), call("b")}}, result("b"), result("a")}, false},
		{"duplicate id", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("a"), call("a")}}, result("a"), result("a")}, false},
		{"orphan result", []llm.Message{{Role: llm.RoleUser}, result("a")}, false},
		{"empty id", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("")}}, result("")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkToolPairs(tt.msgs); (err == nil) != tt.ok {
				t.Fatalf("checkToolPairs = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// newScripted is a model answering from steps, one per call, that rejects
// an invalid conversation the way a strict provider does (an HTTP 400).
func newScripted(t *testing.T, steps ...llmtest.Step) *llmtest.Model {
	return llmtest.NewModel(t, steps...).Check(checkToolPairs)
}

func reply(text string) func(context.Context, llm.Request) (llm.Response, error) {
	return func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Content: text, FinishReason: llm.FinishStop,
			Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2, Calls: 1}}, nil
	}
}

func callTools(calls ...llm.ToolCall) func(context.Context, llm.Request) (llm.Response, error) {
	return func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{ToolCalls: calls, FinishReason: llm.FinishToolCalls,
			Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, Calls: 1}}, nil
	}
}

func tc(id, name, arguments string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: arguments}
}

// noAbsPath fails when a text shown to the model reveals where the workspace is.
func noAbsPath(tb testing.TB, fx *fixture, text string) {
	tb.Helper()
	if strings.Contains(text, fx.base) {
		tb.Errorf("text reveals an absolute path: %q", text)
	}
}

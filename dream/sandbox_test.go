package dream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// tree maps every file under root (but .git) to a hash of its content, or
// to its target for a symbolic link.
func tree(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if de.IsDir() {
			if rel == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		for _, s := range skip {
			if rel == s {
				return nil
			}
		}
		if de.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "link:" + target
			return err
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffTrees(t *testing.T, label string, before, after map[string]string) {
	t.Helper()
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s: %s changed or vanished", label, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", label, p)
		}
	}
}

// TestPhase2Sandbox: whatever the model asks, phase 2 writes nothing but the
// three memory files; every refusal goes back to the model as a tool error.
func TestPhase2Sandbox(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	testkit.WriteFile(t, outside, "secret.md", "secret\n")
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(e.ws, "link.md")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(e.ws, "memory", "notes.md")); err != nil {
		t.Fatal(err)
	}
	e.hist.seed(t, 0, 2, func(int) string { return "- User wants everything forgotten" })

	hostile := []llm.ToolCall{
		editCall("memory/history.jsonl", "- User wants everything forgotten", "- nothing"),
		editCall("memory/.dream_cursor", "", "999"),
		editCall("./memory//.dream_cursor", "", "999"),
		editCall("AGENTS.md", "# Agents\n", "# Pwned\n"),
		editCall("../x.md", "", "escaped"),
		editCall("memory/../../x.md", "", "escaped"),
		editCall(filepath.Join(outside, "secret.md"), "secret\n", "pwned\n"),
		editCall("link.md", "secret\n", "pwned\n"),
		editCall("memory/notes.md", "secret\n", "pwned\n"),
		editCall("memory/MEMORY.md/x", "", "x"),
		editCall("soul.md", "", "lower-case twin"),
		editCall("prompts/dream.md", "", "new guidance"),
		editCall("USER.md\x00.txt", "", "nul"),
		{Name: "read_file", Arguments: `{"path":"link.md"}`},
		{Name: "read_file", Arguments: `{"path":"memory/history.jsonl"}`},
		{Name: "write_file", Arguments: `{"path":"SOUL.md","content":"replaced"}`},
	}
	e.srv.Push(llmtest.Text("[MEMORY] forget everything"), calls(hostile...), llmtest.Text("I could not do it."))

	// Dream's own bookkeeping (and the history store's lock file)
	// legitimately changes beside the three files.
	skip := []string{"memory/.dream_cursor", "memory/.dream_ledger", "memory/.dream.lock", "memory/.dream_ledger.lock", "memory/.history.lock"}
	wsBefore, outBefore := tree(t, e.ws, skip...), tree(t, outside)
	rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, rep)
	}
	diffTrees(t, "workspace", wsBefore, tree(t, e.ws, skip...))
	diffTrees(t, "outside", outBefore, tree(t, outside))
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.ws), "x.md")); err == nil {
		t.Error("a file was written above the workspace")
	}
	if c := e.hist.cursor(t); c != 2 {
		t.Errorf("cursor = %d, want 2", c)
	}
	if rep.Changes != 0 || len(e.log(10)) != 1 {
		t.Errorf("changes %d, commits %d", rep.Changes, len(e.log(10)))
	}

	reqs := e.srv.Requests()
	last := reqs[len(reqs)-1]
	var results []llm.Message
	for _, m := range last.Messages {
		if m.Role == llm.RoleTool {
			results = append(results, m)
		}
	}
	if len(results) != len(hostile) {
		t.Fatalf("tool results = %d, want %d", len(results), len(hostile))
	}
	for i, m := range results {
		if !strings.HasPrefix(m.Content, "Error:") {
			t.Errorf("call %d (%s %s) was not refused: %q", i, hostile[i].Name, hostile[i].Arguments, m.Content)
		}
		if strings.Contains(m.Content, e.ws) || strings.Contains(m.Content, "secret\n") {
			t.Errorf("call %d result leaks a path or content: %q", i, m.Content)
		}
	}
	e.checkWire()
}

// TestEditLoopsEnd: a model stuck on no-op edits ends the run within
// MaxIterations, as a failure with a clear log line, and costs no more calls.
func TestEditLoopsEnd(t *testing.T) {
	tests := []struct {
		name         string
		edit         func(n int) llm.ToolCall
		wantRequests int // phase 1 + phase 2
		wantLog      string
		wantReason   string
	}{
		{"same no-op edit repeated", func(int) llm.ToolCall { return editCall("USER.md", "- Name: Ana.", "- Name: Ana.") },
			1 + repeatLimit, "the same tool call kept repeating", "kept repeating the same tool call"},
		{"varying no-op edits", func(n int) llm.ToolCall {
			args, _ := json.Marshal(map[string]any{"path": "USER.md", "old_text": "- Name: Ana.", "new_text": "- Name: Ana.", "note": n})
			return llm.ToolCall{Name: "edit_file", Arguments: string(args)}
		}, 1 + DefaultMaxIterations, "iteration limit", "used its 10 model calls without finishing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.hist.seed(t, 0, 1, func(int) string { return "- Ana is Ana" })
			e.srv.Push(llmtest.Text("[USER] Ana is Ana"))
			n := 0
			e.srv.SetResponder(func(llmtest.Request) llmtest.Reply {
				n++
				return calls(tc.edit(n))
			})
			rep, err := e.dreamer(Config{}).Run(t.Context(), TriggerCron, AllScopes(), nil)
			if rep.Outcome != OutcomeFailed || err == nil {
				t.Fatalf("outcome %s, err %v", rep.Outcome, err)
			}
			if got := len(e.srv.Requests()); got != tc.wantRequests {
				t.Errorf("requests = %d, want %d", got, tc.wantRequests)
			}
			if rep.Calls != tc.wantRequests {
				t.Errorf("report calls = %d, want %d", rep.Calls, tc.wantRequests)
			}
			if !strings.Contains(rep.Reason, tc.wantReason) {
				t.Errorf("reason = %q", rep.Reason)
			}
			if len(e.logs.Find(slog.LevelWarn, tc.wantLog)) == 0 {
				t.Errorf("no warning containing %q", tc.wantLog)
			}
			if len(e.logs.Find(slog.LevelWarn, "dream failed")) != 1 {
				t.Error("no 'dream failed' warning")
			}
			if e.hist.cursor(t) != 0 {
				t.Error("cursor advanced after a stuck run")
			}
			e.checkWire()
		})
	}
}

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// In a non-admin's turn the tools may write the three memory files and
// nothing else: not AGENTS.md, not Dream's prompt, not a new file. Reading
// is as in any chat turn.
func TestChatGuestPolicyWritesOnlyTheMemoryFiles(t *testing.T) {
	fx := newFixture(t)
	guest := FileTools(fx.w, ChatGuestPolicy())
	write := toolByName(t, guest, ToolWriteFile)
	edit := toolByName(t, guest, ToolEditFile)
	for _, p := range []string{workspace.Agents, workspace.DreamGuide, "prompts/other.md", "notes/todo.md", "new.md"} {
		if out, err := write.Run(t.Context(), args(t, "path", p, "content", "pwned")); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("guest write_file(%s) = %q, %v; want ErrNotAllowed", p, out, err)
		} else if !strings.Contains(err.Error(), "admin") {
			t.Errorf("the refusal should say who may: %v", err)
		}
	}
	if _, err := edit.Run(t.Context(), args(t, "path", workspace.Agents, "old_text", "SECRET", "new_text", "x")); !errors.Is(err, ErrNotAllowed) {
		t.Errorf("guest edit_file(AGENTS.md) = %v, want ErrNotAllowed", err)
	}
	if b, _ := os.ReadFile(filepath.Join(fx.dir, "AGENTS.md")); string(b) != fixtureFiles["AGENTS.md"] {
		t.Errorf("AGENTS.md changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(fx.dir, "prompts")); !os.IsNotExist(err) {
		t.Errorf("prompts/ was created: %v", err)
	}
	for _, p := range workspace.MemoryFiles() {
		if _, err := edit.Run(t.Context(), args(t, "path", p, "old_text", "SECRET", "new_text", "kept")); err != nil {
			t.Errorf("guest edit_file(%s): %v", p, err)
		}
	}
	if out, err := toolByName(t, guest, ToolReadFile).Run(t.Context(), args(t, "path", "AGENTS.md")); err != nil || !strings.Contains(out, "SECRET agents") {
		t.Errorf("guest read_file(AGENTS.md) = %q, %v", out, err)
	}
	// The admins' policy still writes the instructions.
	if _, err := toolByName(t, FileTools(fx.w, ChatPolicy()), ToolWriteFile).Run(t.Context(), args(t, "path", "AGENTS.md", "content", "new rules")); err != nil {
		t.Errorf("admin write_file(AGENTS.md): %v", err)
	}
}

// The sessions directory is out of reach of every tool once the workspace
// forbids it, even when a config put it inside the workspace.
func TestFileToolsRefuseTheSessionsDirectory(t *testing.T) {
	fx := newFixture(t)
	sessions := filepath.Join(fx.dir, "state", "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sessions, "c2xhY2s6QzE.jsonl"), []byte(`{"role":"user","content":"my PIN is 4711"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.w.Forbid(sessions)
	tools := FileTools(fx.w, ChatPolicy())
	for _, c := range []struct {
		tool string
		args json.RawMessage
	}{
		{ToolReadFile, args(t, "path", "state/sessions/c2xhY2s6QzE.jsonl")},
		{ToolReadFile, args(t, "path", "state/./sessions//c2xhY2s6QzE.jsonl")},
		{ToolListDir, args(t, "path", "state/sessions")},
		{ToolWriteFile, args(t, "path", "state/sessions/c2xhY2s6QzE.jsonl", "content", "x")},
		{ToolEditFile, args(t, "path", "state/sessions/new.jsonl", "old_text", "", "new_text", "x")},
	} {
		out, err := toolByName(t, tools, c.tool).Run(t.Context(), c.args)
		if !errors.Is(err, ErrNotAllowed) {
			t.Errorf("%s %s = %q, %v; want ErrNotAllowed", c.tool, c.args, out, err)
		}
		if strings.Contains(out, "4711") {
			t.Errorf("%s leaked a conversation: %q", c.tool, out)
		}
	}
	out, err := toolByName(t, tools, ToolListDir).Run(t.Context(), args(t, "path", "state"))
	if err != nil || strings.Contains(out, "sessions") {
		t.Errorf("list_dir(state) = %q, %v; the sessions directory should not be listed", out, err)
	}
}

// A tool that keeps failing on a full disk is not the model going round in
// circles: the run ends as StopToolFailed with the system's reason.
func TestLoopToolFailingOnTheSystemIsNotARepeat(t *testing.T) {
	var steps []func(context.Context, llm.Request) (llm.Response, error)
	for i := range 5 {
		steps = append(steps, callTools(tc(fmt.Sprint("c", i), "edit_file", `{"path":"USER.md","old_text":"a","new_text":"b"}`)))
	}
	m := newScripted(t, steps...)
	tool := &echoTool{name: "edit_file", run: func(context.Context, json.RawMessage) (string, error) {
		return "", workspace.IOFailure("write", "USER.md", &os.PathError{Op: "write", Path: "/srv/ws/USER.md", Err: syscall.ENOSPC})
	}}
	res, err := runLoop(t, t.Context(), &Loop{Model: m, Tools: []Tool{tool}, RepeatLimit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != StopToolFailed {
		t.Fatalf("stop = %s, want %s", res.Stop, StopToolFailed)
	}
	if !errors.Is(res.ToolErr, syscall.ENOSPC) || !errors.Is(res.ToolErr, ErrIO) {
		t.Errorf("ToolErr = %v, want the disk-full error", res.ToolErr)
	}
	if msg := res.ToolErr.Error(); !strings.Contains(msg, "no space left on device") || strings.Contains(msg, "/srv/ws") {
		t.Errorf("ToolErr text = %q: should name the reason without the location", msg)
	}
}

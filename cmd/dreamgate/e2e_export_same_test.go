package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The same work on the two engines makes the same history: hand edits of
// two scopes and a Dream, played on files and on PostgreSQL, then the
// database's repository exported — every commit's message and change, in
// the order made, is the files' (their ids differ only by their times).
func TestPostgresHistoryExportedAsOnFiles(t *testing.T) {
	dsn := pgtest.DSN(t)
	files, pg := newHarness(t), newHarness(t)
	files.set("store", map[string]any{})
	pgWorkspaces.Delete(files.ws)
	pg.set("store", map[string]any{"postgres": dsn})
	pgWorkspaces.Store(pg.ws, dsn)
	for _, h := range []*harness{files, pg} {
		sameWork(t, h)
	}
	out := filepath.Join(t.TempDir(), "out")
	if r := pg.run("export", out); r.code != 0 {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want, got := changesInOrder(t, files.ws), changesInOrder(t, filepath.Join(out, "workspace"))
	if got != want {
		t.Errorf("the history exported from PostgreSQL:\n%s\nthe files':\n%s", got, want)
	}
}

// sameWork edits two scopes' memory by hand and dreams a conversation.
func sameWork(t *testing.T, h *harness) {
	t.Helper()
	for _, e := range [][]string{
		{"USER.md", "# User\n\n- Ana prefers green tea.\n"},
		{"--scope", "team-slack-t1", "memory/MEMORY.md", "# Long-term memory\n\n- The team ships on Fridays.\n"},
	} {
		from := filepath.Join(t.TempDir(), "content")
		if err := os.WriteFile(from, []byte(e[len(e)-1]), 0o600); err != nil {
			t.Fatal(err)
		}
		args := append(append([]string{"memory", "edit", "--from", from}, e[:len(e)-2]...), e[len(e)-2])
		if r := h.run(args...); r.code != 0 {
			t.Fatalf("memory edit %v: exit %d\n%s%s", e, r.code, r.stdout, r.stderr)
		}
	}
	h.llm.Push(llmtest.Text("Noted."), llmtest.Text("- The user's name is Ada"))
	for _, m := range []string{"I'm Ada.", "/new"} {
		if r := h.run("chat", "-m", m); r.code != 0 {
			t.Fatalf("chat %q: exit %d\n%s", m, r.code, r.stderr)
		}
	}
	h.llm.Push(
		llmtest.Text("[USER] name is Ada"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"- Ana prefers green tea.\n","new_text":"- Ana prefers green tea.\n- Ada\n"}`),
		llmtest.Text("Done."),
	)
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// changesInOrder is every commit of the repository in ws, oldest first:
// its message and its change, with the ids and dates left out.
func changesInOrder(t *testing.T, ws string) string {
	t.Helper()
	log := gitCLI(t, ws, "log", "--all", "--date-order", "--reverse", "--format=%B", "-p", "--no-color")
	return regexp.MustCompile(`(?m)^index [0-9a-f]+\.\.[0-9a-f]+.*$|[0-9a-f]{40}|\b[0-9a-f]{8}\b`).ReplaceAllString(log, "<id>")
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// `dreamgate memory edit` commits a memory file's new content as a hand
// edit, from a file or the standard input or the person's editor; the
// commit shows in `dream log <sha>` and is undone by `dream restore`; the
// same content again changes nothing; a file that is no memory file is
// refused in a sentence. On either engine (it is in the PostgreSQL pass).
func TestMemoryEditThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	const text = "# User\n\n- Ana prefers green tea.\n"
	from := filepath.Join(t.TempDir(), "user.md")
	if err := os.WriteFile(from, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := h.run("memory", "edit", "--from", from, "USER.md")
	if r.code != 0 || !strings.Contains(r.stdout, "Committed ") || !strings.Contains(r.stdout, "manual: edits outside Dream") {
		t.Fatalf("memory edit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sha := regexp.MustCompile(`Committed ([0-9a-f]{8})`).FindStringSubmatch(r.stdout)[1]
	if got := string(readMemoryFile(t, h.ws, "USER.md")); got != text {
		t.Errorf("USER.md after the edit: %q", got)
	}
	if log := h.run("dream", "log", sha); log.code != 0 || !strings.Contains(log.stdout, "+- Ana prefers green tea.") {
		t.Errorf("dream log %s: exit %d\n%s%s", sha, log.code, log.stdout, log.stderr)
	}
	if again := h.run("memory", "edit", "--from", from, "USER.md"); again.code != 0 || !strings.Contains(again.stdout, "Nothing changed") {
		t.Errorf("the same content again: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	// The editor path: VISUAL edits the copy in place.
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nprintf -- '- Bob joined on Monday.\\n' >> \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if r := h.runEnv([]string{"VISUAL=" + editor}, "memory", "edit", "--scope", "default", "memory/MEMORY.md"); r.code != 0 || !strings.Contains(r.stdout, "1 line added") {
		t.Errorf("memory edit in the editor: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := string(readMemoryFile(t, h.ws, "memory/MEMORY.md")); !strings.HasSuffix(got, "- Bob joined on Monday.\n") {
		t.Errorf("MEMORY.md after the editor: %q", got)
	}
	if r := h.run("dream", "restore", sha); r.code != 0 {
		t.Errorf("dream restore %s: exit %d\n%s%s", sha, r.code, r.stdout, r.stderr)
	}
	if got := string(readMemoryFile(t, h.ws, "USER.md")); strings.Contains(got, "green tea") {
		t.Errorf("USER.md after the restore still holds the edit: %q", got)
	}
	if bad := h.run("memory", "edit", "--from", from, "notes.md"); bad.code != 2 || !strings.Contains(bad.stderr, "is not a memory file") {
		t.Errorf("an edit of notes.md: exit %d\n%s", bad.code, bad.stderr)
	}
	for _, problem := range checkFsck(h.ws) {
		t.Error(problem)
	}
}

// With the memory repository in PostgreSQL, two workspaces on two hosts
// share one memory: a hand edit made from one is in the prompt of a chat
// in the other, `dream log` there shows its commit, a fact a Dream in one
// wrote is in the other's next prompt, a restore from the other undoes it
// for both, and neither workspace folder holds the repository.
func TestPostgresMemorySharedWithoutAFileSystem(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := newHarness(t), newHarness(t)
	for _, h := range []*harness{a, b} {
		h.set("store", map[string]any{"postgres": dsn})
	}
	from := filepath.Join(t.TempDir(), "user.md")
	if err := os.WriteFile(from, []byte("# User\n\n- The office moved to Canal Road.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := a.run("memory", "edit", "--from", from, "USER.md")
	if r.code != 0 {
		t.Fatalf("memory edit in the first workspace: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sha := regexp.MustCompile(`Committed ([0-9a-f]{8})`).FindStringSubmatch(r.stdout)[1]
	b.llm.Push(llmtest.Text("It is on Canal Road."))
	if r := b.run("chat", "-m", "Where is the office?"); r.code != 0 {
		t.Fatalf("chat in the second workspace: exit %d\n%s", r.code, r.stderr)
	}
	reqs := b.llm.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].Messages[0].Content, "Canal Road") {
		t.Error("the second workspace's prompt does not hold the memory edited from the first")
	}
	if log := b.run("dream", "log", sha); log.code != 0 || !strings.Contains(log.stdout, "Canal Road") {
		t.Errorf("dream log %s in the second workspace: exit %d\n%s%s", sha, log.code, log.stdout, log.stderr)
	}
	dreamedInOneReadInTheOther(t, a, b)
	restoredInOneSeenInTheOther(t, b, a)
	for _, h := range []*harness{a, b} {
		if _, err := os.Stat(filepath.Join(h.ws, ".git")); err == nil {
			t.Errorf("the workspace %s holds a repository; the memory's is the database's", h.ws)
		}
	}
}

// migrate --to-postgres brings the workspace's memory repository into the
// database — every commit, the same ids — and again copies nothing; on
// PostgreSQL the memory goes on from it; export writes it back as a
// workspace whose repository git finds whole, with every line's history in
// the order made and the newest files, and which a process on files uses.
func TestPostgresMigrateBringsTheMemoryHistory(t *testing.T) {
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	h.set("store", map[string]any{}) // the files, whatever the pass
	pgWorkspaces.Delete(h.ws)
	edit := func(args ...string) string {
		t.Helper()
		from := filepath.Join(t.TempDir(), "content")
		if err := os.WriteFile(from, []byte(args[len(args)-1]), 0o600); err != nil {
			t.Fatal(err)
		}
		r := h.run(append(append([]string{"memory", "edit", "--from", from}, args[:len(args)-2]...), args[len(args)-2])...)
		if r.code != 0 {
			t.Fatalf("memory edit %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return regexp.MustCompile(`Committed ([0-9a-f]{8})`).FindStringSubmatch(r.stdout)[1]
	}
	edit("USER.md", "# User\n\n- Ana prefers tea.\n")
	edit("--scope", "team-slack-t1", "memory/MEMORY.md", "- The team ships on Fridays.\n")
	before, _, err := memoryRepoDir(h.ws)
	if err != nil {
		t.Fatal(err)
	}
	wantLog := gitCLI(t, before, "log", "--all", "--date-order", "--format=%H %s")
	refusedBeforeMigrate(t, h, dsn)

	r := h.run("migrate", "--to-postgres", dsn)
	if r.code != 0 || !strings.Contains(r.stdout, "Memory repository: ") || !strings.Contains(r.stdout, "copied into PostgreSQL") {
		t.Fatalf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if again := h.run("migrate", "--to-postgres", dsn); again.code != 0 || !strings.Contains(again.stdout, "Memory repository: nothing to copy") {
		t.Errorf("migrate again: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	h.set("store", map[string]any{"postgres": dsn})
	pgWorkspaces.Store(h.ws, dsn)
	last := edit("--scope", "team-slack-t1", "memory/MEMORY.md", "- The team ships on Fridays.\n- Standup at ten.\n")
	if log := h.run("dream", "log", last); log.code != 0 || !strings.Contains(log.stdout, "+- Standup at ten.") {
		t.Errorf("dream log on PostgreSQL: exit %d\n%s%s", log.code, log.stdout, log.stderr)
	}

	out := filepath.Join(t.TempDir(), "out")
	if r := h.run("export", out); r.code != 0 || !strings.Contains(r.stdout, "Memory repository: ") {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	ws := filepath.Join(out, "workspace")
	got := gitCLI(t, ws, "log", "--all", "--date-order", "--format=%H %s")
	if !strings.HasSuffix(got, wantLog) || !strings.HasPrefix(got, gitCLI(t, ws, "rev-parse", "refs/scopes/team-slack-t1")[:40]) {
		t.Errorf("the exported history:\n%s\nwant the migrated one under the new commit:\n%s", got, wantLog)
	}
	if st := gitCLI(t, ws, "status", "--porcelain"); st != "" {
		t.Errorf("git status in the export: %q", st)
	}
	gitCLI(t, ws, "fsck", "--full", "--strict")
	if b, _ := os.ReadFile(filepath.Join(ws, "scopes", "team-slack-t1", "memory", "MEMORY.md")); !strings.Contains(string(b), "Standup at ten.") {
		t.Errorf("the exported team memory: %q", b)
	}
	back := newHarness(t)
	back.set("store", map[string]any{})
	back.set("workspace", ws)
	back.set("stateDir", filepath.Join(out, "state"))
	if log := back.run("dream", "log", last); log.code != 0 || !strings.Contains(log.stdout, "Standup at ten.") {
		t.Errorf("dream log on the exported files: exit %d\n%s%s", log.code, log.stdout, log.stderr)
	}
}

// refusedBeforeMigrate: a process on PostgreSQL whose workspace holds a
// memory history the database lacks refuses to start, in a sentence that
// says to migrate, and begins no history of its own in the database.
func refusedBeforeMigrate(t *testing.T, h *harness, dsn string) {
	t.Helper()
	h.set("store", map[string]any{"postgres": dsn})
	defer h.set("store", map[string]any{})
	r := h.run("dream", "log")
	if r.code == 0 || !strings.Contains(r.stderr, "run dreamgate migrate --to-postgres first") {
		t.Errorf("a start on PostgreSQL before the memory history moved in: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.RepositoryEmpty() {
		t.Error("the refused start began a memory history in the database")
	}
}

// A workspace whose own memory history the database lacks is refused on
// PostgreSQL in a sentence even where another workspace began the
// database's repository: its process would leave that history behind
// unseen. Nothing is written — the database's history and the workspace's
// .git stay as they were —; with the .git moved aside it goes on, on the
// database's memory.
func TestPostgresStartRefusesAHistoryTheDatabaseLacks(t *testing.T) {
	dsn := pgtest.DSN(t)
	a, b := newHarness(t), newHarness(t)
	a.set("store", map[string]any{"postgres": dsn})
	pgWorkspaces.Store(a.ws, dsn)
	b.set("store", map[string]any{}) // the files, whatever the pass
	pgWorkspaces.Delete(b.ws)
	edit := func(h *harness, text string) string {
		t.Helper()
		from := filepath.Join(t.TempDir(), "user.md")
		if err := os.WriteFile(from, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		r := h.run("memory", "edit", "--from", from, "USER.md")
		if r.code != 0 {
			t.Fatalf("memory edit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		return regexp.MustCompile(`Committed ([0-9a-f]{8})`).FindStringSubmatch(r.stdout)[1]
	}
	sha := edit(a, "# User\n\n- The office moved to Canal Road.\n")
	edit(b, "# User\n\n- Bob keeps the spare keys.\n")
	inDB := memoryHistory(t, a.ws)
	inWorkspace := memoryHistory(t, b.ws)

	b.set("store", map[string]any{"postgres": dsn})
	r := b.run("dream", "log")
	if r.code == 0 || !strings.Contains(r.stderr, "that the PostgreSQL database does not hold: run dreamgate migrate --to-postgres first") {
		t.Errorf("a start on a database another workspace began: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	oneSentence(t, r.stderr)
	if now := memoryHistory(t, a.ws); now != inDB {
		t.Errorf("the database's history after the refusal:\n%s\nwas:\n%s", now, inDB)
	}
	if now := memoryHistory(t, b.ws); now != inWorkspace {
		t.Errorf("the workspace's history after the refusal:\n%s\nwas:\n%s", now, inWorkspace)
	}

	if err := os.Rename(filepath.Join(b.ws, ".git"), filepath.Join(b.ws, "git-aside")); err != nil {
		t.Fatal(err)
	}
	if r := b.run("dream", "log", sha); r.code != 0 || !strings.Contains(r.stdout, "Canal Road") {
		t.Errorf("the start with the .git moved aside: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// dreamedInOneReadInTheOther: a conversation in a is archived and
// dreamed there (Dream edits a's working copy and commits it); the next
// prompt in b holds the fact, which b's workspace folder never held.
func dreamedInOneReadInTheOther(t *testing.T, a, b *harness) {
	t.Helper()
	a.llm.Push(llmtest.Text("Noted: tea, not coffee."), llmtest.Text("- The user prefers tea over coffee"))
	for _, m := range []string{"I prefer tea over coffee.", "/new"} {
		if r := a.run("chat", "-m", m); r.code != 0 {
			t.Fatalf("chat %q in the first workspace: exit %d\n%s", m, r.code, r.stderr)
		}
	}
	a.llm.Push(
		llmtest.Text("[USER] prefers tea over coffee"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"- The office moved to Canal Road.\n","new_text":"- The office moved to Canal Road.\n- Prefers tea over coffee.\n"}`),
		llmtest.Text("Added the preference to USER.md."),
	)
	if r := a.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run in the first workspace: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(b.ws, "USER.md")); strings.Contains(string(got), "tea over coffee") {
		t.Fatal("the second workspace's folder holds the dreamed fact before its chat")
	}
	b.llm.Push(llmtest.Text("Tea."))
	if r := b.run("chat", "-m", "What do I drink?"); r.code != 0 {
		t.Fatalf("chat in the second workspace: exit %d\n%s", r.code, r.stderr)
	}
	reqs := b.llm.Requests()
	if len(reqs) == 0 || !strings.Contains(reqs[len(reqs)-1].Messages[0].Content, "Prefers tea over coffee.") {
		t.Error("the second workspace's prompt does not hold the fact the first one's Dream wrote")
	}
}

// restoredInOneSeenInTheOther: b undoes the newest Dream, which a made;
// a's dream log calls it undone, as on files, and a's next prompt no
// longer holds its fact.
func restoredInOneSeenInTheOther(t *testing.T, b, a *harness) {
	t.Helper()
	r := b.run("dream", "log")
	sha := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(r.stdout)
	if r.code != 0 || sha == nil {
		t.Fatalf("dream log in the second workspace: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := b.run("dream", "restore", sha[1]); r.code != 0 {
		t.Fatalf("dream restore %s in the second workspace: exit %d\n%s%s", sha[1], r.code, r.stdout, r.stderr)
	}
	if r := a.run("dream", "log"); r.code != 0 || !strings.Contains(r.stdout, "Already undone by `") {
		t.Errorf("dream log in the first workspace after the second's restore: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	a.llm.Push(llmtest.Text("I do not know."))
	if r := a.run("chat", "-m", "What do I drink?"); r.code != 0 {
		t.Fatalf("chat in the first workspace: exit %d\n%s", r.code, r.stderr)
	}
	reqs := a.llm.Requests()
	if len(reqs) == 0 || strings.Contains(reqs[len(reqs)-1].Messages[0].Content, "Prefers tea over coffee.") {
		t.Error("the first workspace's prompt still holds the fact the second one's restore undid")
	}
}

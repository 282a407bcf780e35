package workspace

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// A hard link planted in the workspace to a file outside it is the outside
// file under a workspace name: Resolve refuses it and says why.
func TestResolveRefusesHardLinks(t *testing.T) {
	root := openRoot(t)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("PIN 1234"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(root.Dir(), "notes.md")); err != nil {
		t.Skipf("hard links not available: %v", err)
	}
	_, _, err := root.Resolve("notes.md")
	if !errors.Is(err, ErrHardLink) {
		t.Fatalf("Resolve of a hard link = %v, want ErrHardLink", err)
	}
	if !strings.Contains(err.Error(), "hard link") || strings.Contains(err.Error(), root.Dir()) {
		t.Errorf("the refusal should say why without the location: %q", err)
	}
	// A file with one name is fine.
	if err := os.WriteFile(filepath.Join(root.Dir(), "own.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := root.Resolve("own.md"); err != nil {
		t.Errorf("Resolve of an ordinary file: %v", err)
	}
}

// A forbidden directory (the sessions directory) is refused by identity,
// however the path spells it, when it lies inside the workspace.
func TestForbidRefusesTheDirectoryByIdentity(t *testing.T) {
	root := openRoot(t)
	sessions := filepath.Join(root.Dir(), "sessions")
	if err := os.Mkdir(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sessions, "a.jsonl"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sessions", "sessions/a.jsonl", "./sessions//a.jsonl", "memory/../sessions/new.md"} {
		if _, _, err := root.Resolve(p); err != nil {
			t.Fatalf("before Forbid, Resolve(%q): %v", p, err)
		}
	}
	root.Forbid(sessions)
	for _, p := range []string{"sessions", "sessions/a.jsonl", "./sessions//a.jsonl", "memory/../sessions/new.md"} {
		if _, _, err := root.Resolve(p); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Resolve(%q) = %v, want ErrNotAllowed", p, err)
		} else if strings.Contains(err.Error(), root.Dir()) {
			t.Errorf("refusal reveals the location: %v", err)
		}
	}
	fi, err := root.Lstat("sessions")
	if err != nil {
		t.Fatal(err)
	}
	if !root.Forbidden(fi) {
		t.Error("Forbidden does not recognise the directory")
	}
	if _, _, err := root.Resolve("memory/MEMORY.md"); err != nil {
		t.Errorf("other paths must still resolve: %v", err)
	}
}

func TestTrackedFilesIncludeTheInstructions(t *testing.T) {
	tr := TrackedFiles()
	for _, want := range append(MemoryFiles(), Agents, DreamGuide) {
		if !slices.Contains(tr, want) {
			t.Errorf("TrackedFiles lacks %s: %v", want, tr)
		}
	}
	for _, rel := range tr {
		if slices.Contains(ProgramFiles(), rel) {
			t.Errorf("%s is both tracked and a program file", rel)
		}
	}
}

// The patterns name every scope's memory files and the cold memory, and
// no program file: a tool writes what the repository versions.
func TestTrackedPatterns(t *testing.T) {
	pats := TrackedPatterns()
	match := func(rel string) bool {
		return slices.ContainsFunc(pats, func(p string) bool { m, _ := path.Match(p, rel); return m })
	}
	for _, f := range append(MemoryFiles(), Cold) {
		if rel := audience.Scope("team-slack-t1").Dir() + "/" + f; !match(rel) {
			t.Errorf("TrackedPatterns do not match %s: %v", rel, pats)
		}
	}
	if !match(Cold) {
		t.Errorf("TrackedPatterns do not match the root's %s", Cold)
	}
	for _, rel := range append(ProgramFiles(), "scopes/team-slack-t1/memory/history.jsonl", "scopes/team-slack-t1/notes.md") {
		if match(rel) {
			t.Errorf("TrackedPatterns match %s", rel)
		}
	}
}

func TestIsTemp(t *testing.T) {
	if !IsTemp(tempPrefix + "ABCDEF") {
		t.Error("IsTemp does not recognise WriteFile's temp name")
	}
	for _, name := range []string{"x", "x.meta.json", "MEMORY.md", "dreamgate-tmp-x"} {
		if IsTemp(name) {
			t.Errorf("IsTemp(%q) = true", name)
		}
	}
}

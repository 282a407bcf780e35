package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

const teamScope audience.Scope = "team-slack-t1"

// rootWithSecrets is a workspace whose root memory files and archive hold
// the operator's words.
func rootWithSecrets(t *testing.T) *Root {
	t.Helper()
	r := openRoot(t)
	for rel, text := range map[string]string{
		Soul: "ROOTSOUL", User: "ROOTUSER", Memory: "ROOTMEMORY", History: `{"cursor": 1, "timestamp": "t", "content": "ROOTHISTORY"}`,
	} {
		if err := r.WriteFile(rel, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// A scope's folder is created on first use with the template's memory
// files, never the root's; a file that exists is never replaced.
func TestScopeIsCreatedFromTheTemplate(t *testing.T) {
	r := rootWithSecrets(t)
	sub, err := r.Scope(teamScope)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if want := filepath.Join(r.Dir(), "scopes", "team-slack-t1"); sub.Dir() != want {
		t.Errorf("Dir = %q, want %q", sub.Dir(), want)
	}
	for _, rel := range MemoryFiles() {
		got, err := sub.ReadFile(rel)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := workspacetemplate.Read(rel)
		if string(got) != string(want) {
			t.Errorf("%s is not the template's: %q", rel, got)
		}
	}
	if err := sub.WriteFile(User, []byte("- Ana leads the team"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := r.Scope(teamScope)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, _ := again.ReadFile(User); string(got) != "- Ana leads the team" {
		t.Errorf("a second open replaced USER.md: %q", got)
	}
	if leftovers := temps(t, filepath.Join(sub.Dir())); len(leftovers) != 0 {
		t.Errorf("temp files left: %v", leftovers)
	}
	def, err := r.Scope(audience.Default)
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if got, _ := def.ReadFile(User); string(got) != "ROOTUSER" {
		t.Errorf("the default scope is not the workspace root: %q", got)
	}
}

// From a scope's folder the workspace's other files are unreachable
// whatever the path: climbing out, absolute paths, links planted inside it.
func TestScopeConfinesHostilePaths(t *testing.T) {
	r := rootWithSecrets(t)
	sub, err := r.Scope(teamScope)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := os.Symlink(filepath.Join(r.Dir(), User), filepath.Join(sub.Dir(), "notes.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../memory", filepath.Join(sub.Dir(), "up")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"../../USER.md", "../../memory/history.jsonl", "../person-slack-t1-u2/USER.md", "..", "../..",
		filepath.Join(r.Dir(), User), "/etc/passwd", "~/USER.md", "notes.md", "up/history.jsonl",
		"memory/../../../SOUL.md", `..\..\USER.md`, "USER.md/x", "SOUL.md\x00",
	} {
		if rel, _, err := sub.Resolve(p); err == nil {
			t.Errorf("Resolve(%q) = %q, accepted", p, rel)
		}
		if data, err := sub.ReadFile(p); err == nil && strings.Contains(string(data), "ROOT") {
			t.Errorf("ReadFile(%q) read the root's file: %q", p, data)
		}
	}
	// What the scope holds is reachable under the same names as at the
	// root: SOUL.md, USER.md, memory/MEMORY.md.
	for _, rel := range MemoryFiles() {
		if _, _, err := sub.Resolve(rel); err != nil {
			t.Errorf("Resolve(%q) in the scope: %v", rel, err)
		}
	}
	if _, err := sub.ReadFile(History); err == nil {
		t.Error("a scope holds an archive")
	}
}

// A scope's folder that is a link (to another scope, inside the workspace,
// where os.Root would follow it) is refused.
func TestScopeRefusesAFolderThatIsALink(t *testing.T) {
	r := rootWithSecrets(t)
	other, err := r.Scope("person-slack-t1-u2")
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	if err := os.Symlink("person-slack-t1-u2", filepath.Join(r.Dir(), "scopes", "team-slack-t1")); err != nil {
		t.Fatal(err)
	}
	if sub, err := r.Scope(teamScope); !errors.Is(err, ErrSymlink) {
		if sub != nil {
			sub.Close()
		}
		t.Fatalf("Scope through a link = %v, want ErrSymlink", err)
	}
}

// A scope's Root takes the workspace's one write lock.
func TestScopeSharesTheWriteLock(t *testing.T) {
	r := rootWithSecrets(t)
	sub, err := r.Scope(teamScope)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if sub.shared != r.shared {
		t.Error("the scope's Root has a write lock of its own")
	}
}

package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dreamgate/dreamgate/agent"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// With memory in the database, the files in a workspace's and a scope's
// folder are a copy for the file tools to read: a chat's write there
// would be overwritten by the next copy and never committed, so the
// tools refuse it, for admins too, and still write other files. On files
// the memory files are the memory, and the tools write them.
func TestChatToolsMayNotWriteMemoryKeptInTheDatabase(t *testing.T) {
	ws := t.TempDir()
	root, err := workspace.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	write := func(pol agent.Policy, rel string) error {
		t.Helper()
		for _, tool := range agent.FileTools(root, pol, agent.ToolWriteFile) {
			in, _ := json.Marshal(map[string]string{"path": rel, "content": "written by a chat"})
			_, err := tool.Run(t.Context(), in)
			return err
		}
		t.Fatal("no write_file tool")
		return nil
	}
	memoryFiles := []string{"SOUL.md", "USER.md", "memory/MEMORY.md", "memory/COLD.md", "scopes/team-slack-t1/memory/MEMORY.md", "scopes/person-slack-t1-u1/USER.md"}
	guest, admin := chatPolicies(&postgres.DB{})
	for name, pol := range map[string]agent.Policy{"guest": guest, "admin": admin} {
		for _, rel := range memoryFiles {
			if err := write(pol, rel); !errors.Is(err, agent.ErrNotAllowed) {
				t.Errorf("%s write_file(%s) on PostgreSQL = %v, want refused", name, rel, err)
			}
			if _, err := os.Stat(filepath.Join(ws, rel)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s on PostgreSQL: %s was written", name, rel)
			}
		}
	}
	if err := write(admin, "notes/todo.md"); err != nil {
		t.Errorf("admin write_file(notes/todo.md) on PostgreSQL: %v", err)
	}
	_, admin = chatPolicies(nil)
	if err := write(admin, "scopes/team-slack-t1/memory/MEMORY.md"); err != nil {
		t.Errorf("admin write_file of a scope's memory on files: %v", err)
	}

	// A scope folder's own tools (relative to the folder).
	onDB := (&app{ws: root, db: &postgres.DB{}}).scopeFolders()
	onFiles := (&app{ws: root}).scopeFolders()
	for _, rel := range []string{"SOUL.md", "USER.md", "memory/MEMORY.md", "memory/COLD.md"} {
		if !matchesAny(onDB, rel) {
			t.Errorf("a scope folder's %s is writable on PostgreSQL (deny list %q)", rel, onDB.DenyWrite)
		}
		if matchesAny(onFiles, rel) {
			t.Errorf("a scope folder's %s is refused on files", rel)
		}
	}
}

func matchesAny(f gateway.ScopeFolders, rel string) bool {
	for _, pat := range f.DenyWrite {
		if ok, _ := filepath.Match(pat, rel); ok {
			return true
		}
	}
	return false
}

package memory

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/internal/testkit"
)

const team audience.Scope = "team-slack-t1"

// A scope's files are read, never through a symbolic link: not the file's
// own, not a folder's on the way (scopes/<name>, memory/), whether it
// points outside the workspace or at another scope's file inside it.
func TestDiskNeverFollowsALink(t *testing.T) {
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.md")
	testkit.WriteFile(t, filepath.Dir(outside), "secret.md", "- the outside secret\n")
	testkit.WriteFile(t, ws, "USER.md", "- the operator's line\n")
	testkit.WriteFile(t, ws, "scopes/team-slack-t2/USER.md", "- another team's line\n")
	testkit.WriteFile(t, ws, "scopes/team-slack-t2/memory/MEMORY.md", "- another team's memory\n")
	dir := filepath.Join(ws, "scopes", string(team))
	testkit.WriteFile(t, dir, "SOUL.md", "- be brief\n")
	links := map[string]string{
		filepath.Join(dir, "USER.md"):                outside,
		filepath.Join(dir, "memory"):                 filepath.Join(ws, "scopes", "team-slack-t2", "memory"),
		filepath.Join(ws, "memory"):                  filepath.Join(ws, "scopes", "team-slack-t2", "memory"),
		filepath.Join(ws, "scopes", "team-slack-t3"): filepath.Join(ws, "scopes", "team-slack-t2"),
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	d := NewDisk(ws)
	cases := []struct {
		scope audience.Scope
		rel   string
		want  string
		err   error
	}{
		{team, Soul, "- be brief\n", nil},
		{audience.Default, User, "- the operator's line\n", nil},
		{team, User, "", ErrLink},             // the file is a link out
		{team, Long, "", ErrLink},             // memory/ is a link to another scope's
		{team, Cold, "", ErrLink},             // likewise
		{audience.Default, Long, "", ErrLink}, // the root's memory/ too
		{audience.Default, Soul, "", fs.ErrNotExist},
		{team, "AGENTS.md", "", ErrNotMemory},  // not a memory file
		{team, "../USER.md", "", ErrNotMemory}, // nor a way out
		{"../x", User, "", nil},                // not a scope: some error
	}
	for _, c := range cases {
		got, err := d.ReadFile(c.scope, c.rel)
		switch {
		case c.err == nil && c.want == "":
			if err == nil {
				t.Errorf("ReadFile(%q, %q) = %q, want an error", c.scope, c.rel, got)
			}
		case c.err != nil:
			if !errors.Is(err, c.err) {
				t.Errorf("ReadFile(%q, %q) = %q, %v; want %v", c.scope, c.rel, got, err, c.err)
			}
		case err != nil || string(got) != c.want:
			t.Errorf("ReadFile(%q, %q) = %q, %v; want %q", c.scope, c.rel, got, err, c.want)
		}
		v, verr := d.Version(c.scope, c.rel)
		if errors.Is(c.err, ErrLink) && !errors.Is(verr, ErrLink) {
			t.Errorf("Version(%q, %q) = %v, %v; want ErrLink", c.scope, c.rel, v, verr)
		}
	}
	folders, err := d.Folders()
	if err != nil {
		t.Fatal(err)
	}
	if want := []audience.Scope{team, "team-slack-t2"}; !slices.Equal(folders, want) {
		t.Errorf("Folders = %v, want %v (a link is no folder)", folders, want)
	}
}

func TestVersionChangesWithTheFile(t *testing.T) {
	ws := t.TempDir()
	d := NewDisk(ws)
	v, err := d.Version(audience.Default, User)
	if err != nil || !v.Missing() || v.String() != "" {
		t.Fatalf("missing file: %v %v", v, err)
	}
	testkit.WriteFile(t, ws, "USER.md", "- a\n")
	v1, _ := d.Version(audience.Default, User)
	testkit.WriteFile(t, ws, "USER.md", "- a longer line\n")
	v2, _ := d.Version(audience.Default, User)
	if v1.Missing() || v1.String() == v2.String() {
		t.Errorf("versions %q and %q", v1, v2)
	}
}

func TestMemoryWithoutFiles(t *testing.T) {
	m := New(nil, false)
	if _, err := m.Read(team, User); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read = %v", err)
	}
	if s, err := m.Scopes(); err != nil || !slices.Equal(s, []audience.Scope{audience.Default}) {
		t.Errorf("Scopes = %v, %v", s, err)
	}
}

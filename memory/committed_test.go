package memory

import (
	"errors"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// commits is a repository of a few commits per folder, counting reads.
type commits struct {
	heads map[string]string            // folder -> newest commit
	files map[string]map[string]string // commit -> path -> content
	reads int
}

func (c *commits) LineHead(dir string) (string, time.Time, error) {
	id := c.heads[dir]
	if id == "" {
		return "", time.Time{}, nil
	}
	return id, time.Unix(int64(len(id))*100+int64(id[len(id)-1]), 0), nil
}

func (c *commits) FileAt(rev, p string) ([]byte, bool, error) {
	c.reads++
	text, ok := c.files[rev][p]
	return []byte(text), ok, nil
}

func (c *commits) LineDirs() ([]string, error) {
	var out []string
	for d := range c.heads {
		if d != "" {
			out = append(out, d)
		}
	}
	return out, nil
}

// A scope's file is read from its line's newest commit once per commit:
// a new commit of the scope is read again, with another version.
func TestCommittedReadsTheNewestCommitOnce(t *testing.T) {
	team := audience.Scope("team-slack-t1")
	repo := &commits{
		heads: map[string]string{"": "r1", "scopes/team-slack-t1": "t1"},
		files: map[string]map[string]string{
			"r1": {"USER.md": "- root\n"},
			"t1": {"scopes/team-slack-t1/USER.md": "- team\n"},
			"t2": {"scopes/team-slack-t1/USER.md": "- team\n- more\n"},
		},
	}
	c := NewCommitted(repo)
	for range 3 {
		if b, err := c.ReadFile(team, User); err != nil || string(b) != "- team\n" {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
	}
	if repo.reads != 1 {
		t.Errorf("%d reads of one commit's file, want 1", repo.reads)
	}
	v1, _ := c.Version(team, User)
	repo.heads["scopes/team-slack-t1"] = "t2"
	if b, _ := c.ReadFile(team, User); string(b) != "- team\n- more\n" {
		t.Errorf("after a commit of the scope: %q", b)
	}
	if v2, _ := c.Version(team, User); v2.String() == v1.String() || v2.Missing() {
		t.Errorf("the version did not move with the commit: %s, %s", v1, v2)
	}
	if _, err := c.ReadFile(team, Long); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file the commit does not hold: %v", err)
	}
	if v, err := c.Version(audience.Scope("person-slack-t1-u1"), User); err != nil || !v.Missing() {
		t.Errorf("a scope without a line: %v, %v", v, err)
	}
	if b, err := c.ReadFile(audience.Default, User); err != nil || string(b) != "- root\n" {
		t.Errorf("the default scope's file: %q, %v", b, err)
	}
	if got, err := c.Folders(); err != nil || !slices.Equal(got, []audience.Scope{team}) {
		t.Errorf("Folders = %v, %v", got, err)
	}
	if _, err := c.ReadFile(team, "notes.md"); !errors.Is(err, ErrNotMemory) {
		t.Errorf("a file that is no memory file: %v", err)
	}
}

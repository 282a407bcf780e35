package memory

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dreamgate/dreamgate/audience"
)

// Commits is what Committed reads of the memory repository (the
// gitstore.Store of a repository kept in the database has it).
type Commits interface {
	// LineHead is the newest commit holding the files of the folder dir
	// ("" the workspace root's, "scopes/<name>" a scope's): its id, which
	// no other commit shares, and when it was committed; "" when none.
	LineHead(dir string) (id string, when time.Time, err error)
	// FileAt is a file as the commit rev holds it; ok false when it
	// holds none.
	FileAt(rev, path string) (data []byte, ok bool, err error)
	// LineDirs lists the scope folders that have a line ("scopes/<name>").
	LineDirs() ([]string, error)
}

// Committed is Files read from the memory repository's commits, for a
// repository that no file system holds (the PostgreSQL engine's, shared
// by processes on any hosts): a scope's file as its line's newest commit
// holds it. What it read is kept by commit id, so a prompt reads a file
// again only after a commit of its scope; asking which commit is newest
// is one look at the repository.
type Committed struct {
	repo Commits
	mu   sync.Mutex
	// read holds what was read, by commit id and path (nil: no file); a
	// scope's entries are dropped when its line moves on.
	read map[readKey]*[]byte
	head map[string]string // the commit last read of each folder
}

type readKey struct{ commit, path string }

var _ Files = (*Committed)(nil)

// NewCommitted reads memory from repo's commits.
func NewCommitted(repo Commits) *Committed {
	return &Committed{repo: repo, read: map[readKey]*[]byte{}, head: map[string]string{}}
}

// file is s's file rel as its line's newest commit holds it (nil: none)
// and that commit's id and time.
func (c *Committed) file(s audience.Scope, rel string) ([]byte, string, time.Time, error) {
	p, err := where(s, rel)
	if err != nil {
		return nil, "", time.Time{}, err
	}
	id, when, err := c.repo.LineHead(s.Dir())
	if err != nil || id == "" {
		return nil, "", time.Time{}, err
	}
	c.mu.Lock()
	if c.head[s.Dir()] != id {
		// The line moved on: what was read of its older commit goes.
		for k := range c.read {
			if strings.HasPrefix(k.path, s.Dir()) && k.commit == c.head[s.Dir()] {
				delete(c.read, k)
			}
		}
		c.head[s.Dir()] = id
	}
	got, ok := c.read[readKey{id, p}]
	c.mu.Unlock()
	if ok {
		return *got, id, when, nil
	}
	data, found, err := c.repo.FileAt(id, p)
	if err != nil {
		return nil, "", time.Time{}, fmt.Errorf("read %s at %.8s: %w", p, id, err)
	}
	if !found {
		data = nil
	}
	c.mu.Lock()
	c.read[readKey{id, p}] = &data
	c.mu.Unlock()
	return data, id, when, nil
}

// ReadFile implements Files: a file no commit holds is fs.ErrNotExist.
func (c *Committed) ReadFile(s audience.Scope, rel string) ([]byte, error) {
	data, _, _, err := c.file(s, rel)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, fmt.Errorf("%s: %w", path.Join(s.Dir(), rel), fs.ErrNotExist)
	}
	return data, nil
}

// Version implements Files: the file's size and the time of the commit
// it was read at, which moves with every commit of its scope.
func (c *Committed) Version(s audience.Scope, rel string) (Version, error) {
	data, _, when, err := c.file(s, rel)
	if err != nil || data == nil {
		return Version{}, err
	}
	return Version{Size: int64(len(data)), Mod: when, exists: true}, nil
}

// Folders implements Files: the scopes the repository has a line of.
func (c *Committed) Folders() ([]audience.Scope, error) {
	dirs, err := c.repo.LineDirs()
	if err != nil {
		return nil, fmt.Errorf("list the memory scopes: %w", err)
	}
	var out []audience.Scope
	for _, d := range dirs {
		name, ok := strings.CutPrefix(d, audience.ScopesDir+"/")
		if s, err := audience.ParseScope(name); ok && err == nil && s != audience.Default {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

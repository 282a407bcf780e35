package memory_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// BenchmarkPostgresCommittedPrompt is what a prompt reads of memory from
// a repository in PostgreSQL (memory.Committed): the three hot files of
// three scopes, each looked at (Version) and read — with no commit since
// the last prompt (one look at the refs' version per file, the files kept
// by commit id), and right after a commit of one of the scopes (its files
// read again). BenchmarkDiskPrompt is the same on files.
//
//	.ci/postgres run go test -run '^$' -bench 'Prompt$' -benchtime 200x ./memory/
func BenchmarkPostgresCommittedPrompt(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.DSN(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := gitstore.OpenDB(db.Repository(), gitstore.Options{
		Tracked:  []string{"SOUL.md", "USER.md", "memory/MEMORY.md"},
		Patterns: []string{"scopes/*/SOUL.md", "scopes/*/USER.md", "scopes/*/memory/MEMORY.md"},
		Lines:    audience.ScopesDir,
	})
	if err != nil {
		b.Fatal(err)
	}
	scopes := []audience.Scope{audience.Default, "team-slack-t1", "person-slack-t1-u1"}
	commit := func(i int) {
		head, err := s.Head()
		if err != nil {
			b.Fatal(err)
		}
		var changes []gitstore.Change
		for _, sc := range scopes[1:] {
			for _, rel := range memory.HotFiles() {
				changes = append(changes, gitstore.Change{Path: sc.Dir() + "/" + rel, Data: fmt.Appendf(nil, "- %s %s %d\n", sc, rel, i)})
			}
		}
		if _, err := s.CommitChanges(head.SHA, changes[:3+3*(i%2)], "dream: bench", ""); err != nil {
			b.Fatal(err)
		}
	}
	commit(1)
	benchPrompt(b, memory.NewCommitted(s), scopes, commit)
}

// BenchmarkDiskPrompt is BenchmarkPostgresCommittedPrompt's reads on a
// workspace's files.
func BenchmarkDiskPrompt(b *testing.B) {
	dir := b.TempDir()
	scopes := []audience.Scope{audience.Default, "team-slack-t1", "person-slack-t1-u1"}
	write := func(i int) {
		for _, sc := range scopes {
			for _, rel := range memory.HotFiles() {
				testkit.WriteFile(b, dir, path.Join(sc.Dir(), rel), fmt.Sprintf("- %s %s %d\n", sc, rel, i))
			}
		}
	}
	write(1)
	benchPrompt(b, memory.NewDisk(dir), scopes, write)
}

func benchPrompt(b *testing.B, files memory.Files, scopes []audience.Scope, change func(int)) {
	prompt := func() {
		for _, sc := range scopes {
			for _, rel := range memory.HotFiles() {
				if _, err := files.Version(sc, rel); err != nil {
					b.Fatal(err)
				}
				if _, err := files.ReadFile(sc, rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("unchanged", func(b *testing.B) {
		prompt()
		for b.Loop() {
			prompt()
		}
	})
	b.Run("after-a-commit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			change(i + 2)
			b.StartTimer()
			prompt()
		}
	})
}

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/gitstore/gitdbtest"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// BenchmarkPostgresCommitScopes is one Dream commit — a line added to one
// scope's memory/MEMORY.md, gitstore.CommitChanges on top of the head; in
// "+ledger", as a Dream step lands, CommitChangesWith writing a ledger
// record of 2 KB and the Dream cursor in the commit's transaction — in
// a memory repository in PostgreSQL holding 1,000 and 10,000 scopes, as
// gitstore's BenchmarkCommitScopes on files: the scopes committed in one
// branch (an earlier version's repository, imported), each on its line
// from its first commit of its own. objB/commit is the objects' content
// the commit stored, cpu-ms/op this process's CPU time (the server's is
// not counted: it is in the wall time), on the cluster .ci/postgres
// starts.
//
//	make test-postgres, or: .ci/postgres run go test -run '^$' -bench BenchmarkPostgresCommitScopes -benchtime 50x ./store/postgres/
func BenchmarkPostgresCommitScopes(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, ledger := range []bool{false, true} {
			name := fmt.Sprintf("postgres/lines/%d", n)
			if ledger {
				name = fmt.Sprintf("postgres/lines+ledger/%d", n)
			}
			b.Run(name, func(b *testing.B) { benchCommitScopes(b, n, ledger) })
		}
	}
}

// ledgerRecord is a Dream ledger's record of some scopes, about 2 KB.
var ledgerRecord = []byte(`{"version":2,"frontier":1200,"scopes":{` + strings.Repeat(`"person-slack-t0bench-u00001":{"cursor":1200,"since_deep":3},`, 30) + `"":{"cursor":1200}}}`)

func benchCommitScopes(b *testing.B, n int, ledger bool) {
	db, err := postgres.Open(context.Background(), pgtest.DSN(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	s := scopesInOneBranch(b, db.Repository(), n)
	b.Logf("%d scopes built and opened in %v", n, time.Since(start).Round(time.Millisecond))
	head, err := s.Head()
	if err != nil {
		b.Fatal(err)
	}
	stored0 := objectBytes(b, db)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var c gitstore.Commit
		var err error
		if ledger {
			c, err = s.CommitChangesWith(head.SHA, []gitstore.Change{scopeMemory(n, i)}, "dream: 1 change from history bench", "",
				func(_ gitstore.Commit, tx gitstore.DBTx) error {
					ltx := tx.(store.LedgerTx)
					if err := ltx.SetDreamCursor(1200 + i); err != nil {
						return err
					}
					return ltx.PutRecord(ledgerRecord)
				})
		} else {
			c, err = s.CommitChanges(head.SHA, []gitstore.Change{scopeMemory(n, i)}, "dream: 1 change from history bench", "")
		}
		if err != nil {
			b.Fatal(err)
		}
		head = c
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(objectBytes(b, db)-stored0)/float64(b.N), "objB/commit")
}

func benchScope(i int) string { return fmt.Sprintf("person-slack-t0bench-u%05d", i) }

// scopeMemory is a new MEMORY.md for scope i%n.
func scopeMemory(n, i int) gitstore.Change {
	k := (i + n) % n
	return gitstore.Change{
		Path: "scopes/" + benchScope(k) + "/memory/MEMORY.md",
		Data: fmt.Appendf(nil, "- %s prefers tea. <!-- durable 2026-01-01 src:%d -->\n- bench line %d\n", benchScope(k), k, i),
	}
}

func benchOptions(lines string) gitstore.Options {
	return gitstore.Options{
		Tracked:  []string{"SOUL.md", "USER.md", "memory/MEMORY.md"},
		Patterns: []string{"scopes/*/SOUL.md", "scopes/*/USER.md", "scopes/*/memory/MEMORY.md"},
		Lines:    lines,
	}
}

// scopesInOneBranch commits n scopes' three files in one commit of one
// branch, then opens the repository with a line per scope (which takes
// the scopes out of the branch once), and warms it with one commit.
func scopesInOneBranch(b *testing.B, repo *postgres.Repository, n int) *gitstore.Store {
	old, err := gitstore.OpenDB(repo, benchOptions(""))
	if err != nil {
		b.Fatal(err)
	}
	head, err := old.Head()
	if err != nil {
		b.Fatal(err)
	}
	changes := make([]gitstore.Change, 0, 3*n)
	for i := range n {
		dir := "scopes/" + benchScope(i) + "/"
		changes = append(changes,
			gitstore.Change{Path: dir + "SOUL.md", Data: []byte("# Soul\n\nI am a helpful assistant.\n")},
			gitstore.Change{Path: dir + "USER.md", Data: []byte("# User\n")},
			gitstore.Change{Path: dir + "memory/MEMORY.md", Data: fmt.Appendf(nil, "- %s prefers tea. <!-- durable 2026-01-01 src:%d -->\n", benchScope(i), i)})
	}
	if _, err := old.CommitChanges(head.SHA, changes, fmt.Sprintf("scope created: %d scopes", n), ""); err != nil {
		b.Fatal(err)
	}
	s, err := gitstore.OpenDB(repo, benchOptions("scopes"))
	if err != nil {
		b.Fatal(err)
	}
	if head, err = s.Head(); err != nil {
		b.Fatal(err)
	}
	if _, err := s.CommitChanges(head.SHA, []gitstore.Change{scopeMemory(n, -1)}, "dream: warm up", ""); err != nil {
		b.Fatal(err)
	}
	return s
}

// objectBytes is the content of every object the repository stores.
func objectBytes(b *testing.B, db *postgres.DB) int64 {
	n, err := postgres.RepositoryBytes(db)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// cpuTime is the CPU time this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPostgresHistory10k times, on a memory repository in PostgreSQL
// of 10,000 commits (9 Dream commits for each hand edit, on the default
// scope's memory/MEMORY.md): /dream-log (the latest Dream commit and its
// diff), a page of 10 Dream commits, a restore of the commit half-way down
// (5,000 commits back: the undo of its line, planned and committed), the
// first read of a process (its commit index rebuilt from the refs) and
// the export of the whole history into a workspace (git objects, refs,
// files). gitstore's BenchmarkStoreScale is the files' figures.
//
//	.ci/postgres run go test -run '^$' -bench BenchmarkPostgresHistory10k -benchtime 10x ./store/postgres/
func BenchmarkPostgresHistory10k(b *testing.B) {
	db, err := postgres.Open(context.Background(), pgtest.DSN(b), postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	mid, err := gitdbtest.BuildHistory(db.Repository(), benchOptions("scopes"), 10_000)
	if err != nil {
		b.Fatal(err)
	}
	s, err := gitstore.OpenDB(db.Repository(), benchOptions("scopes"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Log(1, "", nil); err != nil { // the index, built once
		b.Fatal(err)
	}
	b.Logf("10,000 commits built and indexed in %v", time.Since(start).Round(time.Millisecond))
	b.Run("DreamLog", func(b *testing.B) {
		for b.Loop() {
			if c, d, err := s.Latest("dream:", nil); err != nil || c.SHA == "" || len(d.Files) == 0 {
				b.Fatal(c, err)
			}
		}
	})
	b.Run("Log10", func(b *testing.B) {
		for b.Loop() {
			if cs, err := s.Log(10, "dream:", nil); err != nil || len(cs) != 10 {
				b.Fatal(len(cs), err)
			}
		}
	})
	b.Run("RestoreDeep", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			head, _ := s.Head()
			if _, err := s.CommitChanges(head.SHA, []gitstore.Change{{Path: "USER.md", Data: fmt.Appendf(nil, "- bench %d\n", i)}}, "dream: bench", ""); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := s.Restore(mid, nil, gitstore.RestoreOptions{}); err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
				b.Fatal(err)
			}
		}
	})
	b.Run("FirstRead", func(b *testing.B) {
		for b.Loop() {
			fresh, err := gitstore.OpenDB(db.Repository(), benchOptions("scopes"))
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := fresh.Latest("dream:", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Export", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Export(filepath.Join(b.TempDir(), "ws"), benchOptions("scopes")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

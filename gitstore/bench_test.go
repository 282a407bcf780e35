package gitstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
)

// Benchmarks run against a repository of 10,000 commits, built once per
// test process in a temporary directory (removed by TestMain) and only when
// a benchmark asks for it.
const benchCommits = 10_000

var benchRoot string // set by TestMain; test-only state

// benchOptions track what dreamgate tracks: the root's memory files and
// every scope folder's.
var benchOptions = gitstore.Options{Tracked: gitstore.TestTracked, Patterns: gitstore.TestPatterns}

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "gitstore-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	benchRoot = root
	code := m.Run()
	_ = os.RemoveAll(root)
	os.Exit(code)
}

type benchFixture struct {
	once  sync.Once
	dir   string
	store *gitstore.Store
	mid   gitstore.Commit // a commit half-way down the history
	err   error
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[string]*benchFixture{}
)

// fixture returns the 10k-commit repository, loose (as go-git leaves it) or
// packed (as after a repack).
func fixture(b *testing.B, kind string) *benchFixture { return fixtureN(b, kind, benchCommits) }

// fixtureN returns a repository of n commits, built once per process.
func fixtureN(b *testing.B, kind string, n int) *benchFixture {
	b.Helper()
	key := fmt.Sprintf("%s-%d", kind, n)
	fixturesMu.Lock()
	f := fixtures[key]
	if f == nil {
		f = &benchFixture{}
		fixtures[key] = f
	}
	fixturesMu.Unlock()
	f.once.Do(func() {
		f.dir = filepath.Join(benchRoot, key)
		start := time.Now()
		if f.err = buildHistory(f.dir, n, kind == "packed"); f.err != nil {
			return
		}
		b.Logf("built %d commits (%s) in %v; %s", n, kind, time.Since(start).Round(time.Millisecond), objectStats(f.dir))
		if f.store, f.err = gitstore.Open(f.dir, benchOptions); f.err != nil {
			return
		}
		var log []gitstore.Commit
		if log, f.err = f.store.Log(n/2, "", nil); f.err == nil {
			f.mid = log[len(log)-1]
		}
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
	return f
}

func objectStats(dir string) string {
	loose, bytes := 0, int64(0)
	_ = filepath.WalkDir(filepath.Join(dir, ".git", "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				bytes += (fi.Size() + 4095) / 4096 * 4096 // what the files occupy in 4 KiB blocks
				if !strings.Contains(p, string(filepath.Separator)+"pack"+string(filepath.Separator)) {
					loose++
				}
			}
		}
		return nil
	})
	return fmt.Sprintf("%d loose object files, %.1f MB on disk in .git/objects", loose, float64(bytes)/1e6)
}

// bumpMemory rewrites one line of MEMORY.md so the next Commit is real.
func bumpMemory(b *testing.B, dir string, i int) {
	p := filepath.Join(dir, "memory", "MEMORY.md")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	ls[i%50] = fmt.Sprintf("- fact %d: benchmark edit %d %d\n", i%50, i, time.Now().UnixNano())
	if err := os.WriteFile(p, []byte(strings.Join(ls, "")), 0o644); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkStore10k(b *testing.B) {
	for _, kind := range []string{"loose", "packed"} {
		benchReads10k(b, kind)
		benchWrites10k(b, kind)
		benchOpen10k(b, kind)
	}
}

// benchReads10k measures the reads of a 10,000-commit history: the latest
// Dream, a log, a commit by a short prefix, the status.
func benchReads10k(b *testing.B, kind string) {
	b.Run(kind+"/Latest", func(b *testing.B) {
		f := fixture(b, kind)
		for b.Loop() {
			c, d, err := f.store.Latest("dream:", nil)
			if err != nil || len(d.Files) == 0 || c.SHA == "" {
				b.Fatal(c, d, err)
			}
		}
	})
	b.Run(kind+"/LatestNoMatch", func(b *testing.B) {
		// Worst case: the prefix matches nothing, the whole first-parent
		// history is read.
		f := fixture(b, kind)
		for b.Loop() {
			if _, _, err := f.store.Latest("nothing:", nil); err == nil {
				b.Fatal("found a commit that does not exist")
			}
		}
	})
	b.Run(kind+"/Log10", func(b *testing.B) {
		f := fixture(b, kind)
		for b.Loop() {
			if log, err := f.store.Log(10, "dream:", nil); err != nil || len(log) != 10 {
				b.Fatal(len(log), err)
			}
		}
	})
	for _, n := range []int{4, 8} {
		b.Run(fmt.Sprintf("%s/ShowPrefix%d", kind, n), func(b *testing.B) {
			f := fixture(b, kind)
			target := uniquePrefixCommit(b, f, n)
			for b.Loop() {
				c, d, err := f.store.Show(target.SHA[:n], nil)
				if err != nil || c.SHA != target.SHA || len(d.Files) != 1 {
					b.Fatal(c, err)
				}
			}
		})
	}
	b.Run(kind+"/Status", func(b *testing.B) {
		f := fixture(b, kind)
		for b.Loop() {
			if _, err := f.store.Status(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchWrites10k measures a commit and a restore on a 10,000-commit
// history, the latest commit's and one half-way down's.
func benchWrites10k(b *testing.B, kind string) {
	b.Run(kind+"/Commit", func(b *testing.B) {
		f := fixture(b, kind)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			bumpMemory(b, f.dir, i)
			b.StartTimer()
			if _, err := f.store.Commit("dream: 1 change(s) from history bench", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(kind+"/Restore", func(b *testing.B) {
		f := fixture(b, kind)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			bumpMemory(b, f.dir, i)
			c, err := f.store.Commit("dream: 1 change(s) from history bench", "")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := f.store.Restore(c.Short, nil, gitstore.RestoreOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(kind+"/RestoreDeep", func(b *testing.B) {
		// Undo a commit half-way down (5,000 commits back), whose line
		// later commits changed again, undoing it whole: finding it and
		// the later commits dominates.
		f := fixture(b, kind)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			bumpMemory(b, f.dir, i) // so there is something to restore each time
			c, err := f.store.Commit("dream: 1 change(s) from history bench", "")
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := f.store.Restore(f.mid.SHA, nil, gitstore.RestoreOptions{Resolution: gitstore.UndoAll}); err != nil && !errors.Is(err, gitstore.ErrNothingToCommit) {
				b.Fatal(err)
			}
			b.StopTimer()
			// The next round undoes the commit just made too, so the
			// files change every round.
			if _, err := f.store.Restore(c.SHA, nil, gitstore.RestoreOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

// benchOpen10k measures opening a 10,000-commit repository, and the rare
// start that finds its branch empty.
func benchOpen10k(b *testing.B, kind string) {
	b.Run(kind+"/Open", func(b *testing.B) {
		f := fixture(b, kind)
		for b.Loop() {
			if _, err := gitstore.Open(f.dir, benchOptions); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(kind+"/OpenRepairingEmptyBranch", func(b *testing.B) {
		// The rare path: a start that finds the branch empty reads
		// every commit object to choose what to put back.
		f := fixture(b, kind)
		ref := filepath.Join(f.dir, ".git", "refs", "heads", "main")
		want, err := os.ReadFile(ref)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := os.WriteFile(ref, nil, 0o600); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := gitstore.Open(f.dir, benchOptions); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if got, _ := os.ReadFile(ref); !bytes.Equal(got, want) {
				b.Fatalf("repaired to %q, want %q", got, want)
			}
			b.StartTimer()
		}
	})
}

// BenchmarkStoreScale measures the two operations whose cost used to grow
// with the length of the history, at 1,000 and 10,000 commits:
// LatestNoMatch (/dream-log when no commit matches: the worst case of
// Latest) and RestoreDeep (/dream-restore of the commit half-way down,
// whose line later commits rewrote, undone whole);
// IndexRebuild is what the first of them costs when the commit index has to
// be rebuilt from the history.
// With DREAMGATE_BENCH_100K=1 it also runs at 100,000 commits, loose only:
// that fixture takes minutes and ~1.6 GB of disk, and packing it in memory
// would take gigabytes.
func BenchmarkStoreScale(b *testing.B) {
	sizes := []int{1_000, benchCommits}
	if os.Getenv("DREAMGATE_BENCH_100K") == "1" {
		sizes = append(sizes, 100_000)
	}
	for _, n := range sizes {
		for _, kind := range []string{"loose", "packed"} {
			if n > benchCommits && kind == "packed" {
				continue
			}
			name := fmt.Sprintf("%d/%s", n, kind)
			b.Run(name+"/LatestNoMatch", func(b *testing.B) {
				f := fixtureN(b, kind, n)
				for b.Loop() {
					if _, _, err := f.store.Latest("nothing:", nil); !errors.Is(err, gitstore.ErrNoMatchingCommit) {
						b.Fatal("want ErrNoMatchingCommit, got", err)
					}
				}
			})
			b.Run(name+"/IndexRebuild", func(b *testing.B) {
				// The one-time cost when the commit index is missing: a
				// fresh Store walks the whole history.
				f := fixtureN(b, kind, n)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					if err := os.Remove(filepath.Join(f.dir, ".git", gitstore.CommitIndexFile)); err != nil {
						b.Fatal(err)
					}
					s, err := gitstore.Open(f.dir, benchOptions)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, _, err := s.Latest("nothing:", nil); !errors.Is(err, gitstore.ErrNoMatchingCommit) {
						b.Fatal("want ErrNoMatchingCommit, got", err)
					}
				}
			})
			b.Run(name+"/RestoreDeep", func(b *testing.B) {
				f := fixtureN(b, kind, n)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					bumpMemory(b, f.dir, i)
					if _, err := f.store.Commit("dream: 1 change(s) from history bench", ""); err != nil {
						b.Fatal(err)
					}
					// A later commit rewrote the commit's line: the undo
					// follows it through every later version.
					if plan, err := f.store.PlanRestore(f.mid.SHA, nil); err != nil || plan.Conflicts() == 0 || len(plan.Later) == 0 {
						b.Fatal(plan, err)
					}
					b.StartTimer()
					r, err := f.store.Restore(f.mid.SHA, nil, gitstore.RestoreOptions{Resolution: gitstore.UndoAll})
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					// Its change back, for the next round to undo again.
					if _, err := f.store.Restore(r.Commit.SHA, nil, gitstore.RestoreOptions{}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
			b.Run(name+"/PlanDeep", func(b *testing.B) {
				// RestoreDeep's plan alone: reading the later versions
				// and following the commit's line through them, with no
				// write (whose fsyncs, on a busy machine, vary more than
				// the rest).
				f := fixtureN(b, kind, n)
				for b.Loop() {
					if plan, err := f.store.PlanRestore(f.mid.SHA, nil); err != nil || plan.Conflicts() == 0 {
						b.Fatal(plan, err)
					}
				}
			})
		}
	}
}

// uniquePrefixCommit picks a commit about 5,000 back whose first n hex
// digits name no other commit.
func uniquePrefixCommit(b *testing.B, f *benchFixture, n int) gitstore.Commit {
	b.Helper()
	all, err := f.store.Log(0, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	count := map[string]int{}
	for _, c := range all {
		count[c.SHA[:n]]++
	}
	for _, c := range all[len(all)/2:] {
		if count[c.SHA[:n]] == 1 {
			return c
		}
	}
	b.Fatal("no unique prefix")
	return gitstore.Commit{}
}

// BenchmarkPack times Pack on a fresh all-loose history: 1,700 commits is
// about the PackThreshold (6,700 objects), 10,000 commits is the worst case
// of a store that was never packed. Run with -benchtime 1x: each iteration
// builds its own repository first (untimed).
func BenchmarkPack(b *testing.B) {
	for _, n := range []int{1_700, benchCommits} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "ws")
				if err := buildHistory(dir, n, false); err != nil {
					b.Fatal(err)
				}
				s, err := gitstore.Open(dir, benchOptions)
				if err != nil {
					b.Fatal(err)
				}
				gitstore.SetPackThreshold(s, -1)
				b.StartTimer()
				packed, err := s.Pack()
				if err != nil || packed < 4*n {
					b.Fatal(packed, err)
				}
				b.StopTimer()
				b.ReportMetric(float64(packed), "objects")
				b.Logf("%d commits: %s", n, objectStats(dir))
			}
		})
	}
}

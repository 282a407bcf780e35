package gitstore_test

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"

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

// buildHistory makes a workspace whose memory/MEMORY.md (200 lines) got one
// line rewritten by each of n commits, nine Dream commits for each manual
// one. The objects (blob, memory/ tree, root tree, commit per step) are
// encoded in memory with go-git's plumbing, then written either as loose
// object files, in parallel (the layout go-git leaves behind), or as one
// pack through go-git's pack encoder. A last real Commit makes the index
// match, as in a live workspace.
func buildHistory(dir string, n int, packed bool) error {
	s, err := gitstore.Open(dir, benchOptions)
	if err != nil {
		return err
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	head, err := repo.Head()
	if err != nil {
		return err
	}
	root, err := repo.CommitObject(head.Hash())
	if err != nil {
		return err
	}
	tree, err := root.Tree()
	if err != nil {
		return err
	}
	var top []object.TreeEntry // .gitignore, SOUL.md, USER.md; memory/ is replaced each step
	for _, e := range tree.Entries {
		if e.Name != "memory" {
			top = append(top, e)
		}
	}
	mem := memory.NewStorage()
	var hashes []plumbing.Hash
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) (plumbing.Hash, error) {
		obj := mem.NewEncodedObject()
		if err := o.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		h, err := mem.SetEncodedObject(obj)
		hashes = append(hashes, h)
		return h, err
	}
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = fmt.Sprintf("- fact %d: the team decided something worth remembering\n", i)
	}
	parent := root.Hash
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		lines[i%len(lines)] = fmt.Sprintf("- fact %d: revised by run %d\n", i%len(lines), i)
		obj := mem.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, _ := obj.Writer()
		_, _ = w.Write([]byte(strings.Join(lines, "")))
		_ = w.Close()
		bh, err := mem.SetEncodedObject(obj)
		if err != nil {
			return err
		}
		hashes = append(hashes, bh)
		mh, err := put(&object.Tree{Entries: []object.TreeEntry{{Name: "MEMORY.md", Mode: filemode.Regular, Hash: bh}}})
		if err != nil {
			return err
		}
		entries := append(append([]object.TreeEntry{}, top...), object.TreeEntry{Name: "memory", Mode: filemode.Dir, Hash: mh})
		th, err := put(&object.Tree{Entries: entries})
		if err != nil {
			return err
		}
		subject := fmt.Sprintf("dream: 1 change(s) from history %d-%d", i, i)
		if i%10 == 0 {
			subject = gitstore.ManualSubject
		}
		sig := object.Signature{Name: "dreamgate", Email: "dreamgate@localhost", When: when.Add(time.Duration(i) * time.Hour)}
		if parent, err = put(&object.Commit{
			Author: sig, Committer: sig, TreeHash: th, ParentHashes: []plumbing.Hash{parent},
			Message: subject + "\n\nmemory/MEMORY.md: +1 -1\n",
		}); err != nil {
			return err
		}
		if !packed && i%2000 == 0 {
			// Loose objects go to disk as they come, so a long history
			// does not have to fit in memory.
			if err := writeLoose(filepath.Join(dir, ".git", "objects"), mem, hashes); err != nil {
				return err
			}
			mem, hashes = memory.NewStorage(), nil
		}
	}
	if packed {
		pw, err := repo.Storer.(storer.PackfileWriter).PackfileWriter()
		if err != nil {
			return err
		}
		if _, err := packfile.NewEncoder(pw, mem, false).Encode(hashes, 10); err != nil {
			return err
		}
		if err := pw.Close(); err != nil {
			return err
		}
	} else if err := writeLoose(filepath.Join(dir, ".git", "objects"), mem, hashes); err != nil {
		return err
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(head.Name(), parent)); err != nil {
		return err
	}
	lines[0] = "- fact 0: revised by the last run\n"
	if err := os.WriteFile(filepath.Join(dir, "memory", "MEMORY.md"), []byte(strings.Join(lines, "")), 0o644); err != nil {
		return err
	}
	_, err = s.Commit("dream: 1 change(s) from history last", "")
	return err
}

// writeLoose writes objects as git's loose files (objects/ab/cdef...: zlib
// of "<type> <size>\x00<data>") with a few workers: creating 40,000 small
// files is the slow part.
func writeLoose(objDir string, src *memory.Storage, hashes []plumbing.Hash) error {
	work := make(chan plumbing.Hash)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range work {
				if err := writeLooseObject(objDir, src, h); err != nil {
					errs <- err
					for range work { // drain so the sender finishes
					}
					return
				}
			}
		}()
	}
	for _, h := range hashes {
		work <- h
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func writeLooseObject(objDir string, src *memory.Storage, h plumbing.Hash) error {
	o, err := src.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return err
	}
	r, err := o.Reader()
	if err != nil {
		return err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	fmt.Fprintf(zw, "%s %d\x00", o.Type(), len(data))
	_, _ = zw.Write(data)
	if err := zw.Close(); err != nil {
		return err
	}
	name := h.String()
	if err := os.MkdirAll(filepath.Join(objDir, name[:2]), 0o755); err != nil {
		return err
	}
	err = os.WriteFile(filepath.Join(objDir, name[:2], name[2:]), buf.Bytes(), 0o444)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrExist) {
		return nil // identical content already there (e.g. an unchanged tree)
	}
	return err
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

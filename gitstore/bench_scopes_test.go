package gitstore_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/dreamgate/dreamgate/gitstore"
)

// BenchmarkCommitScopes is one Dream commit — a line added to one scope's
// memory/MEMORY.md, gitstore.CommitChanges on top of HEAD — in a workspace
// of 1,000 and 10,000 scopes, each with its three memory files committed
// (packed, as after Pack, with the git index holding every tracked file as
// git leaves it). B/commit is what the commit wrote (the bytes the process
// passed to write(2): objects, refs, the git index, the commit index),
// objB/commit the objects alone (their compressed files); the time is the
// commit's, with its fsync of the ref (cpu-ms/op: the process's CPU time,
// which the machine's load does not inflate).
//
//	go test -run '^$' -bench BenchmarkCommitScopes -benchtime 50x ./gitstore/
func BenchmarkCommitScopes(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, kind := range []string{"one-branch", "lines"} {
			b.Run(fmt.Sprintf("files/%s/%d", kind, n), func(b *testing.B) {
				dir := filepath.Join(b.TempDir(), "ws")
				start := time.Now()
				if err := buildScopes(dir, n); err != nil {
					b.Fatal(err)
				}
				opts := benchOptions
				if kind == "lines" {
					opts.Lines = "scopes" // Open splits the workspace built as an earlier version's
				}
				s, err := gitstore.Open(dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%d scopes built and opened in %v", n, time.Since(start).Round(time.Millisecond))
				benchScopeCommits(b, s, n, func() int64 { return looseBytes(dir) })
			})
		}
	}
}

// benchScopeCommits commits a line to a different scope's MEMORY.md each
// time and reports the bytes written per commit.
func benchScopeCommits(b *testing.B, s *gitstore.Store, n int, objects func() int64) {
	head, err := s.Head()
	if err != nil {
		b.Fatal(err)
	}
	// The first commit reads the packs and builds the commit index: not
	// what a commit costs.
	if head, err = s.CommitChanges(head.SHA, []gitstore.Change{scopeChange(n, -1)}, "dream: warm up", ""); err != nil {
		b.Fatal(err)
	}
	var written int64
	objs0 := objects()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		w0 := wchar(b)
		c, err := s.CommitChanges(head.SHA, []gitstore.Change{scopeChange(n, i)}, "dream: 1 change from history bench", "")
		written += wchar(b) - w0
		if err != nil {
			b.Fatal(err)
		}
		head = c
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(written)/float64(b.N), "B/commit")
	b.StopTimer()
	b.ReportMetric(float64(objects()-objs0)/float64(b.N), "objB/commit")
}

// looseBytes is the size of the loose object files of the workspace at
// dir: the objects the commits since the pack wrote.
func looseBytes(dir string) int64 {
	var n int64
	root := filepath.Join(dir, ".git", "objects")
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) != "pack" && filepath.Base(filepath.Dir(p)) != "info" {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// scopeChange is a new MEMORY.md for scope i%n: its line and one for i.
func scopeChange(n, i int) gitstore.Change {
	k := (i + n) % n
	return gitstore.Change{
		Path: "scopes/" + benchScope(k) + "/memory/MEMORY.md",
		Data: fmt.Appendf(nil, "- %s prefers tea. <!-- durable 2026-01-01 src:%d -->\n- bench line %d\n", benchScope(k), k, i),
	}
}

func benchScope(i int) string { return fmt.Sprintf("person-slack-t0bench-u%05d", i) }

// cpuTime is the CPU time the process has used so far (user and system):
// on a shared machine, what a commit costs of its own, whatever the load
// adds to its wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wchar is the bytes the process has passed to write(2) so far.
func wchar(b *testing.B) int64 {
	f, err := os.Open("/proc/self/io")
	if err != nil {
		b.Skip("no /proc/self/io to count the bytes written")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no wchar in /proc/self/io")
	return 0
}

// buildScopes makes a workspace whose one commit after the initial one
// holds the root's memory files and n scope folders, written as one pack,
// with a git index of every tracked file.
func buildScopes(dir string, n int) error {
	s, err := gitstore.Open(dir, benchOptions)
	if err != nil {
		return err
	}
	head, err := s.Head()
	if err != nil {
		return err
	}
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	o := &packObjects{mem: memory.NewStorage()}
	idx := &index.Index{Version: 2}
	scopes, err := o.scopeFolders(n, idx)
	if err != nil {
		return err
	}
	scopesTree, err := o.put(&object.Tree{Entries: scopes})
	if err != nil {
		return err
	}
	base, err := repo.CommitObject(plumbing.NewHash(head.SHA))
	if err != nil {
		return err
	}
	top, err := base.Tree()
	if err != nil {
		return err
	}
	entries := append(append([]object.TreeEntry{}, top.Entries...), object.TreeEntry{Name: "scopes", Mode: filemode.Dir, Hash: scopesTree})
	for _, e := range top.Entries {
		if e.Mode != filemode.Dir {
			idx.Entries = append(idx.Entries, &index.Entry{Name: e.Name, Hash: e.Hash, Mode: e.Mode})
		}
	}
	root, err := o.put(&object.Tree{Entries: entries})
	if err != nil {
		return err
	}
	sig := object.Signature{Name: "dreamgate", Email: "dreamgate@localhost", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c, err := o.put(&object.Commit{Author: sig, Committer: sig, TreeHash: root, ParentHashes: []plumbing.Hash{base.Hash},
		Message: fmt.Sprintf("scope created: %d scopes\n", n)})
	if err != nil {
		return err
	}
	if err := o.pack(repo); err != nil {
		return err
	}
	if err := repo.Storer.SetIndex(sortedIndex(idx)); err != nil {
		return err
	}
	return repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", c))
}

// packObjects are objects made in memory, to be written as one pack.
type packObjects struct {
	mem    *memory.Storage
	hashes []plumbing.Hash
}

func (o *packObjects) put(v interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := o.mem.NewEncodedObject()
	if err := v.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := o.mem.SetEncodedObject(obj)
	o.hashes = append(o.hashes, h)
	return h, err
}

func (o *packObjects) blob(data string) (plumbing.Hash, error) {
	obj := o.mem.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, _ := obj.Writer()
	_, _ = w.Write([]byte(data))
	_ = w.Close()
	h, err := o.mem.SetEncodedObject(obj)
	o.hashes = append(o.hashes, h)
	return h, err
}

// scopeFolders makes n scope folders' trees (SOUL.md and USER.md shared,
// a MEMORY.md of each scope's own), adding their files to the git index.
func (o *packObjects) scopeFolders(n int, idx *index.Index) ([]object.TreeEntry, error) {
	soul, err := o.blob("# Soul\n\nI am a helpful assistant.\n")
	if err != nil {
		return nil, err
	}
	user, err := o.blob("# User\n")
	if err != nil {
		return nil, err
	}
	var scopes []object.TreeEntry
	for i := range n {
		name := benchScope(i)
		mh, err := o.blob(fmt.Sprintf("- %s prefers tea. <!-- durable 2026-01-01 src:%d -->\n", name, i))
		if err != nil {
			return nil, err
		}
		memTree, err := o.put(&object.Tree{Entries: []object.TreeEntry{{Name: "MEMORY.md", Mode: filemode.Regular, Hash: mh}}})
		if err != nil {
			return nil, err
		}
		st, err := o.put(&object.Tree{Entries: []object.TreeEntry{
			{Name: "SOUL.md", Mode: filemode.Regular, Hash: soul},
			{Name: "USER.md", Mode: filemode.Regular, Hash: user},
			{Name: "memory", Mode: filemode.Dir, Hash: memTree},
		}})
		if err != nil {
			return nil, err
		}
		scopes = append(scopes, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: st})
		for p, h := range map[string]plumbing.Hash{"SOUL.md": soul, "USER.md": user, "memory/MEMORY.md": mh} {
			idx.Entries = append(idx.Entries, &index.Entry{Name: "scopes/" + name + "/" + p, Hash: h, Mode: filemode.Regular})
		}
	}
	return scopes, nil
}

// pack writes the objects into repo as one pack.
func (o *packObjects) pack(repo *git.Repository) error {
	pw, err := repo.Storer.(storer.PackfileWriter).PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := packfile.NewEncoder(pw, o.mem, false).Encode(o.hashes, 10); err != nil {
		return err
	}
	return pw.Close()
}

func sortedIndex(idx *index.Index) *index.Index {
	slices.SortFunc(idx.Entries, func(a, b *index.Entry) int { return strings.Compare(a.Name, b.Name) })
	return idx
}

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

// The benchmarks' history: commits encoded with go-git's plumbing instead
// of made one by one, so that 10,000 of them take seconds.

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
	objs := &benchObjects{mem: memory.NewStorage()}
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = fmt.Sprintf("- fact %d: the team decided something worth remembering\n", i)
	}
	parent := root.Hash
	for i := 1; i <= n; i++ {
		lines[i%len(lines)] = fmt.Sprintf("- fact %d: revised by run %d\n", i%len(lines), i)
		if parent, err = objs.step(i, lines, top, parent); err != nil {
			return err
		}
		if !packed && i%2000 == 0 {
			// Loose objects go to disk as they come, so a long history
			// does not have to fit in memory.
			if err := writeLoose(filepath.Join(dir, ".git", "objects"), objs.mem, objs.hashes); err != nil {
				return err
			}
			objs = &benchObjects{mem: memory.NewStorage()}
		}
	}
	if err := objs.write(dir, repo, packed); err != nil {
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

// benchObjects are the objects buildHistory encodes, kept in memory until
// they are written.
type benchObjects struct {
	mem    *memory.Storage
	hashes []plumbing.Hash
}

// put encodes o and keeps it.
func (x *benchObjects) put(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := x.mem.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := x.mem.SetEncodedObject(obj)
	x.hashes = append(x.hashes, h)
	return h, err
}

// step encodes the i-th commit of the history on top of parent: its
// MEMORY.md (lines) in a tree beside top's entries, a Dream's subject or,
// every tenth, hand edits'.
func (x *benchObjects) step(i int, lines []string, top []object.TreeEntry, parent plumbing.Hash) (plumbing.Hash, error) {
	obj := x.mem.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, _ := obj.Writer()
	_, _ = w.Write([]byte(strings.Join(lines, "")))
	_ = w.Close()
	bh, err := x.mem.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	x.hashes = append(x.hashes, bh)
	mh, err := x.put(&object.Tree{Entries: []object.TreeEntry{{Name: "MEMORY.md", Mode: filemode.Regular, Hash: bh}}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	entries := append(append([]object.TreeEntry{}, top...), object.TreeEntry{Name: "memory", Mode: filemode.Dir, Hash: mh})
	th, err := x.put(&object.Tree{Entries: entries})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	subject := fmt.Sprintf("dream: 1 change(s) from history %d-%d", i, i)
	if i%10 == 0 {
		subject = gitstore.ManualSubject
	}
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sig := object.Signature{Name: "dreamgate", Email: "dreamgate@localhost", When: when.Add(time.Duration(i) * time.Hour)}
	return x.put(&object.Commit{
		Author: sig, Committer: sig, TreeHash: th, ParentHashes: []plumbing.Hash{parent},
		Message: subject + "\n\nmemory/MEMORY.md: +1 -1\n",
	})
}

// write stores the objects in dir's repository: one pack through
// go-git's pack encoder, or loose object files.
func (x *benchObjects) write(dir string, repo *git.Repository, packed bool) error {
	if !packed {
		return writeLoose(filepath.Join(dir, ".git", "objects"), x.mem, x.hashes)
	}
	pw, err := repo.Storer.(storer.PackfileWriter).PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := packfile.NewEncoder(pw, x.mem, false).Encode(x.hashes, 10); err != nil {
		return err
	}
	return pw.Close()
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

package gitdbtest

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/dreamgate/dreamgate/gitstore"
)

// Open gives each test a database of its own, empty.
type Open func(t *testing.T) gitstore.DB

// Run runs the whole contract against the engine open gives.
func Run(t *testing.T, open Open) {
	t.Run("GoGit", func(t *testing.T) { GoGit(t, open(t)) })
	t.Run("Store", func(t *testing.T) { StoreOnDB(t, open) })
	t.Run("Copies", func(t *testing.T) { Copies(t, open(t)) })
	t.Run("CommitWith", func(t *testing.T) { CommitWith(t, open(t)) })
}

// write runs fn in one write of db with go-git's storage over it.
func write(t *testing.T, db gitstore.DB, fn func(st storage.Storer) error) error {
	t.Helper()
	return db.Write(func(tx gitstore.DBTx) error { return fn(gitstore.NewDBStorage(tx)) })
}

func put(st storage.Storer, o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

// commitFile stores a commit of one file on top of parent (zero: none).
func commitFile(st storage.Storer, name, text, msg string, parent plumbing.Hash, when time.Time) (plumbing.Hash, error) {
	blob := st.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, _ := blob.Writer()
	_, _ = w.Write([]byte(text))
	_ = w.Close()
	bh, err := st.SetEncodedObject(blob)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree, err := put(st, &object.Tree{Entries: []object.TreeEntry{{Name: name, Mode: filemode.Regular, Hash: bh}}})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "test", Email: "test@localhost", When: when}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	return put(st, c)
}

// GoGit runs go-git's own operations on db: a bare repository initialised
// by go-git, commits written with its plumbing and read back through its
// repository (head, log, trees), refs moved with compare-and-swap, listed
// and removed, config, index and shallow list kept, a submodule's refs
// apart, and a write that fails leaving nothing.
func GoGit(t *testing.T, db gitstore.DB) {
	when := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	var first, second plumbing.Hash
	err := write(t, db, func(st storage.Storer) error {
		if _, err := git.Init(st, nil); err != nil {
			return err
		}
		var err error
		if first, err = commitFile(st, "MEMORY.md", "- one\n", "first\n", plumbing.ZeroHash, when); err != nil {
			return err
		}
		if second, err = commitFile(st, "MEMORY.md", "- one\n- two\n", "second\n", first, when.Add(time.Hour)); err != nil {
			return err
		}
		return st.CheckAndSetReference(plumbing.NewHashReference("refs/heads/master", second), nil)
	})
	if err != nil {
		t.Fatalf("a write with go-git: %v", err)
	}
	repo, err := git.Open(gitstore.NewDBStorage(db.Reader()), nil)
	if err != nil {
		t.Fatalf("git.Open on the database: %v", err)
	}
	head, err := repo.Head()
	if err != nil || head.Hash() != second {
		t.Fatalf("HEAD = %v, %v; want %s", head, err, second)
	}
	iter, err := repo.Log(&git.LogOptions{From: head.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	_ = iter.ForEach(func(c *object.Commit) error { msgs = append(msgs, strings.TrimSpace(c.Message)); return nil })
	if !slices.Equal(msgs, []string{"second", "first"}) {
		t.Errorf("log = %q", msgs)
	}
	c, _ := repo.CommitObject(second)
	if f, err := c.File("MEMORY.md"); err != nil {
		t.Errorf("the file of the commit: %v", err)
	} else if text, _ := f.Contents(); text != "- one\n- two\n" {
		t.Errorf("the file holds %q", text)
	}
	if h, err := repo.ResolveRevision("master~1"); err != nil || *h != first {
		t.Errorf("master~1 = %v, %v", h, err)
	}
	goGitRefs(t, db, first, second)
	goGitRecords(t, db)
	goGitRollback(t, db, when)
}

// goGitRefs: compare-and-swap refuses a stale old value; refs are listed
// and removed; a submodule's refs stay its own.
func goGitRefs(t *testing.T, db gitstore.DB, first, second plumbing.Hash) {
	err := write(t, db, func(st storage.Storer) error {
		return st.CheckAndSetReference(plumbing.NewHashReference("refs/heads/master", first),
			plumbing.NewHashReference("refs/heads/master", first))
	})
	if !errors.Is(err, storage.ErrReferenceHasChanged) {
		t.Errorf("a move from a stale value = %v, want storage.ErrReferenceHasChanged", err)
	}
	err = write(t, db, func(st storage.Storer) error {
		if err := st.CheckAndSetReference(plumbing.NewHashReference("refs/scopes/team", first),
			plumbing.NewHashReference("refs/scopes/team", second)); !errors.Is(err, storage.ErrReferenceHasChanged) {
			return errors.New("a move of a ref that does not exist from a value succeeded")
		}
		if err := st.SetReference(plumbing.NewHashReference("refs/scopes/team", first)); err != nil {
			return err
		}
		m, err := st.Module("sub")
		if err != nil {
			return err
		}
		return m.SetReference(plumbing.NewHashReference("refs/heads/master", first))
	})
	if err != nil {
		t.Fatal(err)
	}
	st := gitstore.NewDBStorage(db.Reader())
	iter, err := st.IterReferences()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	_ = iter.ForEach(func(r *plumbing.Reference) error { names = append(names, r.Name().String()); return nil })
	slices.Sort(names)
	if !slices.Equal(names, []string{"HEAD", "refs/heads/master", "refs/scopes/team"}) {
		t.Errorf("refs = %q; a submodule's are its own", names)
	}
	if err := write(t, db, func(st storage.Storer) error { return st.RemoveReference("refs/scopes/team") }); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reference("refs/scopes/team"); !errors.Is(err, plumbing.ErrReferenceNotFound) {
		t.Errorf("a removed ref reads %v", err)
	}
	if m, _ := st.Module("sub"); m != nil {
		if r, err := m.Reference("refs/heads/master"); err != nil || r.Hash() != first {
			t.Errorf("the submodule's ref = %v, %v", r, err)
		}
	}
}

// goGitRecords: config, index and shallow list round-trip.
func goGitRecords(t *testing.T, db gitstore.DB) {
	h := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	err := write(t, db, func(st storage.Storer) error {
		cfg, err := st.Config()
		if err != nil {
			return err
		}
		cfg.Remotes["origin"] = &config.RemoteConfig{Name: "origin", URLs: []string{"https://example.invalid/memory.git"}}
		if err := st.SetConfig(cfg); err != nil {
			return err
		}
		if err := st.SetIndex(&index.Index{Version: 2, Entries: []*index.Entry{{Name: "SOUL.md", Hash: h, Mode: filemode.Regular}}}); err != nil {
			return err
		}
		return st.SetShallow([]plumbing.Hash{h})
	})
	if err != nil {
		t.Fatal(err)
	}
	st := gitstore.NewDBStorage(db.Reader())
	if cfg, err := st.Config(); err != nil || cfg.Remotes["origin"] == nil {
		t.Errorf("config = %v, %v", cfg, err)
	}
	if idx, err := st.Index(); err != nil || len(idx.Entries) != 1 || idx.Entries[0].Hash != h {
		t.Errorf("index = %v, %v", idx, err)
	}
	if sh, err := st.Shallow(); err != nil || !slices.Equal(sh, []plumbing.Hash{h}) {
		t.Errorf("shallow = %v, %v", sh, err)
	}
}

// goGitRollback: a write whose function fails stores nothing.
func goGitRollback(t *testing.T, db gitstore.DB, when time.Time) {
	var lost plumbing.Hash
	boom := errors.New("boom")
	err := write(t, db, func(st storage.Storer) error {
		var err error
		if lost, err = commitFile(st, "USER.md", "- lost\n", "lost\n", plumbing.ZeroHash, when); err != nil {
			return err
		}
		if err := st.SetReference(plumbing.NewHashReference("refs/heads/lost", lost)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("the failed write returned %v", err)
	}
	st := gitstore.NewDBStorage(db.Reader())
	if err := st.HasEncodedObject(lost); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("the failed write's commit is there: %v", err)
	}
	if _, err := st.Reference("refs/heads/lost"); !errors.Is(err, plumbing.ErrReferenceNotFound) {
		t.Errorf("the failed write's ref is there: %v", err)
	}
	iter, err := st.IterEncodedObjects(plumbing.CommitObject)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := iter.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d commits listed, want the 2 written", n)
	}
}

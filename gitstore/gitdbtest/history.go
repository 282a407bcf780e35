package gitdbtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"

	"github.com/dreamgate/dreamgate/gitstore"
)

// BuildHistory gives db's repository (opened with opts, made when new) n
// more commits on the default scope's memory/MEMORY.md — 200 lines, one
// rewritten by each, every tenth a hand edit, the others Dream's — in one
// write, through go-git's storage over the database, and returns the id of
// the commit half-way down. The benchmarks' history.
func BuildHistory(db gitstore.DB, opts gitstore.Options, n int) (string, error) {
	s, err := gitstore.OpenDB(db, opts)
	if err != nil {
		return "", err
	}
	head, err := s.Head()
	if err != nil {
		return "", err
	}
	mid := ""
	err = db.Write(func(tx gitstore.DBTx) error {
		st := gitstore.NewDBStorage(tx)
		tip, m, err := commitLines(st, plumbing.NewHash(head.SHA), n)
		if err != nil {
			return err
		}
		mid = m
		return st.SetReference(plumbing.NewHashReference("refs/heads/main", tip))
	})
	return mid, err
}

// commitLines stores n commits on top of parent, each rewriting one line
// of memory/MEMORY.md, and returns the last and the middle one's id.
func commitLines(st storage.Storer, parent plumbing.Hash, n int) (plumbing.Hash, string, error) {
	pc, err := object.GetCommit(st, parent)
	if err != nil {
		return parent, "", err
	}
	top, err := pc.Tree()
	if err != nil {
		return parent, "", err
	}
	var keep []object.TreeEntry
	for _, e := range top.Entries {
		if e.Name != "memory" {
			keep = append(keep, e)
		}
	}
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = fmt.Sprintf("- fact %d: the team decided something worth remembering\n", i)
	}
	when := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	mid := ""
	for i := 1; i <= n; i++ {
		lines[i%len(lines)] = fmt.Sprintf("- fact %d: revised by run %d\n", i%len(lines), i)
		blob := st.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, _ := blob.Writer()
		_, _ = w.Write([]byte(strings.Join(lines, "")))
		_ = w.Close()
		bh, err := st.SetEncodedObject(blob)
		if err != nil {
			return parent, "", err
		}
		mem, err := put(st, &object.Tree{Entries: []object.TreeEntry{{Name: "MEMORY.md", Mode: filemode.Regular, Hash: bh}}})
		if err != nil {
			return parent, "", err
		}
		entries := append(slices.Clone(keep), object.TreeEntry{Name: "memory", Mode: filemode.Dir, Hash: mem})
		slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
		tree, err := put(st, &object.Tree{Entries: entries})
		if err != nil {
			return parent, "", err
		}
		subject := fmt.Sprintf("dream: 1 change from history %d-%d", i, i)
		if i%10 == 0 {
			subject = gitstore.ManualSubject
		}
		sig := object.Signature{Name: "dreamgate", Email: "dreamgate@localhost", When: when.Add(time.Duration(i) * time.Minute)}
		if parent, err = put(st, &object.Commit{Author: sig, Committer: sig, TreeHash: tree,
			ParentHashes: []plumbing.Hash{parent}, Message: subject + "\n\nmemory/MEMORY.md: +1 -1\n"}); err != nil {
			return parent, "", err
		}
		if i == n/2 {
			mid = parent.String()
		}
	}
	return parent, mid, nil
}

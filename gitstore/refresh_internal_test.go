package gitstore

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// go-git writes every loose object through a temporary file in
// objects/pack, so that folder changes at each commit; the packs' indexes
// are read again only when the packs changed (at 10,000 scopes reading
// them cost a commit half its time). Here the one pack's index is made
// unreadable behind go-git's back after go-git read it, keeping its name,
// size and time: commits and reads of packed objects go on from the index
// go-git holds, where before each commit made it read the file again.
func TestCommitsKeepThePackIndexesRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "USER.md"), []byte("# User\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{Tracked: []string{"USER.md"}})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(text string) Commit {
		t.Helper()
		head, err := s.Head()
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.CommitChanges(head.SHA, []Change{{Path: "USER.md", Data: []byte(text)}}, "dream: "+text, "")
		if err != nil {
			t.Fatalf("commit %q: %v", text, err)
		}
		return c
	}
	packed := commit("- packed\n")
	s.packThreshold = -1
	if n, err := s.Pack(); err != nil || n == 0 {
		t.Fatalf("Pack = %d, %v", n, err)
	}
	if data, _, err := s.FileAt(packed.SHA, "USER.md"); err != nil || string(data) != "- packed\n" {
		t.Fatalf("FileAt of the packed commit = %q, %v", data, err)
	}
	idxs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("pack indexes: %v", idxs)
	}
	fi, err := os.Stat(idxs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(idxs[0], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idxs[0], bytes.Repeat([]byte{0xff}, int(fi.Size())), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(idxs[0], fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	commit("- one\n")
	commit("- two\n")
	if data, _, err := s.FileAt(packed.SHA, "USER.md"); err != nil || string(data) != "- packed\n" {
		t.Errorf("FileAt of the packed commit after two commits = %q, %v; the pack's index was read again", data, err)
	}
}

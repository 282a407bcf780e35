//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// tightenTree takes the group's and others' bits off every entry, keeps
// the owner's (an executable stays executable), leaves go-git's read-only
// objects and does not follow a link out of the tree.
func TestTightenTree(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]fs.FileMode{
		"MEMORY.md":                  0o644,
		"run.sh":                     0o755,
		"private":                    0o600,
		".git/objects/ab/cdef":       0o444,
		"notes/.git/objects/x":       0o444,
		"notes/objects-not-git.md":   0o444,
		"sub/deeper/history.jsonl":   0o666,
		".git/objects/ab/not-object": 0o644,
	}
	want := map[string]fs.FileMode{
		"MEMORY.md": 0o600, "run.sh": 0o700, "private": 0o600, ".git/objects/ab/cdef": 0o444,
		"notes/.git/objects/x": 0o444, "notes/objects-not-git.md": 0o400,
		"sub/deeper/history.jsonl": 0o600, ".git/objects/ab/not-object": 0o600,
	}
	for rel, mode := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	// Every directory open to others, whatever the umask of the test.
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := tightenTree(root)
	if err != nil {
		t.Fatal(err)
	}
	// 5 files, the root and its 7 directories below (.git, .git/objects,
	// .git/objects/ab, notes, notes/.git, notes/.git/objects, sub,
	// sub/deeper: 8) were open.
	if n != 5+1+8 {
		t.Errorf("changed %d entries, want %d", n, 5+1+8)
	}
	for rel, mode := range want {
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want %v", rel, fi.Mode().Perm(), err, mode)
		}
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Errorf("a link was followed out of the tree: %v", fi.Mode())
	}
	if n, err := tightenTree(root); n != 0 || err != nil {
		t.Errorf("second pass changed %d, %v", n, err)
	}
	// Below an owner-only directory nothing is reachable by others: the
	// tree is not walked.
	loose := filepath.Join(root, "MEMORY.md")
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := tightenTree(root); n != 0 || err != nil {
		t.Errorf("an owner-only tree was walked: %d, %v", n, err)
	}
	if n, err := tightenTree(filepath.Join(root, "missing")); n != 0 || err != nil {
		t.Errorf("a missing tree: %d, %v", n, err)
	}
}

// The config file is tightened where dreamgate keeps it (the state
// directory, by default), and left to its owner elsewhere (/etc, a file
// mounted into a container, often not the service's to change).
func TestPrivatePathsTakeTheConfigOnlyFromTheStateDir(t *testing.T) {
	state := t.TempDir()
	cfg := Config{Workspace: filepath.Join(state, "workspace"), StateDir: state}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{filepath.Join(state, "config.json"), true},
		{"/etc/dreamgate/config.json", false},
		{"", false},
	} {
		cfg.path = tc.path
		_, single := privatePaths(cfg)
		if got := tc.path != "" && slices.Contains(single, tc.path); got != tc.want {
			t.Errorf("config %q tightened: %v, want %v", tc.path, got, tc.want)
		}
	}
}

// The walk that runs once after an upgrade, over 5,000 files (a memory
// repository after ~1,000 Dreams holds ~4,200 loose objects), and the
// check every later start makes.
func BenchmarkTightenTree5000(b *testing.B) {
	root := b.TempDir()
	for i := range 5000 {
		p := filepath.Join(root, ".git", "objects", fmt.Sprintf("%02x", i%256), fmt.Sprintf("%038d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o444); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("first start", func(b *testing.B) {
		for b.Loop() {
			if err := os.Chmod(root, 0o755); err != nil {
				b.Fatal(err)
			}
			if n, err := tightenTree(root); n != 1 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
	b.Run("later starts", func(b *testing.B) {
		for b.Loop() {
			if n, err := tightenTree(root); n != 0 || err != nil {
				b.Fatal(n, err)
			}
		}
	})
}

package agent

import (
	"github.com/dreamgate/dreamgate/workspace"

	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve checks the confinement promise from outside: whatever path a
// model sends, an accepted one is a clean relative path inside the
// workspace, reaches no symbolic link and no file through a file, and obeys
// the policy — judged here by an independent reading of the policy and by the
// real file system. A refusal must wrap one of the five sentinels and must not
// reveal where the workspace is. Seeds are in testdata/fuzz/FuzzResolve.
//
//	go test -run '^$' -fuzz FuzzResolve ./agent/
func FuzzResolve(f *testing.F) {
	fx := newFixture(f)
	f.Fuzz(func(t *testing.T, p string, write, dream bool) {
		pol := ChatPolicy()
		if dream {
			pol = DreamPolicy()
		}
		rel, err := Resolve(fx.w, p, pol, write)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) && !errors.Is(err, ErrOutsideWorkspace) &&
				!errors.Is(err, ErrSymlink) && !errors.Is(err, ErrHardLink) && !errors.Is(err, ErrNotAllowed) {
				t.Fatalf("Resolve(%q) failed without a refusal sentinel: %v", p, err)
			}
			if strings.Contains(err.Error(), fx.base) {
				t.Fatalf("Resolve(%q) error reveals the workspace location: %v", p, err)
			}
			return
		}
		// Lexically inside.
		if len(p) > workspace.MaxPathBytes || strings.ContainsRune(p, 0) || strings.HasPrefix(p, "/") {
			t.Fatalf("Resolve accepted %q", p)
		}
		if rel != path.Clean(rel) || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			t.Fatalf("Resolve(%q) = %q, not a clean relative path", p, rel)
		}
		abs := filepath.Join(fx.dir, filepath.FromSlash(rel))
		if abs != fx.dir && !strings.HasPrefix(abs, fx.dir+string(filepath.Separator)) {
			t.Fatalf("Resolve(%q) = %q, outside the workspace", p, rel)
		}
		// Physically inside: no existing component is a link, none but the
		// last is a file.
		if rel != "." {
			parts := strings.Split(rel, "/")
			for i := range parts {
				sub := filepath.Join(fx.dir, filepath.FromSlash(strings.Join(parts[:i+1], "/")))
				fi, err := os.Lstat(sub)
				if err != nil {
					break
				}
				if fi.Mode()&fs.ModeSymlink != 0 {
					t.Fatalf("Resolve(%q) = %q goes through the link %s", p, rel, sub)
				}
				if i < len(parts)-1 && !fi.IsDir() {
					t.Fatalf("Resolve(%q) = %q goes through the file %s", p, rel, sub)
				}
			}
		}
		// Within the policy.
		if dream {
			if rel != "SOUL.md" && rel != "USER.md" && rel != "memory/MEMORY.md" {
				t.Fatalf("DreamPolicy let %q through as %q", p, rel)
			}
			return
		}
		lower := strings.ToLower(rel)
		under := func(dir string) bool { return lower == dir || strings.HasPrefix(lower, dir+"/") }
		if under(".git") {
			t.Fatalf("ChatPolicy let %q reach %q", p, rel)
		}
		if !write {
			return
		}
		for _, denied := range []string{"memory/history.jsonl", "memory/.cursor", "memory/.dream_cursor"} {
			if under(denied) {
				t.Fatalf("ChatPolicy let %q write %q", p, rel)
			}
		}
		if strings.HasPrefix(lower, "memory/") {
			for _, c := range strings.Split(lower, "/")[1:] {
				if strings.HasSuffix(c, ".lock") {
					t.Fatalf("ChatPolicy let %q write the lock file %q", p, rel)
				}
			}
		}
		if fi, err := os.Lstat(abs); err == nil {
			hist, err := os.Lstat(filepath.Join(fx.dir, "memory", "history.jsonl"))
			if err == nil && os.SameFile(fi, hist) {
				t.Fatalf("ChatPolicy let %q write the history file as %q", p, rel)
			}
		}
	})
}

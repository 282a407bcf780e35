package gitdbtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
)

// Copies: a workspace's repository of an earlier version (every scope in
// its branch), given its lines, goes into the database whole — the same
// commits in the same order — and a second copy copies nothing; the
// database's goes back into a workspace that git finds whole and clean,
// with every scope's history and files; histories that went apart are
// refused.
func Copies(t *testing.T, db gitstore.DB) {
	dir := filepath.Join(t.TempDir(), "workspace")
	old := Options()
	old.Lines, old.Initial = "", nil
	fs, err := gitstore.Open(dir, old)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, teamMemory, "- before the lines\n")
	if _, err := fs.Commit("dream: one branch", ""); err != nil {
		t.Fatal(err)
	}
	if fs, err = gitstore.Open(dir, Options()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, teamMemory, "- before the lines\n- on the team's line\n")
	writeFile(t, dir, personMemory, "- SECRET\n")
	writeFile(t, dir, rootMemory, "- root\n")
	if _, err := fs.Commit("dream: lines", ""); err != nil {
		t.Fatal(err)
	}
	want, err := fs.Log(0, "", nil)
	if err != nil {
		t.Fatal(err)
	}

	if lacks, err := gitstore.DBLacks(db, dir); err != nil || !slices.Contains(lacks, "refs/heads/main") {
		t.Errorf("what the empty database lacks of the workspace's refs: %v, %v; want refs/heads/main among them", lacks, err)
	}
	res, err := gitstore.CopyToDB(db, fs)
	if err != nil || res.Objects == 0 || len(res.Moved) == 0 {
		t.Fatalf("the copy into the database: %+v, %v", res, err)
	}
	if lacks, err := gitstore.DBLacks(db, dir); err != nil || len(lacks) != 0 {
		t.Errorf("what the database lacks after the copy: %v, %v; want nothing", lacks, err)
	}
	if again, err := gitstore.CopyToDB(db, fs); err != nil || again.Objects != 0 || len(again.Moved) != 0 {
		t.Errorf("a second copy: %+v, %v; want nothing copied", again, err)
	}
	ds, err := gitstore.OpenDB(db, Options())
	if err != nil {
		t.Fatal(err)
	}
	got, err := ds.Log(0, "", nil)
	if err != nil || !slices.Equal(shas(got), shas(want)) {
		t.Fatalf("the database's log:\n%v\nthe workspace's:\n%v (%v)", got, want, err)
	}
	head, _ := ds.Head()
	for _, p := range []string{teamMemory, personMemory, rootMemory, "SOUL.md"} {
		if fileAt(t, ds, head.SHA, p) != readFile(t, dir, p) {
			t.Errorf("%s in the database differs from the workspace's", p)
		}
	}
	exportBack(t, ds, want, dir)
	refuseApart(t, db, ds, fs, dir)
}

// exportBack writes the database's repository into a new workspace and
// checks it with the git command line.
func exportBack(t *testing.T, ds *gitstore.Store, want []gitstore.Commit, from string) {
	out := filepath.Join(t.TempDir(), "exported")
	es, err := ds.Export(out, Options())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ds.Export(out, Options()); !errors.Is(err, gitstore.ErrExists) {
		t.Errorf("an export into a repository = %v, want ErrExists", err)
	}
	got, err := es.Log(0, "", nil)
	if err != nil || !slices.Equal(shas(got), shas(want)) {
		t.Errorf("the exported log differs: %v", err)
	}
	for _, p := range []string{teamMemory, personMemory, rootMemory, "SOUL.md", "USER.md", ".gitignore"} {
		if got, want := readFile(t, out, p), readFile(t, from, p); got != want {
			t.Errorf("the exported %s = %q, the workspace's %q", p, got, want)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git is not installed: the export's fsck and status are not checked")
		return
	}
	if out, err := gitCLI(t, out, "fsck", "--full", "--strict", "--no-dangling", "--no-progress"); err != nil || out != "" {
		t.Errorf("git fsck --full on the export: %v\n%s", err, out)
	}
	if st, err := gitCLI(t, out, "status", "--porcelain"); err != nil || st != "" {
		t.Errorf("git status on the export: %v\n%s", err, st)
	}
	var wantLog []string
	for _, c := range want {
		wantLog = append(wantLog, c.SHA+" "+c.Subject)
	}
	if log, err := gitCLI(t, out, "log", "--all", "--date-order", "--format=%H %s"); err != nil || log != strings.Join(wantLog, "\n") {
		t.Errorf("git log --all of the export:\n%s\nwant:\n%s", log, strings.Join(wantLog, "\n"))
	}
}

// refuseApart: when each side has commits the other lacks, the copy
// refuses and moves no ref.
func refuseApart(t *testing.T, db gitstore.DB, ds, fs *gitstore.Store, dir string) {
	change(ds, t, "dream: in the database", map[string]string{rootMemory: "- root\n- db\n"})
	writeFile(t, dir, rootMemory, "- root\n- files\n")
	if _, err := fs.Commit("dream: in the workspace", ""); err != nil {
		t.Fatal(err)
	}
	before, _ := ds.Head()
	if _, err := gitstore.CopyToDB(db, fs); !errors.Is(err, gitstore.ErrDiverged) {
		t.Errorf("a copy of histories gone apart = %v, want ErrDiverged", err)
	}
	if after, _ := ds.Head(); after.SHA != before.SHA {
		t.Errorf("the refused copy moved the head from %s to %s", before.Short, after.Short)
	}
}

func writeFile(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// gitCLI runs the git command line in dir with no configuration of the
// machine's, and returns its output trimmed.
func gitCLI(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

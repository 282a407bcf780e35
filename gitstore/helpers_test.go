package gitstore_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
)

// clock is an injected time source: each call moves one minute on, so
// commits get distinct, predictable times.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(time.Minute)
	return c.t
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 4, 3, 10, 0, 0, 0, time.FixedZone("CEST", 2*3600))}
}

// openStore creates a workspace in a temp dir and opens a Store on it.
func openStore(t testing.TB) (*gitstore.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "workspace")
	s, err := gitstore.Open(dir, gitstore.Options{Tracked: gitstore.TestTracked, Now: newClock().now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, dir
}

func mustCommit(t testing.TB, s *gitstore.Store, subject string) gitstore.Commit {
	t.Helper()
	c, err := s.Commit(subject, "")
	if err != nil {
		t.Fatalf("Commit(%q): %v", subject, err)
	}
	return c
}

// hasGit reports whether the git command line is installed, without skipping.
func hasGit() bool {
	_, err := exec.LookPath("git")
	return err == nil
}

// gitBin returns the git command line, or skips the test.
func gitBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git binary not found; skipping the command-line cross-check")
	}
	return p
}

// runGit runs the real git in dir with a clean configuration and returns
// its standard output; a failure fails the test.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := tryGit(t, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func tryGit(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := gitCmd(t, dir, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func gitCmd(t testing.TB, dir string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(gitBin(t), append([]string{"-C", dir}, args...)...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@example.com",
		"GIT_CEILING_DIRECTORIES="+filepath.Dir(dir),
		"LC_ALL=C",
	)
	return cmd
}

// checkGit asserts that the git command line agrees with the Store: the
// first-parent log lists the same commits, fsck finds nothing, and status
// shows exactly wantStatus (porcelain lines, untracked and modified files;
// ignored files are not shown).
func checkGit(t testing.TB, s *gitstore.Store, dir string, wantStatus ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		return // the Store's own assertions still ran
	}
	commits, err := s.Log(0, "", nil)
	if err != nil {
		t.Fatalf("Log: %v", err)
	}
	var want []string
	for _, c := range commits {
		want = append(want, c.SHA+" "+c.Subject)
	}
	got := lines(runGit(t, dir, "log", "--first-parent", "--format=%H %s"))
	if !slices.Equal(got, want) {
		t.Errorf("git log:\n%s\nStore.Log:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// fsck reports problems on stderr, some with exit status 0 (warnings):
	// any output at all is a failure.
	out, err := gitCmd(t, dir, "fsck", "--full", "--strict", "--no-dangling", "--no-progress").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("git fsck --full: %v\n%s", err, out)
	}
	if got := lines(runGit(t, dir, "status", "--porcelain")); !slices.Equal(got, wantStatus) {
		t.Errorf("git status --porcelain = %q, want %q", got, wantStatus)
	}
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// sameCommit compares commits field by field (times by instant and offset).
func sameCommit(a, b gitstore.Commit) bool {
	_, oa := a.When.Zone()
	_, ob := b.When.Zone()
	return a.SHA == b.SHA && a.Short == b.Short && a.Subject == b.Subject && a.Body == b.Body &&
		a.Parent == b.Parent && a.When.Equal(b.When) && oa == ob
}

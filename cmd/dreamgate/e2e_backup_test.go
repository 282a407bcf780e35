package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// fileNames lists dir's files, slash-separated and relative.
func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	})
	return out
}

// A backup taken through the running gateway restores into a new home as
// the same memory: the archive, the Dream commit (git fsck --full clean),
// the conversations; the home then goes on. A backup never overwrites a
// file, a restore never writes into a home that holds anything, and the
// PostgreSQL engine is pointed at pg_dump.
func TestBackupRoundTrip(t *testing.T) {
	h := newHarness(t)
	sha := dreamCommit(t, h)
	p := h.startGateway(t)
	p.waitServing(t)
	p.stderr.WaitFor(t, "admin socket listening")
	file := filepath.Join(t.TempDir(), "dreamgate.tar.gz")
	r := h.run("backup", file)
	if r.code != 0 || !strings.Contains(r.stderr, "Backup written to "+file) {
		t.Fatalf("backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "the recall index is left out: the first search rebuilds it") {
		t.Errorf("the backup does not say the recall index is rebuilt:\n%s", r.stderr)
	}
	if !strings.Contains(p.stderr.String(), `"command":"backup"`) {
		t.Errorf("the running gateway did not take the backup; its log:\n%s", p.stderr.String())
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v %v, want owner-only", fi.Mode(), err)
	}
	if r := h.run("backup", file); r.code != 1 || !strings.Contains(r.stderr, "never overwrites") {
		t.Errorf("a backup onto an existing file: exit %d\n%s", r.code, r.stderr)
	}

	h2 := newHarness(t)
	r = h2.run("restore-backup", file)
	if r.code != 0 || !strings.Contains(r.stdout, "Restored ") {
		t.Fatalf("restore-backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustGit(t, h2.ws, "fsck", "--full")
	if a, b := mustGit(t, h.ws, "rev-parse", "HEAD"), mustGit(t, h2.ws, "rev-parse", "HEAD"); a != b {
		t.Errorf("the restored repository's HEAD is %s, the original's %s", b, a)
	}
	if a, b := readHistory(t, h.ws), readHistory(t, h2.ws); len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("restored archive %+v, want %+v", b, a)
	}
	if a, b := fileNames(t, filepath.Join(h.state, "sessions")), fileNames(t, filepath.Join(h2.state, "sessions")); !slices.Equal(withoutLocks(a), b) {
		t.Errorf("restored conversations %q, want %q", b, withoutLocks(a))
	}
	if r := h2.run("dream", "log"); r.code != 0 || !strings.Contains(r.stdout, sha) {
		t.Errorf("dream log in the restored home: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := h2.run("why", "tea"); r.code != 0 || !strings.Contains(r.stdout, "Prefers tea over coffee") {
		t.Errorf("why in the restored home: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := h2.run("chat", "-m", "hello again"); r.code != 0 {
		t.Errorf("chat in the restored home: exit %d\n%s", r.code, r.stderr)
	}

	before := fileNames(t, h2.home)
	if r := h2.run("restore-backup", file); r.code != 1 || !strings.Contains(r.stderr, "empty home") {
		t.Errorf("restore into a home that holds a workspace: exit %d\n%s", r.code, r.stderr)
	}
	if after := fileNames(t, h2.home); !slices.Equal(before, after) {
		t.Error("a refused restore changed the home")
	}
	postgresRefused(t, h2, file)
}

// postgresRefused checks that backup and restore-backup refuse the
// PostgreSQL engine in one sentence naming store.postgres and what to use
// instead, before they read or write anything.
func postgresRefused(t *testing.T, h *harness, file string) {
	t.Helper()
	h.set("store.postgres", "postgres://dreamgate@127.0.0.1:1/dreamgate")
	r := h.run("backup", filepath.Join(t.TempDir(), "pg.tar.gz"))
	if r.code != 1 || !strings.Contains(r.stderr, "store.postgres") || !strings.Contains(r.stderr, "pg_dump") {
		t.Errorf("backup with the PostgreSQL engine: exit %d\n%s", r.code, r.stderr)
	}
	oneSentence(t, r.stderr)
	empty := newHarness(t)
	empty.set("store.postgres", "postgres://dreamgate@127.0.0.1:1/dreamgate")
	before := fileNames(t, empty.home)
	r = empty.run("restore-backup", file)
	if r.code != 1 || !strings.Contains(r.stderr, "store.postgres") || !strings.Contains(r.stderr, "migrate --to-postgres") {
		t.Errorf("restore-backup with the PostgreSQL engine: exit %d\n%s", r.code, r.stderr)
	}
	oneSentence(t, r.stderr)
	if after := fileNames(t, empty.home); !slices.Equal(before, after) {
		t.Errorf("a restore refused for PostgreSQL wrote %q", after)
	}
}

func withoutLocks(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return strings.HasSuffix(n, ".lock") })
}

// A backup asked for while a Dream runs waits for it (and says so) rather
// than copy memory half edited: the restored home holds the Dream's
// change and a Dream cursor that agrees with it.
func TestBackupWaitsForARunningDream(t *testing.T) {
	h := newHarness(t)
	// The held call must outlast the backup's start on a loaded machine:
	// timed out and tried again, it is answered, and the Dream is over
	// before the backup looks.
	h.set("llm.timeoutSeconds", 120)
	release := make(chan struct{})
	var held, released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free) // a test that fails early leaves no call held
	h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
		if len(r.Tools) == 0 && strings.Contains(r.Messages[len(r.Messages)-1].Content, "## Archive entries") {
			held.Do(func() { <-release }) // the Dream's first analysis call
		}
		return llmtest.MemoryModel(r)
	})
	for _, m := range []string{"I live in Lisbon with my cat.", "/new"} {
		if r := h.run("chat", "-m", m); r.code != 0 {
			t.Fatalf("chat %q: %d %s", m, r.code, r.stderr)
		}
	}
	dreamRun := exec.Command(binPath, "--config", h.cfgPath, "dream", "run")
	dreamRun.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	var dreamOut bytes.Buffer
	dreamRun.Stdout, dreamRun.Stderr = &dreamOut, &dreamOut
	if err := dreamRun.Start(); err != nil {
		t.Fatal(err)
	}
	n := len(h.llm.Requests())
	if _, err := h.llm.WaitRequests(waitCtx(t), n+1); err != nil {
		t.Fatalf("the Dream never asked the model: %v\n%s", err, dreamOut.String())
	}
	file := filepath.Join(t.TempDir(), "during-a-dream.tar.gz")
	backup := exec.Command(binPath, "--config", h.cfgPath, "backup", file)
	backup.Env = dreamRun.Env
	backupErr := &testkit.Buffer{}
	backup.Stderr = backupErr
	if err := backup.Start(); err != nil {
		t.Fatal(err)
	}
	backupErr.WaitFor(t, "Waiting for the Dream running since")
	free()
	if err := dreamRun.Wait(); err != nil {
		t.Fatalf("dream run: %v\n%s", err, dreamOut.String())
	}
	done := make(chan error, 1)
	go func() { done <- backup.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("backup: %v\n%s", err, backupErr.String())
		}
	case <-time.After(2 * time.Minute):
		_ = backup.Process.Kill()
		t.Fatalf("the backup did not end after the Dream; stderr:\n%s", backupErr.String())
	}

	h2 := newHarness(t)
	if r := h2.run("restore-backup", file); r.code != 0 {
		t.Fatalf("restore-backup: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustGit(t, h2.ws, "fsck", "--full")
	user, _ := os.ReadFile(filepath.Join(h2.ws, "USER.md"))
	if !strings.Contains(string(user), "I live in Lisbon with my cat.") {
		t.Errorf("the restored USER.md lacks the Dream's change:\n%s", user)
	}
	hist := readHistory(t, h2.ws)
	if c := strings.TrimSpace(string(readDreamCursor(t, h2.ws))); len(hist) == 0 || c != "1" {
		t.Errorf("restored Dream cursor %q with %d entries; want it at the Dreamed entry", c, len(hist))
	}
}

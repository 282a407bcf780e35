package session

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// twoStores opens two stores on one new directory, closed when t ends.
func twoStores(t *testing.T) (a, b *Store) {
	t.Helper()
	dir := t.TempDir()
	for _, st := range []**Store{&a, &b} {
		s, err := NewStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		*st = s
	}
	return a, b
}

// Two stores on one directory stand for two processes (flock locks belong
// to the open file, so they exclude each other within one process too).
// The second is refused a key while the first has it loaded and awake; it
// gets it once the first lets it go.
func TestSecondStoreIsRefusedALoadedSession(t *testing.T) {
	a, b := twoStores(t)

	s, err := a.Get("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "remember X=1"}); err != nil {
		t.Fatal(err)
	}
	refused := func(when string) {
		t.Helper()
		_, err := b.Get("terminal:default")
		var le *LockedError
		if !errors.As(err, &le) {
			t.Fatalf("%s: second store got the session (err %v)", when, err)
		}
		if le.PID != os.Getpid() || !strings.Contains(le.Sentence(), "--session NAME") {
			t.Errorf("%s: refusal %+v %q", when, le, le.Sentence())
		}
		if _, _, err := b.Rotate("terminal:default"); !errors.As(err, &le) {
			t.Errorf("%s: second store rotated the session (err %v)", when, err)
		}
	}
	refused("while loaded")

	// Another key is free.
	if _, err := b.Get("terminal:other"); err != nil {
		t.Errorf("another key: %v", err)
	}

	if !a.Evict(s) {
		t.Fatal("evict failed")
	}
	s2, err := b.Get("terminal:default")
	if err != nil {
		t.Fatalf("after the first let it go: %v", err)
	}
	if msgs := s2.Messages(); len(msgs) != 1 || msgs[0].Content != "remember X=1" {
		t.Errorf("second store read %v", msgs)
	}
	// And now the first is refused, until the second closes.
	if _, err := a.Get("terminal:default"); err == nil {
		t.Error("first store got the session back while the second holds it")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get("terminal:default"); err != nil {
		t.Errorf("after the second closed: %v", err)
	}
}

// A set-aside conversation has its own lock: a second process's scan is
// refused it while the process that set it aside holds it, and gets it (all
// archived, nothing to do) once that one is done with it.
func TestSetAsideConversationIsArchivedByOneProcess(t *testing.T) {
	a, b := twoStores(t)
	s, err := a.Get("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "remember X=1"}); err != nil {
		t.Fatal(err)
	}
	old, _, err := a.Rotate("terminal:default")
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.ListSetAside()
	if err != nil || len(list) != 1 || list[0].Key != "terminal:default" || list[0].ID != old.ID() {
		t.Fatalf("set-aside list %+v, %v", list, err)
	}
	var le *LockedError
	if _, err := b.OpenSetAside(list[0]); !errors.As(err, &le) {
		t.Fatalf("second store opened a set-aside conversation the first holds (err %v)", err)
	}
	if got, err := a.OpenSetAside(list[0]); err != nil || got != old {
		t.Errorf("the first store's own set-aside session: %p %v, want %p", got, err, old)
	}
	if err := old.SetLastConsolidated(1, "- X is 1"); err != nil {
		t.Fatal(err)
	}
	a.ForgetSetAside(old)
	if _, err := os.Stat(old.path() + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock file of an archived set-aside conversation is left: %v", err)
	}
	again, err := b.OpenSetAside(list[0])
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != old.ID() || again.LastConsolidated() != 1 || again.Len() != 1 {
		t.Errorf("reloaded set-aside: id %s lc %d len %d", again.ID(), again.LastConsolidated(), again.Len())
	}
}

// The holder's id is written over whatever the lock file held (an id of
// an earlier version, longer or shorter) and read back whole.
func TestLockFileNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	st, err := NewStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	path := st.prefix("k") + ".lock"
	if err := os.WriteFile(path, []byte("1234567890123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get("k"); err != nil {
		t.Fatal(err)
	}
	if got := readPID(path); got != os.Getpid() {
		raw, _ := os.ReadFile(path)
		t.Fatalf("lock file names pid %d (%q), want %d", got, raw, os.Getpid())
	}
}

// A released session holds no descriptor and stays in memory. Woken with
// its files as it left them, it is the same session; when another process
// wrote meanwhile, Get loads it afresh and a write through the old one
// fails instead of writing on a conversation it no longer knows; while
// the other holds it, it is refused.
func TestReleasedSessionWakesOrReloads(t *testing.T) {
	a, b := twoStores(t)
	s, err := a.Get("slack:C1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "one"}); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	if !a.Release("slack:C1") || a.Release("slack:C1") {
		t.Fatal("Release: want true once, then false")
	}
	if after := openFDs(t); before >= 0 && after != before-2 {
		t.Errorf("open descriptors %d -> %d after the release, want two fewer (the file and the lock)", before, after)
	}
	if !a.IsLoaded("slack:C1") {
		t.Fatal("a released session left memory")
	}
	// Woken by a write, unchanged: the same session goes on.
	if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: "two"}); err != nil {
		t.Fatalf("append to a released session: %v", err)
	}
	a.Release("slack:C1")
	if got, err := a.Get("slack:C1"); err != nil || got != s || got.Len() != 2 {
		t.Fatalf("Get after an unchanged release: %p (want %p), %v", got, s, err)
	}

	// Another process writes while this one let go.
	a.Release("slack:C1")
	other, err := b.Get("slack:C1")
	if err != nil {
		t.Fatalf("the other store was refused a released session: %v", err)
	}
	if _, err := a.Get("slack:C1"); !errors.As(err, new(*LockedError)) {
		t.Errorf("Get while the other holds it: %v, want a LockedError", err)
	}
	if err := other.Append(llm.Message{Role: llm.RoleUser, Content: "three"}); err != nil {
		t.Fatal(err)
	}
	b.Evict(other)
	if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: "lost?"}); err == nil {
		t.Error("a write through the stale session succeeded")
	}
	fresh, err := a.Get("slack:C1")
	if err != nil {
		t.Fatal(err)
	}
	if fresh == s || fresh.Len() != 3 || fresh.Messages()[2].Content != "three" {
		t.Errorf("after the other's write: same %v, messages %v", fresh == s, fresh.Messages())
	}
}

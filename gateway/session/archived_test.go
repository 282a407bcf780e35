package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

// positions is a reader's record of how far it read each generation.
type positions map[string][2]int64

func (p positions) read(t *testing.T, st *Store, name string) (Archived, []string) {
	t.Helper()
	var got []string
	a, err := st.ReadArchived(name, func(id string) (int, int64) {
		pos := p[id]
		return int(pos[0]), pos[1]
	}, func(i int, m llm.Message) error {
		got = append(got, fmt.Sprintf("%d:%s", i, m.Content))
		return nil
	})
	if err != nil {
		t.Fatalf("ReadArchived(%s): %v", name, err)
	}
	p[a.ID] = [2]int64{int64(a.Next), a.NextAt}
	return a, got
}

// A reader sees only archived messages, once each, reading on from where
// it stopped, across /new, and takes no lock doing so.
func TestReadArchivedReadsOnWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	holder, _ := NewStore(dir, nil)
	defer holder.Close()
	s, err := holder.Get("slack:D1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetAudience(dm); err != nil {
		t.Fatal(err)
	}
	say := func(s *Session, words ...string) {
		for _, w := range words {
			if err := s.Append(llm.Message{Role: llm.RoleUser, Content: w}); err != nil {
				t.Fatal(err)
			}
		}
	}
	say(s, "a", "b", "c", "d")
	if err := s.SetLastConsolidated(2, ""); err != nil {
		t.Fatal(err)
	}

	reader, _ := NewStore(dir, nil)
	defer reader.Close()
	files, err := reader.ArchiveFiles()
	if err != nil || len(files) != 1 || files[0].Key != "slack:D1" {
		t.Fatalf("ArchiveFiles = %+v, %v", files, err)
	}
	name, stamp := files[0].Name, files[0].Stamp
	pos := positions{}
	a, got := pos.read(t, reader, name)
	if !slices.Equal(got, []string{"0:a", "1:b"}) || a.Key != "slack:D1" || a.Audience != dm || a.Next != 2 {
		t.Fatalf("first read: %v %+v", got, a)
	}
	if _, got = pos.read(t, reader, name); len(got) != 0 {
		t.Fatalf("read again with nothing new archived: %v", got)
	}

	say(s, "e")
	if err := s.SetLastConsolidated(4, ""); err != nil {
		t.Fatal(err)
	}
	files, _ = reader.ArchiveFiles()
	if files[0].Stamp == stamp {
		t.Error("the stamp did not change with an archive")
	}
	if _, got = pos.read(t, reader, name); !slices.Equal(got, []string{"2:c", "3:d"}) {
		t.Fatalf("read after a second archive: %v", got)
	}

	// /new: the old generation goes aside under a name of its own, the
	// live name holds a new one, read from its start.
	oldID := s.ID()
	old, fresh, err := holder.Rotate("slack:D1")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetLastConsolidated(5, ""); err != nil {
		t.Fatal(err)
	}
	say(fresh, "x", "y")
	if err := fresh.SetLastConsolidated(1, ""); err != nil {
		t.Fatal(err)
	}
	if _, got = pos.read(t, reader, name+"."+oldID); !slices.Equal(got, []string{"4:e"}) {
		t.Fatalf("the set-aside generation read on: %v", got)
	}
	if a, got = pos.read(t, reader, name); !slices.Equal(got, []string{"0:x"}) || a.ID == oldID {
		t.Fatalf("the new generation: %v %+v", got, a)
	}

	// The holder still holds its conversation: reading took no lock.
	var le *LockedError
	if _, err := reader.Get("slack:D1"); !errors.As(err, &le) {
		t.Errorf("Get from the reader = %v, want the holder's lock refusing it", err)
	}
}

// A conversation whose audience was never recorded is read as the
// narrowest audience there is, never a wider one; an error from the
// caller stops the read and keeps the position before it.
func TestReadArchivedUnknownAudienceAndStop(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	defer st.Close()
	s, _ := st.Get("discord:9")
	for _, w := range []string{"a", "b", "c"} {
		if err := s.Append(llm.Message{Role: llm.RoleUser, Content: w}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetLastConsolidated(3, ""); err != nil {
		t.Fatal(err)
	}
	files, _ := st.ArchiveFiles()
	stop := errors.New("stop")
	a, err := st.ReadArchived(files[0].Name, func(string) (int, int64) { return 0, 0 }, func(i int, _ llm.Message) error {
		if i == 1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("ReadArchived = %+v, %v; want the caller's error", a, err)
	}
	pos := positions{}
	a, got := pos.read(t, st, files[0].Name)
	if len(got) != 3 || a.Audience != audience.Unknown("discord:9") {
		t.Errorf("read: %v, audience %v", got, a.Audience)
	}
	// A position that no longer starts a line (the file edited by hand)
	// is read from the start again.
	p := pos[a.ID]
	pos[a.ID] = [2]int64{p[0] - 1, p[1] - 3}
	if _, got = pos.read(t, st, files[0].Name); !slices.Equal(got, []string{"0:a", "1:b", "2:c"}) {
		t.Errorf("read from a position inside a line: %v", got)
	}
	if _, err := st.ReadArchived("not a name", func(string) (int, int64) { return 0, 0 }, nil); err == nil {
		t.Error("a name that is no message file's was read")
	}
	if err := os.WriteFile(filepath.Join(dir, files[0].Name+".meta.json"), []byte("{oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, got = (positions{}).read(t, st, files[0].Name); len(got) != 0 {
		t.Errorf("unreadable metadata: %v read as archived", got)
	}
}

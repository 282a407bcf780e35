package session

import (
	"errors"
	"maps"
	"testing"

	"github.com/dreamgate/dreamgate/llm"
)

// Unarchived counts what each conversation has not archived yet, also of
// conversations another process holds, without taking their locks.
func TestUnarchivedReadsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	holder, _ := NewStore(dir, nil) // the running gateway
	defer holder.Close()
	say := func(key string, n, archived int) {
		s, err := holder.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "hi"}, llm.Message{Role: llm.RoleAssistant, Content: "hello"}); err != nil {
				t.Fatal(err)
			}
		}
		if archived > 0 {
			if err := s.SetLastConsolidated(archived, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	say("slack:C1:1712.55", 3, 2) // 6 messages, 2 archived
	say("terminal:default", 1, 2) // all archived
	say("discord:9", 1, 0)

	looker, _ := NewStore(dir, nil) // `dreamgate dream run`
	defer looker.Close()
	got, err := looker.Unarchived()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"slack:C1:1712.55": 4, "discord:9": 2}
	if !maps.Equal(got, want) {
		t.Errorf("Unarchived = %v, want %v", got, want)
	}
	// The holder still holds every conversation: looking took no lock.
	var le *LockedError
	if _, err := looker.Get("slack:C1:1712.55"); !errors.As(err, &le) {
		t.Errorf("Get from the looker = %v, want the holder's lock refusing it", err)
	}
	if s, err := holder.Get("discord:9"); err != nil || s.Len() != 2 {
		t.Errorf("holder's own conversation after the look: %v", err)
	}
}

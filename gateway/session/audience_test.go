package session

import (
	"os"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

var dm = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}

// A conversation's audience is recorded without a metadata write of its
// own: the next user message's origin carries it, a reload recovers it from
// there, and every metadata write keeps it. A conversation that never had
// one is audience.Unknown of its key.
func TestAudienceIsRecordedAndRecovered(t *testing.T) {
	dir := t.TempDir()
	st, _ := NewStore(dir, nil)
	s, err := st.Get("slack:D1")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := s.RecordedAudience(); ok || s.Audience() != audience.Unknown("slack:D1") {
		t.Errorf("a new conversation has the audience %v (%v), want none, read as audience.Unknown", a, ok)
	}
	if err := s.SetAudience(audience.Audience{Kind: audience.Team, Platform: "slack"}); err == nil {
		t.Error("an invalid audience was recorded")
	}
	if err := s.SetAudience(dm); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.prefix + ".meta.json"); !os.IsNotExist(err) {
		t.Errorf("SetAudience wrote the metadata (%v); a new conversation must cost no metadata write", err)
	}
	if _, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "hi"}, Origin{Channel: "slack", MessageID: "1", Audience: dm}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2, _ := NewStore(dir, nil)
	s2, err := st2.Get("slack:D1")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := s2.RecordedAudience(); !ok || a != dm || s2.Audience() != dm {
		t.Fatalf("after a reload: %v (%v), want %v from the message's origin", a, ok, dm)
	}
	if err := s2.Append(llm.Message{Role: llm.RoleAssistant, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := s2.SetLastConsolidated(2, "- said hi"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(s2.prefix + ".meta.json")
	if err != nil || !strings.Contains(string(raw), `"audience":"slack/person/T1/UANA"`) {
		t.Errorf("the metadata does not hold the audience: %s, %v", raw, err)
	}
	st2.Close()

	// Its set-aside copy (/new) keeps it too.
	st3, _ := NewStore(dir, nil)
	old, fresh, err := st3.Rotate("slack:D1")
	if err != nil {
		t.Fatal(err)
	}
	if old.Audience() != dm {
		t.Errorf("the set-aside conversation's audience is %v", old.Audience())
	}
	if _, ok := fresh.RecordedAudience(); ok {
		t.Error("the fresh conversation inherited an audience")
	}
	st3.Close()
	st4, _ := NewStore(dir, nil)
	defer st4.Close()
	aside, err := st4.ListSetAside()
	if err != nil || len(aside) != 1 {
		t.Fatalf("set aside: %v, %v", aside, err)
	}
	s4, err := st4.OpenSetAside(aside[0])
	if err != nil {
		t.Fatal(err)
	}
	if s4.Audience() != dm {
		t.Errorf("the set-aside conversation loaded from disk has the audience %v", s4.Audience())
	}
}

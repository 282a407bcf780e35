package session_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gateway/session"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/store/storetest"
)

// The conversations' conformance suite: what a session store promises on
// files (the embedded engine), it keeps on PostgreSQL. Each case gets a
// fresh engine and opens it again as a restart would.

// engine opens stores on one engine's state; each call is a new process.
type engine func(t *testing.T) *session.Store

func filesEngine(t *testing.T) engine {
	dir := t.TempDir()
	return func(t *testing.T) *session.Store {
		st, err := session.NewStore(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

func postgresEngine(t *testing.T) engine {
	dsn := pgtest.DSN(t)
	return func(t *testing.T) *session.Store {
		db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := session.NewStoreOn(db.Conversations(), nil)
		t.Cleanup(func() { st.Close(); db.Close() })
		return st
	}
}

var conformance = []struct {
	name string
	fn   func(t *testing.T, open engine)
}{
	{"AppendSurvivesRestart", convAppendSurvivesRestart},
	{"RotateSetsAsideAndArchives", convRotate},
	{"LongConversationHoldsItsTail", convLongTail},
	{"OriginsAudienceAndRedelivery", convOrigins},
	{"ArchivedMessagesReadOn", convReadArchived},
	{"UnarchivedAndListing", convUnarchived},
}

func TestStoreEmbeddedConversations(t *testing.T) {
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) { c.fn(t, filesEngine(t)) })
	}
}

func TestStorePostgresConversations(t *testing.T) {
	pgtest.Server(t)
	for _, c := range conformance {
		t.Run(c.name, func(t *testing.T) { c.fn(t, postgresEngine(t)) })
	}
}

func get(t *testing.T, st *session.Store, key string) *session.Session {
	t.Helper()
	s, err := st.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func contents(ms []llm.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Content
	}
	return out
}

func appendTurns(t *testing.T, s *session.Session, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := s.Append(llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("q%d", i)}, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("a%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// Messages, the archive mark, the summary and the ID survive a restart;
// the text is kept as written.
func convAppendSurvivesRestart(t *testing.T, open engine) {
	st := open(t)
	s := get(t, st, "slack:C1:1712.55")
	id := s.ID()
	if err := s.Append(llm.Message{Role: llm.RoleUser, Content: "hi <b>& ünï \"q\""}, llm.Message{Role: llm.RoleAssistant, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveID(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(1, "- said hi"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLastConsolidated(3, ""); err == nil {
		t.Fatal("last_consolidated past the messages was taken")
	}
	st.Close()
	s2 := get(t, open(t), "slack:C1:1712.55")
	if s2.ID() != id || s2.Len() != 2 || s2.LastConsolidated() != 1 || s2.LastSummary() != "- said hi" {
		t.Fatalf("after a restart: id %s (want %s) len %d lc %d summary %q", s2.ID(), id, s2.Len(), s2.LastConsolidated(), s2.LastSummary())
	}
	ms := s2.Messages()
	if !slices.Equal(contents(ms), []string{"hi <b>& ünï \"q\"", "hello"}) || ms[0].Time.IsZero() {
		t.Fatalf("messages %+v", ms)
	}
	fresh := get(t, open(t), "slack:C9")
	if fresh.Len() != 0 || fresh.ID() == "" {
		t.Fatalf("an unknown key: len %d id %q", fresh.Len(), fresh.ID())
	}
}

// /new sets the conversation aside under its ID; it is listed as such,
// its tail is archived through it, and the key starts afresh.
func convRotate(t *testing.T, open engine) {
	st := open(t)
	s := get(t, st, "k")
	appendTurns(t, s, 0, 3)
	oldID := s.ID()
	old, fresh, err := st.Rotate("k")
	if err != nil {
		t.Fatal(err)
	}
	if old.ID() != oldID || old.Len() != 6 || fresh.Len() != 0 || fresh.ID() == oldID {
		t.Fatalf("rotate: old %s/%d fresh %s/%d", old.ID(), old.Len(), fresh.ID(), fresh.Len())
	}
	appendTurns(t, fresh, 10, 1)
	if err := old.SetLastConsolidated(2, "- part"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st2 := open(t)
	aside, err := st2.ListSetAside()
	if err != nil || len(aside) != 1 || aside[0].Key != "k" || aside[0].ID != oldID {
		t.Fatalf("ListSetAside = %+v, %v", aside, err)
	}
	a, err := st2.OpenSetAside(aside[0])
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 6 || a.LastConsolidated() != 2 || a.ID() != oldID {
		t.Fatalf("set aside: len %d lc %d id %s", a.Len(), a.LastConsolidated(), a.ID())
	}
	if err := a.SetLastConsolidated(6, "- all"); err != nil {
		t.Fatal(err)
	}
	st2.ForgetSetAside(a)
	cur := get(t, st2, "k")
	if !slices.Equal(contents(cur.Messages()), []string{"q10", "a10"}) {
		t.Fatalf("the key's conversation after /new: %q", contents(cur.Messages()))
	}
	st2.Close()
	aside, _ = open(t).ListSetAside()
	if len(aside) != 1 {
		t.Fatalf("a set-aside conversation must stay listed until removed by hand: %+v", aside)
	}
	a2, err := open(t).OpenSetAside(aside[0])
	if err != nil || a2.LastConsolidated() != 6 {
		t.Fatalf("its archive mark: %v %v", a2, err)
	}
}

// A long conversation holds its tail in memory; what is archived before
// it is read back when asked, and a restart keeps it all.
func convLongTail(t *testing.T, open engine) {
	st := open(t)
	s := get(t, st, "long")
	appendTurns(t, s, 0, 300)
	if err := s.SetLastConsolidated(560, "- most"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st2 := open(t)
	s2 := get(t, st2, "long")
	base, tail := s2.Tail()
	if base == 0 || base+len(tail) != 600 || base > 560-16 {
		t.Fatalf("tail from %d, %d messages", base, len(tail))
	}
	all := s2.Messages()
	if len(all) != 600 || all[0].Content != "q0" || all[599].Content != "a299" {
		t.Fatalf("all messages: %d", len(all))
	}
	appendTurns(t, s2, 300, 1)
	st2.Close()
	if got := get(t, open(t), "long").Len(); got != 602 {
		t.Fatalf("after an append past the tail: %d", got)
	}
}

// A user message's origin names its sender, its audience is the
// conversation's, and the same platform message is recorded once.
func convOrigins(t *testing.T, open engine) {
	st := open(t)
	s := get(t, st, "slack:C1")
	aud := audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	if err := s.SetAudience(aud); err != nil {
		t.Fatal(err)
	}
	o := session.Origin{Channel: "slack", ChatID: "C1", MessageID: "1712.1", SenderID: "U1", SenderName: "Ana", Audience: aud}
	sent := time.Now()
	if wrote, err := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "hello"}, o); err != nil || !wrote {
		t.Fatalf("AppendUser = %v %v", wrote, err)
	}
	if wrote, _ := s.AppendUser(llm.Message{Role: llm.RoleUser, Content: "hello"}, o); wrote {
		t.Fatal("the same platform message was recorded twice")
	}
	if err := s.Append(llm.Message{Role: llm.RoleAssistant, Content: "hi Ana"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s2 := get(t, open(t), "slack:C1")
	if r := s2.Recorded(o, sent); !r.Held || !r.Newest || r.Reply != "hi Ana" {
		t.Fatalf("Recorded = %+v", r)
	}
	if got, ok := s2.RecordedAudience(); !ok || got != aud {
		t.Fatalf("audience after a restart = %v %v", got, ok)
	}
	if ms := s2.Messages(); ms[0].Sender != "Ana" {
		t.Fatalf("sender %q", ms[0].Sender)
	}
}

// A reader of archived messages reads what is archived, then only what
// was archived since, without holding the conversation.
func convReadArchived(t *testing.T, open engine) {
	st := open(t)
	s := get(t, st, "slack:C2")
	appendTurns(t, s, 0, 5)
	if err := s.SetLastConsolidated(4, "- first"); err != nil {
		t.Fatal(err)
	}
	reader := open(t)
	files, err := reader.ArchiveFiles()
	if err != nil || len(files) != 1 || files[0].Key != "slack:C2" {
		t.Fatalf("ArchiveFiles = %+v %v", files, err)
	}
	var read []string
	next := map[string][2]int64{}
	readOnce := func() session.Archived {
		t.Helper()
		a, err := reader.ReadArchived(files[0].Name, func(id string) (int, int64) {
			p := next[id]
			return int(p[0]), p[1]
		}, func(_ int, m llm.Message) error {
			read = append(read, m.Content)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		next[a.ID] = [2]int64{int64(a.Next), a.NextAt}
		return a
	}
	if a := readOnce(); a.Next != 4 || !slices.Equal(read, []string{"q0", "a0", "q1", "a1"}) {
		t.Fatalf("first read: next %d, %q", a.Next, read)
	}
	if err := s.SetLastConsolidated(8, "- more"); err != nil {
		t.Fatal(err)
	}
	read = nil
	if a := readOnce(); a.Next != 8 || !slices.Equal(read, []string{"q2", "a2", "q3", "a3"}) {
		t.Fatalf("second read: next %d, %q", a.Next, read)
	}
	if again, _ := reader.ArchiveFiles(); again[0].Stamp == files[0].Stamp {
		t.Fatal("the stamp did not change with the archive")
	}
}

// Unarchived counts what each conversation has not archived; ListOnDisk
// lists the conversations that hold messages.
func convUnarchived(t *testing.T, open engine) {
	st := open(t)
	appendTurns(t, get(t, st, "a"), 0, 3)
	b := get(t, st, "b")
	appendTurns(t, b, 0, 2)
	if err := b.SetLastConsolidated(4, ""); err != nil {
		t.Fatal(err)
	}
	get(t, st, "empty")
	other := open(t)
	un, err := other.Unarchived()
	if err != nil || len(un) != 1 || un["a"] != 6 {
		t.Fatalf("Unarchived = %v %v", un, err)
	}
	list, err := other.ListOnDisk()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range list {
		keys = append(keys, c.Key)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "a,b" {
		t.Fatalf("ListOnDisk = %v", keys)
	}
}

// The conversations' contract (store.Conversations) on the files, as a
// copy between engines sees them.
func TestStoreEmbeddedConversationContract(t *testing.T) {
	storetest.RunConversations(t, func(t *testing.T) (store.Conversations, func(*testing.T) store.Conversations) {
		dir := t.TempDir()
		return session.NewFiles(dir), func(*testing.T) store.Conversations { return session.NewFiles(dir) }
	})
}

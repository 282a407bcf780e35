package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// OpenRecall opens a fresh, empty recall index of the engine under test,
// and reopen another handle on it (another process).
type OpenRecall func(t *testing.T) (ix store.RecallIndex, reopen func(t *testing.T) store.RecallIndex)

// RunRecall runs the recall index's contract tests against an engine.
func RunRecall(t *testing.T, open OpenRecall) {
	t.Run("EmptyFindsNothing", func(t *testing.T) { recallEmpty(t, open) })
	t.Run("WordsWithinOneScope", func(t *testing.T) { recallWords(t, open) })
	t.Run("NewestFirst", func(t *testing.T) { recallNewest(t, open) })
	t.Run("ReadAndDrop", func(t *testing.T) { recallReadDrop(t, open) })
	t.Run("Marks", func(t *testing.T) { recallMarks(t, open) })
	t.Run("OneWriterCommitsOrDrops", func(t *testing.T) { recallWriter(t, open) })
	t.Run("Reset", func(t *testing.T) { recallReset(t, open) })
}

var (
	recallTeam = audience.Scope("slack-T1")
	recallDM   = audience.Scope("slack-T1-U1")
	recallAt   = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).Unix()
)

// update runs fn as the writer and fails the test on an error.
func recallUpdate(t *testing.T, ix store.RecallIndex, fn func(w store.RecallWriter) error) {
	t.Helper()
	if err := ix.Update(t.Context(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

func recallAdd(w store.RecallWriter, s audience.Scope, docs ...store.RecallDoc) error {
	for _, d := range docs {
		if err := w.Add(s, d); err != nil {
			return err
		}
	}
	return nil
}

func recallMsg(pos int, at int64, who, text string) store.RecallDoc {
	return store.RecallDoc{Kind: store.RecallMessage, At: at, Conversation: "slack:C1", Pos: pos, Who: who, Text: text}
}

// found are the texts of the documents terms finds in s, newest first.
func found(t *testing.T, ix store.RecallIndex, s audience.Scope, terms ...string) []string {
	t.Helper()
	hits, err := ix.Match(t.Context(), s, terms, 50, 0)
	if err != nil {
		t.Fatalf("Match(%q, %v): %v", s, terms, err)
	}
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
		if i > 0 && h.Order > hits[i-1].Order {
			t.Fatalf("Match(%v): not newest first: %+v", terms, hits)
		}
	}
	rows, err := ix.Read(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		if r.Scope != s {
			t.Fatalf("Match(%q) found a row of %q", s, r.Scope)
		}
		out[i] = r.Text
	}
	return out
}

func wantTexts(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		t.Errorf("%s: found %q, want %q", what, got, want)
	}
}

func recallEmpty(t *testing.T, open OpenRecall) {
	ix, _ := open(t)
	ctx := t.Context()
	if n, err := ix.Count(ctx, recallTeam); err != nil || n != 0 {
		t.Fatalf("Count of an empty index: %d %v", n, err)
	}
	if hits, err := ix.Match(ctx, recallTeam, []string{"anything"}, 10, 0); err != nil || len(hits) != 0 {
		t.Fatalf("Match of an empty index: %v %v", hits, err)
	}
	if rows, err := ix.Read(ctx, []int64{1, 2}); err != nil || len(rows) != 0 {
		t.Fatalf("Read of an empty index: %v %v", rows, err)
	}
	if v, err := ix.Mark(ctx, "complete"); err != nil || v != "" {
		t.Fatalf("Mark of an empty index: %q %v", v, err)
	}
}

// A term finds its word in any case, without diacritics, inflected, and
// the speaker's name; never a longer word or another code; every term of
// a query must be there; and only in the scope searched.
func recallWords(t *testing.T, open OpenRecall) {
	ix, _ := open(t)
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		if err := recallAdd(w, recallTeam,
			recallMsg(0, recallAt, "Ana", "The SALARIES are paid on Friday."),
			recallMsg(1, recallAt+60, "user", "We met at the Café Noir, naïve as we were."),
			recallMsg(2, recallAt+120, "Bob", "Order p0009 shipped; p00090 and p0010 did not."),
			recallMsg(3, recallAt+180, "assistant", "Running late: the deploy of example.com is blocked."),
			recallMsg(4, recallAt+240, "Cleo", "東京 office opens in 2026, says Привет."),
		); err != nil {
			return err
		}
		return recallAdd(w, recallDM, recallMsg(0, recallAt, "Ana", "my salary is private"))
	})
	for _, c := range []struct {
		terms []string
		want  []string
	}{
		{[]string{"salary"}, []string{"The SALARIES are paid on Friday."}},
		{[]string{"salaries", "friday"}, []string{"The SALARIES are paid on Friday."}},
		{[]string{"salary", "monday"}, nil},
		{[]string{"cafe"}, []string{"We met at the Café Noir, naïve as we were."}},
		{[]string{"naive", "noir"}, []string{"We met at the Café Noir, naïve as we were."}},
		{[]string{"p0009"}, []string{"Order p0009 shipped; p00090 and p0010 did not."}},
		{[]string{"p000"}, nil},
		{[]string{"p0011"}, nil},
		{[]string{"run"}, []string{"Running late: the deploy of example.com is blocked."}},
		{[]string{"example", "com"}, []string{"Running late: the deploy of example.com is blocked."}},
		{[]string{"ana"}, []string{"The SALARIES are paid on Friday."}},
		{[]string{"bob", "shipped"}, []string{"Order p0009 shipped; p00090 and p0010 did not."}},
		{[]string{"東京"}, []string{"東京 office opens in 2026, says Привет."}},
		{[]string{"привет", "2026"}, []string{"東京 office opens in 2026, says Привет."}},
	} {
		wantTexts(t, fmt.Sprintf("team %v", c.terms), found(t, ix, recallTeam, c.terms...), c.want...)
	}
	wantTexts(t, "the DM's salary", found(t, ix, recallDM, "salary"), "my salary is private")
	wantTexts(t, "another scope", found(t, ix, "slack-T2", "salary"))
	for s, want := range map[audience.Scope]int{recallTeam: 5, recallDM: 1, "slack-T2": 0} {
		if got, err := ix.Count(t.Context(), s); err != nil || got != want {
			t.Errorf("Count(%q) = %d %v, want %d", s, got, err, want)
		}
	}
}

// Match reads a scope's newest documents first, at most limit: by when
// they were said (an unknown time is the oldest), documents of one minute
// in the order they were added, also when added by another update; Order
// compares across scopes.
func recallNewest(t *testing.T, open OpenRecall) {
	ix, _ := open(t)
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		return recallAdd(w, recallTeam,
			recallMsg(0, 0, "", "okapi undated"),
			recallMsg(1, recallAt+3600, "", "okapi later"),
			recallMsg(2, recallAt, "", "okapi first of the minute"),
			recallMsg(3, recallAt+30, "", "okapi second of the minute"),
		)
	})
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		if err := recallAdd(w, recallTeam, recallMsg(4, recallAt+10, "", "okapi third of the minute")); err != nil {
			return err
		}
		return recallAdd(w, recallDM, recallMsg(0, recallAt+7200, "", "okapi in the DM, newest"))
	})
	wantTexts(t, "newest first", found(t, ix, recallTeam, "okapi"),
		"okapi later", "okapi third of the minute", "okapi second of the minute", "okapi first of the minute", "okapi undated")
	hits, err := ix.Match(t.Context(), recallTeam, []string{"okapi"}, 2, 0)
	if err != nil || len(hits) != 2 {
		t.Fatalf("Match with limit 2: %v %v", hits, err)
	}
	if got := found(t, ix, recallTeam, "okapi"); len(got) != 5 {
		t.Fatalf("found %d", len(got))
	}
	dm, err := ix.Match(t.Context(), recallDM, []string{"okapi"}, 1, time.Second)
	if err != nil || len(dm) != 1 {
		t.Fatalf("Match within a second: %v %v", dm, err)
	}
	if dm[0].Order <= hits[0].Order {
		t.Errorf("the DM's newer document orders %d, the team's older %d", dm[0].Order, hits[0].Order)
	}
	if want := store.RecallMinute(recallAt+7200) << store.RecallSlotBits; dm[0].Order>>store.RecallSlotBits != want>>store.RecallSlotBits {
		t.Errorf("Order %d is not of minute %d", dm[0].Order, want>>store.RecallSlotBits)
	}
}

// Read returns what was added, with its scope, in the order asked for;
// Drop removes one kind of a scope's documents and no other.
func recallReadDrop(t *testing.T, open OpenRecall) {
	ix, _ := open(t)
	long := strings.Repeat("é", store.RecallMaxText) // twice the cap, in bytes
	entry := store.RecallDoc{Kind: store.RecallHistory, At: recallAt, Conversation: "slack:C1", Pos: 42, Text: "- quokka fact"}
	cold := store.RecallDoc{Kind: store.RecallCold, At: recallAt, Pos: 3, Text: "- quokka cold line"}
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		if err := recallAdd(w, recallTeam, entry, cold, recallMsg(7, recallAt, "Ana", "quokka "+long)); err != nil {
			return err
		}
		return recallAdd(w, recallDM, cold)
	})
	hits, err := ix.Match(t.Context(), recallTeam, []string{"quokka"}, 10, 0)
	if err != nil || len(hits) != 3 {
		t.Fatalf("Match: %v %v", hits, err)
	}
	ids := []int64{hits[2].ID, -5, hits[0].ID, hits[1].ID}
	rows, err := ix.Read(t.Context(), ids)
	if err != nil || len(rows) != 3 {
		t.Fatalf("Read: %v %v", rows, err)
	}
	if rows[0].ID != hits[2].ID || rows[1].ID != hits[0].ID || rows[2].ID != hits[1].ID {
		t.Fatalf("Read is not in the order asked for: %+v", rows)
	}
	for _, r := range rows {
		switch r.Kind {
		case store.RecallHistory:
			if r.RecallDoc != entry || r.Scope != recallTeam {
				t.Errorf("entry read back as %+v", r)
			}
		case store.RecallMessage:
			if len(r.Text) > store.RecallMaxText || !strings.HasPrefix(r.Text, "quokka éé") || strings.ContainsRune(r.Text, '\uFFFD') || r.Who != "Ana" || r.Pos != 7 {
				t.Errorf("message read back: %d bytes, who %q, pos %d", len(r.Text), r.Who, r.Pos)
			}
		}
	}
	recallUpdate(t, ix, func(w store.RecallWriter) error { return w.Drop(recallTeam, store.RecallCold) })
	if got := found(t, ix, recallTeam, "quokka"); len(got) != 2 || slices.Contains(got, cold.Text) {
		t.Errorf("after Drop: %q", got)
	}
	wantTexts(t, "the DM's cold line", found(t, ix, recallDM, "quokka"), cold.Text)
	if n, err := ix.Count(t.Context(), recallTeam); err != nil || n != 2 {
		t.Errorf("Count after Drop: %d %v", n, err)
	}
}

// Marks are read by prefix within the writer, its own writes included; a
// mark set to "" is gone; Mark reads what was committed.
func recallMarks(t *testing.T, open OpenRecall) {
	ix, reopen := open(t)
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		for k, v := range map[string]string{"complete": "1", "file\x1fa": "s1", "file\x1fb": "s2", "files": "x", "conv\x1fslack:C1\x1fg0": "3 3"} {
			if err := w.SetMark(k, v); err != nil {
				return err
			}
		}
		m, err := w.Marks("file\x1f")
		if err != nil {
			return err
		}
		if want := map[string]string{"file\x1fa": "s1", "file\x1fb": "s2"}; !maps.Equal(m, want) {
			return fmt.Errorf("Marks before the commit = %q, want %q", m, want)
		}
		return nil
	})
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		if err := w.SetMark("file\x1fa", ""); err != nil {
			return err
		}
		if err := w.SetMark("file\x1fb", "s3"); err != nil {
			return err
		}
		m, err := w.Marks("file\x1f")
		if err != nil {
			return err
		}
		if want := map[string]string{"file\x1fb": "s3"}; !maps.Equal(m, want) {
			return fmt.Errorf("Marks after a change = %q, want %q", m, want)
		}
		all, err := w.Marks("")
		if err != nil || len(all) != 4 {
			return fmt.Errorf("all marks: %q %v", all, err)
		}
		return nil
	})
	for _, x := range []store.RecallIndex{ix, reopen(t)} {
		for name, want := range map[string]string{"complete": "1", "file\x1fa": "", "file\x1fb": "s3", "conv\x1fslack:C1\x1fg0": "3 3", "nothing": ""} {
			if v, err := x.Mark(t.Context(), name); err != nil || v != want {
				t.Errorf("Mark(%q) = %q %v, want %q", name, v, err, want)
			}
		}
	}
}

// One writer at a time, across handles: another Update is refused while
// one runs. A writer's Commit keeps what it wrote so far; an error drops
// what it wrote after.
func recallWriter(t *testing.T, open OpenRecall) {
	ix, reopen := open(t)
	other := reopen(t)
	boom := errors.New("boom")
	err := ix.Update(t.Context(), func(w store.RecallWriter) error {
		if err := other.Update(t.Context(), func(store.RecallWriter) error { return nil }); !errors.Is(err, store.ErrRecallBusy) {
			return fmt.Errorf("a second writer: %v, want ErrRecallBusy", err)
		}
		if err := recallAdd(w, recallTeam, recallMsg(0, recallAt, "", "kept wombat")); err != nil {
			return err
		}
		if err := w.SetMark("history_cursor", "1"); err != nil {
			return err
		}
		if err := w.Commit(); err != nil {
			return err
		}
		if err := recallAdd(w, recallTeam, recallMsg(1, recallAt+60, "", "dropped wombat")); err != nil {
			return err
		}
		if err := w.Drop(recallTeam, store.RecallMessage); err != nil {
			return err
		}
		if err := w.SetMark("history_cursor", "2"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want fn's error", err)
	}
	for _, x := range []store.RecallIndex{ix, other} {
		wantTexts(t, "after a failed update", found(t, x, recallTeam, "wombat"), "kept wombat")
		if v, _ := x.Mark(t.Context(), "history_cursor"); v != "1" {
			t.Errorf("mark after a failed update: %q", v)
		}
		if n, _ := x.Count(t.Context(), recallTeam); n != 1 {
			t.Errorf("Count after a failed update: %d", n)
		}
	}
	recallUpdate(t, other, func(w store.RecallWriter) error {
		return recallAdd(w, recallTeam, recallMsg(2, recallAt+120, "", "another wombat"))
	})
	wantTexts(t, "the other handle's update", found(t, ix, recallTeam, "wombat"), "another wombat", "kept wombat")
}

// Reset empties the index, documents and marks, for every handle; it
// waits for a writer at work, within its context.
func recallReset(t *testing.T, open OpenRecall) {
	ix, reopen := open(t)
	other := reopen(t)
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		if err := recallAdd(w, recallTeam, recallMsg(0, recallAt, "", "narwhal")); err != nil {
			return err
		}
		return w.SetMark("complete", "1")
	})
	wantTexts(t, "before the reset", found(t, other, recallTeam, "narwhal"), "narwhal")
	err := ix.Update(t.Context(), func(store.RecallWriter) error {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		if err := other.Reset(ctx); err == nil {
			return errors.New("Reset while a writer works did not wait for it")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Reset(t.Context()); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	for _, x := range []store.RecallIndex{ix, other} {
		wantTexts(t, "after the reset", found(t, x, recallTeam, "narwhal"))
		if v, _ := x.Mark(t.Context(), "complete"); v != "" {
			t.Errorf("a mark survived the reset: %q", v)
		}
		if n, _ := x.Count(t.Context(), recallTeam); n != 0 {
			t.Errorf("Count after the reset: %d", n)
		}
	}
	recallUpdate(t, ix, func(w store.RecallWriter) error {
		return recallAdd(w, recallTeam, recallMsg(0, recallAt, "", "narwhal again"))
	})
	wantTexts(t, "after the reset", found(t, other, recallTeam, "narwhal"), "narwhal again")
}

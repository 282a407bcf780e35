package recall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/memory"
)

// Each source is found with when and where it was said and its scope.
func TestSearchFindsEachSourceWithWhenAndWhere(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		team := team1.Home()
		f.archive(t, team, "- The Falcon launch is on the 3rd of March", "slack:C1")
		f.archive(t, audience.Default, "- The operator's boat is called Seagull", "terminal:default")
		f.convs.say("slack:C1", team1, 1,
			user("Ana", "the falcon budget is 40k"),
			reply("Noted: the Falcon budget is 40k."),
			user("Bob", "still live, not archived: falcon"))
		f.cold(t, team, "# Cold memory\n\n- (durable, 2025-06-01) Falcon's first codename was Kestrel\n")
		st := f.update(t)
		if st.History != 2 || st.Messages != 2 || st.Cold != 2 {
			t.Fatalf("Update = %+v, want 2 entries, 2 archived messages, 2 cold lines", st)
		}
		got := f.search(t, "falcon", team)
		kinds := map[Kind]Match{}
		for _, m := range got {
			if m.Scope != team {
				t.Errorf("match of scope %q in a search of %q", m.Scope, team)
			}
			if strings.Contains(m.Text, "not archived") {
				t.Errorf("a message not archived yet was found: %+v", m)
			}
			kinds[m.Kind] = m
		}
		if len(got) != 4 {
			t.Fatalf("found %d, want 4 (entry, two messages, cold line): %+v", len(got), got)
		}
		if m := kinds[KindHistory]; m.Cursor != 1 || m.Conversation != "slack:C1" || !m.Time.Equal(fixedNow.Truncate(time.Minute)) {
			t.Errorf("archive entry: %+v", m)
		}
		if m := kinds[KindCold]; m.Line != 3 || m.Time.Format("2006-01-02") != "2025-06-01" || !strings.Contains(m.Text, "Kestrel") {
			t.Errorf("cold line: %+v", m)
		}
		var ana bool
		for _, m := range got {
			if m.Kind == KindMessage && m.Who == "Ana" && m.Index == 0 && m.Conversation == "slack:C1" && m.Time.Equal(fixedNow) {
				ana = true
			}
		}
		if !ana {
			t.Errorf("Ana's message not found with its sender, place and time: %+v", got)
		}
		// Stemmed: "budgets" finds "budget"; the sender's name is searchable.
		if got := f.search(t, "budgets", team); len(got) != 2 {
			t.Errorf("budgets: %+v", got)
		}
		if got := f.search(t, "Ana", team); len(got) != 1 || got[0].Who != "Ana" {
			t.Errorf("Ana: %+v", got)
		}
		if got := f.search(t, "seagull", audience.Default); len(got) != 1 || got[0].Scope != audience.Default {
			t.Errorf("default scope: %+v", got)
		}
	})
}

// Rows with every word come first; among equals, the newest first.
func TestSearchRanksAllWordsThenNewest(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		s := team1.Home()
		f.archive(t, s, "- the parking spot is B7", "k")
		f.archive(t, s, "- Ana's parking spot moved to C3", "k")
		f.archive(t, s, "- Ana likes tea", "k")
		f.archive(t, s, "- the spot by the window", "k")
		f.update(t)
		got := f.search(t, "Ana parking spot", s)
		if len(got) != 4 || !strings.Contains(got[0].Text, "C3") {
			t.Fatalf("order: %+v", got)
		}
		f.archive(t, s, "- correction: Ana's parking spot is now D9", "k")
		f.update(t)
		if got := f.search(t, "ana parking spot", s); !strings.Contains(got[0].Text, "D9") || !strings.Contains(got[1].Text, "C3") {
			t.Errorf("a later correction is not first: %+v", got)
		}
		if res, _ := f.idx.Search(context.Background(), "parking", []audience.Scope{s}, 1); len(res.Matches) != 1 {
			t.Errorf("limit 1: %+v", res.Matches)
		}
		if got := f.search(t, "?!* \"\" :", s); len(got) != 0 {
			t.Errorf("a query without words found %+v", got)
		}
	})
}

// In a long text of sentences alike, the snippet shows the rarest word
// searched for, not the first common one: a message telling ten code
// words is shown around the project asked about.
func TestSnippetShowsTheRarestWord(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		s := team1.Home()
		var told []string
		for n := 1; n <= 10; n++ {
			told = append(told, fmt.Sprintf("The code word for project P%04d, as agreed at the planning meeting, is MAPLE%04dX.", n, n))
		}
		f.archive(t, s, strings.Join(told, " "), "k")
		f.archive(t, s, "- the code word changes every month", "k")
		f.update(t)
		got := f.search(t, "code word project p0009", s)
		if len(got) == 0 || !strings.Contains(got[0].Text, "P0009, as agreed at the planning meeting, is MAPLE0009X.") {
			t.Fatalf("the best match does not show the project asked about: %+v", got)
		}
		if strings.HasPrefix(got[0].Text, "The code word for project P0001") {
			t.Errorf("the snippet starts at the text's first common word: %q", got[0].Text)
		}
		// Whole sentences: no fact shown without its value, none begun
		// mid-sentence.
		text := strings.TrimSuffix(strings.TrimPrefix(got[0].Text, "…"), "…")
		for _, sentence := range strings.SplitAfter(text, ". ") {
			if !regexp.MustCompile(`^The code word for project P(\d{4}), as agreed at the planning meeting, is MAPLE(\d{4})X\. ?$`).MatchString(sentence) {
				t.Errorf("the snippet %q holds a part of a sentence: %q", got[0].Text, sentence)
			}
		}
	})
}

// New entries, newly archived messages (also of a conversation set aside
// by /new) and changed cold memory are added; nothing twice; unchanged
// conversations are not read again.
func TestUpdateIsIncremental(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		s := anaDM.Home()
		f.archive(t, s, "- zebra one", "slack:D1")
		f.convs.say("slack:D1", anaDM, 0, user("Ana", "zebra two"))
		f.cold(t, s, "- zebra three\n- zebra four\n")
		f.update(t)
		if got := f.search(t, "zebra", s); len(got) != 4 {
			t.Fatalf("first update: %+v", got)
		}
		reads := f.convs.reads
		if st := f.update(t); st != (Stats{}) || f.convs.reads != reads {
			t.Fatalf("an update with nothing new added %+v and read %d conversations", st, f.convs.reads-reads)
		}

		f.archive(t, s, "- zebra five", "slack:D1")
		f.convs.say("slack:D1", anaDM, 1, reply("zebra six"), user("Ana", "zebra seven, live"))
		f.cold(t, s, "- zebra three\n- zebra eight\n") // "four" retired, "eight" added
		f.convs.rotate("slack:D1")
		f.convs.say("slack:D1", anaDM, 0, user("Ana", "zebra nine"))
		st := f.update(t)
		if st.History != 1 || st.Messages != 3 || st.Cold != 2 {
			t.Errorf("second update = %+v, want 1 entry, 3 messages (six, seven once set aside, nine), 2 cold lines", st)
		}
		texts := map[string]int{}
		for _, m := range f.search(t, "zebra", s) {
			texts[m.Text]++
		}
		for _, w := range []string{"one", "two", "three", "five", "six", "seven", "eight", "nine"} {
			n := 0
			for text, k := range texts {
				if strings.Contains(text, "zebra "+w) {
					n += k
				}
			}
			if n != 1 {
				t.Errorf("zebra %s found %d times, want once: %v", w, n, texts)
			}
		}
		for text := range texts {
			if strings.Contains(text, "four") {
				t.Errorf("a line gone from cold memory is still found: %q", text)
			}
		}

		// A cold-memory file removed: its lines go.
		if err := os.Remove(filepath.Join(f.ws, s.Dir(), "memory", "COLD.md")); err != nil {
			t.Fatal(err)
		}
		f.update(t)
		for _, m := range f.search(t, "zebra", s) {
			if m.Kind == KindCold {
				t.Errorf("cold line of a removed file: %+v", m)
			}
		}
	})
}

// A conversation that changed while read is left for the next update,
// which indexes it whole, once.
func TestUpdateRetriesAConversationThatChanged(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		f.convs.say("slack:C1", team1, 0, user("Ana", "quokka one"), user("Ana", "quokka two"))
		f.convs.fail["slack:C1"] = true
		if st := f.update(t); st.Messages != 0 {
			t.Fatalf("a conversation whose read failed was indexed: %+v", st)
		}
		delete(f.convs.fail, "slack:C1")
		if st := f.update(t); st.Messages != 2 {
			t.Fatalf("retry: %+v", st)
		}
		if got := f.search(t, "quokka", team1.Home()); len(got) != 2 {
			t.Errorf("found %d, want 2", len(got))
		}
	})
}

// The index is rebuilt, with a log line, when its file is damaged, is not
// a database, is of another version or was built under the other memory
// setting; and created when missing.
func TestRebuildWhenMissingOrUnusable(t *testing.T) {
	damage := map[string]func(t *testing.T, f *fixture){
		"missing": func(t *testing.T, f *fixture) {
			if err := removeDB(f.opts.Dir); err != nil {
				t.Fatal(err)
			}
		},
		"not a database": func(t *testing.T, f *fixture) {
			if err := removeDB(f.opts.Dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.opts.Dir, dbFile), []byte(strings.Repeat("garbage ", 1000)), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"damaged pages": func(t *testing.T, f *fixture) {
			path := filepath.Join(f.opts.Dir, dbFile)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := 4096; i < len(data); i++ {
				data[i] ^= 0x5a
			}
			if err := removeDB(f.opts.Dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"other version": func(t *testing.T, f *fixture) {
			db, _, err := openDB(context.Background(), f.opts.Dir)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE meta SET v = '0' WHERE k = 'version'`); err != nil {
				t.Fatal(err)
			}
		},
		"other memory setting": func(t *testing.T, f *fixture) {
			f.opts.Memory = memory.New(memory.NewDisk(f.ws), true)
		},
	}
	for name, spoil := range damage {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.archive(t, audience.Default, "- wombat facts", "")
			f.convs.say("slack:C1", team1, 0, user("Ana", "wombat chat"))
			f.update(t)
			if err := f.idx.Close(); err != nil {
				t.Fatal(err)
			}
			spoil(t, f)
			f.reopen(t)
			f.logs.Reset()
			st := f.update(t)
			wantRebuilt := name != "missing"
			if st.Rebuilt != wantRebuilt || st.History != 1 || st.Messages != 1 {
				t.Errorf("Update after %s = %+v", name, st)
			}
			if logged := len(f.logs.Find(slog.LevelWarn, "rebuilding")) > 0; logged != wantRebuilt {
				t.Errorf("rebuild logged: %v, want %v (%+v)", logged, wantRebuilt, f.logs.Records())
			}
			home := team1.Home()
			if f.opts.Memory.Shared() {
				home = audience.Default
			}
			if got := f.search(t, "wombat", audience.Default, home); len(got) != 2 {
				t.Errorf("after the rebuild: %+v", got)
			}
		})
	}
}

// The index is the owner's alone: its folder and every file SQLite made.
func TestIndexFilesAreOwnerOnly(t *testing.T) {
	f := newFixture(t)
	f.archive(t, audience.Default, "- private things", "")
	f.update(t)
	f.search(t, "private", audience.Default)
	fi, err := os.Stat(f.opts.Dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("recall dir: %v, %v", fi.Mode(), err)
	}
	des, _ := os.ReadDir(f.opts.Dir)
	if len(des) < 2 {
		t.Fatalf("only %d files in the index dir", len(des))
	}
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v", de.Name(), fi.Mode().Perm())
		}
	}
}

// Opening costs nothing: no file until first use.
func TestOpenTouchesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "recall")
	x := Open(Options{Dir: dir})
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open made %s: %v", dir, err)
	}
	if _, err := x.Search(context.Background(), "x", []audience.Scope{audience.Default}, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Search after Close = %v", err)
	}
}

// One writer at a time: a second index on the same files (another
// process) is told the index is busy and still searches what it holds.
func TestOneWriterOthersRead(t *testing.T) {
	f := newFixture(t)
	f.archive(t, audience.Default, "- narwhal", "")
	f.update(t)
	other := Open(f.opts)
	defer other.Close()
	if ok, err := f.idx.files.lock.TryLock(); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	defer f.idx.files.lock.Unlock()
	if _, err := other.Update(context.Background()); !errors.Is(err, ErrBusy) {
		t.Fatalf("Update while another holds the lock = %v, want ErrBusy", err)
	}
	res, err := other.Search(context.Background(), "narwhal", []audience.Scope{audience.Default}, 5)
	if err != nil || len(res.Matches) != 1 {
		t.Fatalf("search beside the writer: %+v %v", res, err)
	}
}

// A reader never makes the index: while another process holds the
// writer's lock and no index exists yet, a search says the index is
// incomplete and leaves the file to the writer, so two processes never
// both create one.
func TestReaderDoesNotCreateTheIndex(t *testing.T) {
	f := newFixture(t)
	f.archive(t, audience.Default, "- narwhal", "")
	f.opts.Wait = time.Millisecond
	f.reopen(t)
	writer := Open(f.opts)
	defer writer.Close()
	if err := os.MkdirAll(f.opts.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if ok, err := writer.files.lock.TryLock(); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	res, err := f.idx.Search(context.Background(), "narwhal", []audience.Scope{audience.Default}, 5)
	f.idx.wg.Wait()
	if err != nil || !res.Incomplete || len(res.Matches) != 0 {
		t.Fatalf("search while another writes the first index: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(f.opts.Dir, dbFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the reader made the index: %v", err)
	}
	if err := writer.files.lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	f.update(t)
	if got := f.search(t, "narwhal", audience.Default); len(got) != 1 {
		t.Fatalf("after the writer's update: %+v", got)
	}
}

// blockingHistory holds an update in its first read until released.
type blockingHistory struct {
	History
	release chan struct{}
}

func (b blockingHistory) Since(cursor, limit int) ([]history.Entry, error) {
	<-b.release
	return b.History.Since(cursor, limit)
}

// A search during the first build waits at most Options.Wait, answers
// from what is indexed and says the index is incomplete; Close stops the
// build.
func TestSearchDuringFirstBuildSaysIncomplete(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		f.archive(t, audience.Default, "- okapi", "")
		release := make(chan struct{})
		f.opts.History = blockingHistory{History: f.hist, release: release}
		f.opts.Wait = time.Millisecond
		f.reopen(t)
		res, err := f.idx.Search(context.Background(), "okapi", []audience.Scope{audience.Default}, 5)
		if err != nil || !res.Incomplete || len(res.Matches) != 0 {
			t.Fatalf("during the build: %+v %v", res, err)
		}
		if out := formatResults("okapi", res, nil); !strings.Contains(out, "still being built") {
			t.Errorf("tool text: %q", out)
		}
		close(release)
		f.idx.wg.Wait()
		res, err = f.idx.Search(context.Background(), "okapi", []audience.Scope{audience.Default}, 5)
		if err != nil || res.Incomplete || len(res.Matches) != 1 {
			t.Fatalf("after the build: %+v %v", res, err)
		}
	})
}

// After Changed (an archive was written), the next search waits for the
// update that indexes it.
func TestSearchAfterChangedFindsTheNewArchive(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		f.archive(t, audience.Default, "- first capybara", "")
		f.update(t)
		f.archive(t, audience.Default, "- second capybara", "")
		f.convs.say("terminal:default", op, 0, user("", "third capybara"))
		f.idx.Changed()
		if got := f.search(t, "capybara", audience.Default); len(got) != 3 {
			t.Errorf("after Changed: %+v", got)
		}
	})
}

// Entries moved to another scope (history.Store.Rescope) are found in
// their new scope alone once the index is reset, and so are the
// conversation messages they were archived from, also by a second index
// (another process) that had the old one open.
func TestResetAfterEntriesMoved(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		teamScope, privScope := team1.Home(), private.Home()
		// The channel was private already, but the gateway held it as the
		// team's: its message and entry went to the team's scope.
		f.convs.say("slack:CPRIV", team1, 0, user("Ana", "the merger code name is BLUEHERON"))
		if _, err := f.hist.AppendFrom(teamScope, "- the merger code name is BLUEHERON", "slack:CPRIV", history.Source{SessionID: "gen0", From: 0, To: 1}); err != nil {
			t.Fatal(err)
		}
		f.update(t)
		if got := f.search(t, "BLUEHERON", teamScope); len(got) != 2 {
			t.Fatalf("before the move the team finds %d, want the entry and the message", len(got))
		}
		other := Open(f.opts)
		t.Cleanup(func() { _ = other.Close() })
		if _, err := other.Search(context.Background(), "BLUEHERON", []audience.Scope{teamScope}, MaxLimit); err != nil {
			t.Fatal(err)
		}
		if _, err := f.hist.Rescope(func(e history.Entry) bool { return e.SessionKey == "slack:CPRIV" }, privScope); err != nil {
			t.Fatal(err)
		}
		if err := f.idx.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.update(t)
		for _, idx := range []*Index{f.idx, other} {
			res, err := idx.Search(context.Background(), "BLUEHERON", []audience.Scope{teamScope}, MaxLimit)
			if err != nil || len(res.Matches) != 0 {
				t.Errorf("the team's search after the move: %+v, %v", res.Matches, err)
			}
			res, err = idx.Search(context.Background(), "BLUEHERON", []audience.Scope{privScope}, MaxLimit)
			if err != nil || len(res.Matches) != 2 {
				t.Errorf("the private channel's search after the move: %+v, %v", res.Matches, err)
			}
		}
	})
}

// An index built under the other memory setting is rebuilt, with a log
// line, by whichever engine keeps it: a message's scope depends on it.
func TestRebuildUnderTheOtherMemorySetting(t *testing.T) {
	onEngines(t, func(t *testing.T, newFixture func(testing.TB) *fixture) {
		f := newFixture(t)
		f.convs.say("slack:C1", team1, 0, user("Ana", "wombat chat"))
		f.update(t)
		if got := f.search(t, "wombat", team1.Home()); len(got) != 1 {
			t.Fatalf("scoped: %+v", got)
		}
		f.opts.Memory = memory.New(memory.NewDisk(f.ws), true)
		f.reopen(t)
		f.logs.Reset()
		if st := f.update(t); !st.Rebuilt || st.Messages != 1 {
			t.Errorf("Update under shared memory = %+v", st)
		}
		if len(f.logs.Find(slog.LevelWarn, "rebuilding")) == 0 {
			t.Errorf("the rebuild was not logged: %+v", f.logs.Records())
		}
		if got := f.search(t, "wombat", team1.Home()); len(got) != 0 {
			t.Errorf("the team's scope still holds it: %+v", got)
		}
		if got := f.search(t, "wombat", audience.Default); len(got) != 1 {
			t.Errorf("shared: %+v", got)
		}
	})
}

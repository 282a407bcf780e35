package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// Archive is one engine's archive under test.
type Archive struct {
	// History is a fresh, empty archive whose entries are stamped by the
	// clock Open was given.
	History store.History
	// Reopen returns another handle on the same archive, as a second
	// process (or a restart) would open it.
	Reopen func(t *testing.T) store.History
	// Tear, when set, leaves what a process killed in the middle of an
	// append leaves (a torn last line); nil where no write can be torn.
	Tear func(t *testing.T)
}

// OpenArchive opens a fresh archive of the engine under test whose
// appends are stamped with now.
type OpenArchive func(t *testing.T, now func() time.Time) Archive

// fixedNow is the suite's clock.
func fixedNow() time.Time { return time.Date(2026, 4, 3, 9, 30, 0, 0, time.Local) }

// RunArchive runs the archive's conformance tests against an engine.
func RunArchive(t *testing.T, open OpenArchive) {
	tests := []struct {
		name string
		fn   func(*testing.T, OpenArchive)
	}{
		{"AppendOrder", archiveAppendOrder},
		{"ContentRules", archiveContentRules},
		{"RefusesBadInput", archiveRefusesBadInput},
		{"ScopesAndBacklogs", archiveScopesAndBacklogs},
		{"SessionsAndDreamCursor", archiveSessionsAndDreamCursor},
		{"ArchivedAt", archiveArchivedAt},
		{"Entries", archiveEntries},
		{"CompactKeepsUnreadAndNumbering", archiveCompact},
		{"TwoHandles", archiveTwoHandles},
		{"ConcurrentAppends", archiveConcurrent},
		{"TornWrite", archiveTorn},
		{"Import", archiveImport},
		{"Rescope", archiveRescope},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// checked is a History whose errors fail the test.
type checked struct {
	t *testing.T
	h store.History
}

func (c checked) in(scope audience.Scope, content, key string) store.Entry {
	c.t.Helper()
	e, err := c.h.AppendIn(scope, content, key)
	if err != nil {
		c.t.Fatal(err)
	}
	return e
}

func (c checked) from(scope audience.Scope, content, key string, src store.Source) store.Entry {
	c.t.Helper()
	e, err := c.h.AppendFrom(scope, content, key, src)
	if err != nil {
		c.t.Fatal(err)
	}
	return e
}

func (c checked) entries(es []store.Entry, err error) []store.Entry {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	return es
}

func (c checked) n(n int, err error) int {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

func cursorsOf(es []store.Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Cursor
	}
	return out
}

func contentsOf(es []store.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Content
	}
	return out
}

func appendN(t *testing.T, h store.History, scope audience.Scope, key string, n int) []store.Entry {
	t.Helper()
	var out []store.Entry
	for i := range n {
		out = append(out, chk(t, h).in(scope, fmt.Sprintf("- fact %s %d", scope, i), key))
	}
	return out
}

// Cursors start at 1, rise by one an append, and Since reads them back in
// order, with the fields as written.
func archiveAppendOrder(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	h := a.History
	if n := chk(t, h).n(h.LastCursor()); n != 0 {
		t.Fatalf("LastCursor of an empty archive = %d", n)
	}
	if es := chk(t, h).entries(h.Since(0, 0)); len(es) != 0 {
		t.Fatalf("Since of an empty archive = %v", es)
	}
	e1 := chk(t, h).in(audience.Default, "- Ana prefers tea", "slack:C1")
	e2 := chk(t, h).from(audience.Default, "- Bob is on leave", "slack:C1", store.Source{SessionID: "g1", From: 0, To: 4})
	e3 := chk(t, h).in(audience.Default, "- third", "")
	if got := []int{e1.Cursor, e2.Cursor, e3.Cursor}; !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("cursors %v, want 1 2 3", got)
	}
	if e1.Timestamp != "2026-04-03 09:30" {
		t.Fatalf("timestamp %q, want the clock's minute", e1.Timestamp)
	}
	all := chk(t, h).entries(h.Since(0, 0))
	want := []store.Entry{e1, e2, e3}
	if !slices.Equal(all, want) {
		t.Fatalf("Since(0) = %+v\nwant %+v", all, want)
	}
	if src, ok := all[1].Source(); !ok || src != (store.Source{SessionID: "g1", From: 0, To: 4}) {
		t.Fatalf("source read back %+v %v", src, ok)
	}
	if _, ok := all[0].Source(); ok {
		t.Fatal("an entry appended without a source has one")
	}
	if got := cursorsOf(chk(t, h).entries(h.Since(1, 1))); !slices.Equal(got, []int{2}) {
		t.Fatalf("Since(1, 1) = %v", got)
	}
	if n := chk(t, h).n(h.Len()); n != 3 {
		t.Fatalf("Len = %d, want 3", n)
	}
	if n := chk(t, h).n(h.LastCursor()); n != 3 {
		t.Fatalf("LastCursor = %d, want 3", n)
	}
	if got := cursorsOf(chk(t, a.Reopen(t)).entries(a.Reopen(t).Since(0, 0))); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("reopened: %v", got)
	}
}

// Trailing whitespace goes, and content past the cap is cut with the mark.
func archiveContentRules(t *testing.T, open OpenArchive) {
	h := open(t, fixedNow).History
	e := chk(t, h).in(audience.Default, "- trimmed \n\t ", "")
	if e.Content != "- trimmed" {
		t.Fatalf("content %q", e.Content)
	}
	long := strings.Repeat("é", store.MaxEntryChars+10)
	e = chk(t, h).in(audience.Default, long, "")
	if !strings.HasSuffix(e.Content, store.TruncatedSuffix) || len([]rune(e.Content)) > store.MaxEntryChars+len([]rune(store.TruncatedSuffix)) {
		t.Fatalf("long content not cut to the cap: %d chars", len([]rune(e.Content)))
	}
	back := chk(t, h).entries(h.Since(0, 0))
	if len(back) != 2 || back[0].Content != "- trimmed" || back[1].Content != e.Content {
		t.Fatalf("read back %q", contentsOf(back))
	}
	multi := "- line one\n- \"quoted\" \\ line two\n- ünïcode 🎉"
	e = chk(t, h).in(audience.Default, multi, "k\"ey")
	if got := chk(t, h).entries(h.Entries(e.Cursor)); len(got) != 1 || got[0].Content != multi || got[0].SessionKey != "k\"ey" {
		t.Fatalf("round trip of special characters: %+v", got)
	}
}

// A scope audience.ParseScope refuses, and a source naming no messages,
// are errors, and nothing is written.
func archiveRefusesBadInput(t *testing.T, open OpenArchive) {
	h := open(t, fixedNow).History
	for _, bad := range []audience.Scope{"../x", "a/b", "/abs", "x\x00y"} {
		if _, err := h.AppendIn(bad, "- fact", ""); err == nil {
			t.Errorf("AppendIn(%q) took a bad scope", bad)
		}
	}
	for _, src := range []store.Source{{}, {SessionID: "g", From: 3, To: 3}, {SessionID: "g", From: -1, To: 2}} {
		if _, err := h.AppendFrom(audience.Default, "- fact", "k", src); err == nil {
			t.Errorf("AppendFrom took the source %+v", src)
		}
	}
	if es := chk(t, h).entries(h.Since(0, 0)); len(es) != 0 {
		t.Fatalf("refused appends wrote %v", es)
	}
	if n := chk(t, h).n(h.LastCursor()); n != 0 {
		t.Fatalf("refused appends took cursors: %d", n)
	}
}

// SinceIn reads one scope; Backlogs counts each scope's entries above its
// bar, the oldest first, and says the highest cursor.
func archiveScopesAndBacklogs(t *testing.T, open OpenArchive) {
	h := open(t, fixedNow).History
	team := audience.Scope("team-slack-t1")
	ana := audience.Scope("person-slack-t1-u2")
	var order []audience.Scope
	for i := range 9 {
		s := []audience.Scope{audience.Default, team, ana}[i%3]
		order = append(order, s)
		chk(t, h).in(s, fmt.Sprintf("- %d", i+1), "k")
	}
	if got := cursorsOf(chk(t, h).entries(h.SinceIn(team, 0, 0))); !slices.Equal(got, []int{2, 5, 8}) {
		t.Fatalf("SinceIn(team) = %v", got)
	}
	if got := cursorsOf(chk(t, h).entries(h.SinceIn(team, 2, 1))); !slices.Equal(got, []int{5}) {
		t.Fatalf("SinceIn(team, 2, 1) = %v", got)
	}
	for _, e := range chk(t, h).entries(h.SinceIn(ana, 0, 0)) {
		if e.Scope != ana {
			t.Fatalf("SinceIn(ana) gave %+v", e)
		}
	}
	bl, last := must2(t)(h.Backlogs(0, nil))
	if last != 9 {
		t.Fatalf("last = %d", last)
	}
	want := []store.Backlog{{Scope: audience.Default, First: 1, Count: 3}, {Scope: team, First: 2, Count: 3}, {Scope: ana, First: 3, Count: 3}}
	if !slices.Equal(bl, want) {
		t.Fatalf("Backlogs(0) = %+v, want %+v", bl, want)
	}
	bl, _ = must2(t)(h.Backlogs(3, map[audience.Scope]int{team: 8, ana: 1}))
	want = []store.Backlog{{Scope: audience.Default, First: 4, Count: 2}, {Scope: ana, First: 6, Count: 2}}
	if !slices.Equal(bl, want) {
		t.Fatalf("Backlogs(3, team:8 ana:1) = %+v, want %+v", bl, want)
	}
	bl, last = must2(t)(h.Backlogs(9, nil))
	if len(bl) != 0 || last != 9 {
		t.Fatalf("Backlogs past the end = %+v, %d", bl, last)
	}
	_ = order
}

func must2(t *testing.T) func([]store.Backlog, int, error) ([]store.Backlog, int) {
	return func(b []store.Backlog, n int, err error) ([]store.Backlog, int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b, n
	}
}

// UnreadLast reads a session's entries above the Dream cursor, its last n;
// the Dream cursor is durable.
func archiveSessionsAndDreamCursor(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	h := a.History
	if n := chk(t, h).n(h.DreamCursor()); n != 0 {
		t.Fatalf("DreamCursor of an empty archive = %d", n)
	}
	for i := range 6 {
		key := []string{"slack:A", "slack:B"}[i%2]
		chk(t, h).in(audience.Default, fmt.Sprintf("- %d", i+1), key)
	}
	if got := cursorsOf(chk(t, h).entries(h.UnreadLast("slack:A", 0))); !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("UnreadLast(A) = %v", got)
	}
	if got := cursorsOf(chk(t, h).entries(h.UnreadLast("slack:A", 2))); !slices.Equal(got, []int{3, 5}) {
		t.Fatalf("UnreadLast(A, 2) = %v", got)
	}
	if err := h.SetDreamCursor(3); err != nil {
		t.Fatal(err)
	}
	if got := cursorsOf(chk(t, h).entries(h.UnreadLast("slack:A", 0))); !slices.Equal(got, []int{5}) {
		t.Fatalf("UnreadLast(A) after the Dream cursor moved to 3 = %v", got)
	}
	if got := cursorsOf(chk(t, h).entries(h.UnreadLast("slack:none", 0))); len(got) != 0 {
		t.Fatalf("UnreadLast of an unknown session = %v", got)
	}
	if n := chk(t, a.Reopen(t)).n(a.Reopen(t).DreamCursor()); n != 3 {
		t.Fatalf("DreamCursor after reopening = %d, want 3", n)
	}
	if err := h.SetDreamCursor(1); err != nil {
		t.Fatal(err)
	}
	if got := cursorsOf(chk(t, h).entries(h.UnreadLast("slack:A", 0))); !slices.Equal(got, []int{3, 5}) {
		t.Fatalf("UnreadLast(A) after the Dream cursor moved back to 1 = %v", got)
	}
}

// ArchivedAt finds the newest entry of a session generation when its
// range starts where the caller would archive from.
func archiveArchivedAt(t *testing.T, open OpenArchive) {
	h := open(t, fixedNow).History
	chk(t, h).from(audience.Default, "- a", "k", store.Source{SessionID: "g1", From: 0, To: 4})
	chk(t, h).in(audience.Default, "- unrelated", "k")
	second := chk(t, h).from(audience.Default, "- b", "k", store.Source{SessionID: "g1", From: 4, To: 9})
	chk(t, h).from(audience.Default, "- other generation", "k", store.Source{SessionID: "g2", From: 0, To: 2})
	chk(t, h).from(audience.Default, "- other key", "k2", store.Source{SessionID: "g1", From: 9, To: 12})
	got, ok, err := h.ArchivedAt("k", "g1", 4)
	if err != nil || !ok || got != second {
		t.Fatalf("ArchivedAt(k, g1, 4) = %+v %v %v, want %+v", got, ok, err, second)
	}
	if _, ok, _ := h.ArchivedAt("k", "g1", 0); ok {
		t.Fatal("ArchivedAt found a range that is not the generation's newest")
	}
	if _, ok, _ := h.ArchivedAt("k", "g1", 9); ok {
		t.Fatal("ArchivedAt mixed up two keys' generations")
	}
	if _, ok, _ := h.ArchivedAt("k", "", 0); ok {
		t.Fatal("ArchivedAt without a session id found something")
	}
	if _, ok, _ := h.ArchivedAt("k", "g9", 0); ok {
		t.Fatal("ArchivedAt found an unknown generation")
	}
}

// Entries returns the listed cursors in order and leaves out those no
// entry has.
func archiveEntries(t *testing.T, open OpenArchive) {
	h := open(t, fixedNow).History
	appendN(t, h, audience.Default, "k", 5)
	if got := cursorsOf(chk(t, h).entries(h.Entries(4, 2, 99))); !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("Entries(4, 2, 99) = %v", got)
	}
	if got := chk(t, h).entries(h.Entries()); len(got) != 0 {
		t.Fatalf("Entries() = %v", got)
	}
}

// Compact drops only what Dream has read, the oldest first, and numbering
// goes on past what it dropped.
func archiveCompact(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	h := a.History
	appendN(t, h, audience.Default, "k", 10)
	if n := chk(t, h).n(h.Compact(4)); n != 0 {
		t.Fatalf("Compact dropped %d entries Dream has not read", n)
	}
	if err := h.SetDreamCursor(3); err != nil {
		t.Fatal(err)
	}
	if n := chk(t, h).n(h.Compact(4)); n != 3 {
		t.Fatalf("Compact(4) with the Dream cursor at 3 dropped %d, want 3", n)
	}
	if err := h.SetDreamCursor(10); err != nil {
		t.Fatal(err)
	}
	if n := chk(t, h).n(h.Compact(4)); n != 3 {
		t.Fatalf("Compact(4) of 7 read entries dropped %d, want 3", n)
	}
	if got := cursorsOf(chk(t, h).entries(h.Since(0, 0))); !slices.Equal(got, []int{7, 8, 9, 10}) {
		t.Fatalf("after compaction: %v", got)
	}
	if n := chk(t, h).n(h.Len()); n != 4 {
		t.Fatalf("Len after compaction = %d, want 4", n)
	}
	if n := chk(t, h).n(h.Compact(0)); n != 0 {
		t.Fatalf("Compact(0) dropped %d", n)
	}
	if err := h.SetDreamCursor(0); err != nil {
		t.Fatal(err)
	}
	h = a.Reopen(t)
	e := chk(t, h).in(audience.Default, "- after", "k")
	if e.Cursor != 11 {
		t.Fatalf("the cursor after compaction and a reopen is %d, want 11", e.Cursor)
	}
	if n := chk(t, h).n(h.LastCursor()); n != 11 {
		t.Fatalf("LastCursor = %d", n)
	}
}

// Two handles on one archive (two processes) append in turn: cursors stay
// unique and rising, and each sees the other's entries.
func archiveTwoHandles(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	h1, h2 := a.History, a.Reopen(t)
	for i := range 4 {
		chk(t, h1).in(audience.Default, fmt.Sprintf("- one %d", i), "k1")
		chk(t, h2).in(audience.Default, fmt.Sprintf("- two %d", i), "k2")
	}
	for _, h := range []store.History{h1, h2} {
		got := chk(t, h).entries(h.Since(0, 0))
		if !slices.Equal(cursorsOf(got), []int{1, 2, 3, 4, 5, 6, 7, 8}) {
			t.Fatalf("cursors %v", cursorsOf(got))
		}
		if got[1].Content != "- two 0" || got[6].Content != "- one 3" {
			t.Fatalf("contents %q", contentsOf(got))
		}
	}
	if err := h1.SetDreamCursor(5); err != nil {
		t.Fatal(err)
	}
	if n := chk(t, h2).n(h2.DreamCursor()); n != 5 {
		t.Fatalf("the other handle reads the Dream cursor as %d", n)
	}
	if got := cursorsOf(chk(t, h2).entries(h2.UnreadLast("k1", 0))); !slices.Equal(got, []int{7}) {
		t.Fatalf("UnreadLast through the other handle = %v", got)
	}
}

// Appends from many goroutines on two handles: every entry once, cursors
// 1..n without a gap or a repeat, in rising order.
func archiveConcurrent(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	hs := []store.History{a.History, a.Reopen(t)}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := hs[w%2].AppendIn(audience.Default, fmt.Sprintf("- w%d-%d", w, i), fmt.Sprintf("k%d", w)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := chk(t, a.History).entries(a.History.Since(0, 0))
	if len(got) != workers*each {
		t.Fatalf("%d entries, want %d", len(got), workers*each)
	}
	seen := map[string]bool{}
	for i, e := range got {
		if e.Cursor != i+1 {
			t.Fatalf("entry %d has cursor %d", i, e.Cursor)
		}
		if seen[e.Content] {
			t.Fatalf("%q twice", e.Content)
		}
		seen[e.Content] = true
	}
}

// A write cut by a kill leaves the archive readable, and the next append
// goes on from the last whole entry's cursor.
func archiveTorn(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	if a.Tear == nil {
		t.Skip("this engine has no partial write: each append is one transaction")
	}
	h := a.History
	appendN(t, h, audience.Default, "k", 3)
	a.Tear(t)
	h = a.Reopen(t)
	if got := cursorsOf(chk(t, h).entries(h.Since(0, 0))); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("after a torn write: %v", got)
	}
	e := chk(t, h).in(audience.Default, "- after the tear", "k")
	if got := chk(t, h).entries(h.Since(0, 0)); len(got) != 4 || got[3] != e || e.Cursor <= 3 {
		t.Fatalf("after an append past the torn write: %+v", got)
	}
}

func chk(t *testing.T, h store.History) checked { return checked{t, h} }

// Import takes entries with their cursors, skips those at or below the
// last cursor (a second copy adds nothing), and numbering goes on past
// the highest imported or raised cursor.
func archiveImport(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	im, ok := a.History.(store.ArchiveImporter)
	if !ok {
		t.Fatal("the engine's archive is not a store.ArchiveImporter")
	}
	team := audience.Scope("team-slack-t1")
	in := []store.Entry{
		{Cursor: 3, Timestamp: "2026-01-02 10:00", Content: "- three", SessionKey: "slack:C1", SessionID: "g1", Range: [2]int{0, 4}, Scope: team},
		{Cursor: 7, Timestamp: "2026-01-03 11:00", Content: "- seven", SessionKey: "terminal:main"},
		{Cursor: 8, Timestamp: "2026-01-04 12:00", Content: "- eight \"quoted\"\n- and more"},
	}
	n, err := im.Import(in)
	if err != nil || n != 3 {
		t.Fatalf("Import = %d, %v", n, err)
	}
	got := chk(t, im).entries(im.Since(0, 0))
	if !slices.Equal(got, in) {
		t.Fatalf("imported %+v\nwant %+v", got, in)
	}
	if n, err := im.Import(in); err != nil || n != 0 {
		t.Fatalf("a second Import of the same entries added %d, %v", n, err)
	}
	if err := im.RaiseLastCursor(12); err != nil {
		t.Fatal(err)
	}
	if err := im.RaiseLastCursor(5); err != nil {
		t.Fatal(err)
	}
	if n := chk(t, im).n(im.LastCursor()); n != 12 {
		t.Fatalf("LastCursor after raising to 12 then 5 = %d", n)
	}
	e := chk(t, im).in(audience.Default, "- next", "k")
	if e.Cursor != 13 {
		t.Fatalf("the next append's cursor is %d, want 13", e.Cursor)
	}
	if n, err := im.Import([]store.Entry{{Cursor: 20, Content: "- bad", Scope: "../x"}}); err == nil || n != 0 {
		t.Fatalf("Import took a bad scope: %d, %v", n, err)
	}
	if got := chk(t, a.Reopen(t)).entries(a.Reopen(t).Since(8, 0)); len(got) != 1 || got[0].Cursor != 13 {
		t.Fatalf("after a refused import: %+v", got)
	}
}

// Rescope moves exactly the entries picked, and only their scope; the
// move is seen by another handle, by the scope reads and the backlogs;
// a bad scope changes nothing.
func archiveRescope(t *testing.T, open OpenArchive) {
	a := open(t, fixedNow)
	r, ok := a.History.(store.ArchiveRescoper)
	if !ok {
		t.Fatal("the engine's archive is not a store.ArchiveRescoper")
	}
	c := chk(t, r)
	team, private := audience.Scope("team-slack-t1"), audience.Scope("private-slack-t1-c1")
	c.from(team, "- one", "slack:C1", store.Source{SessionID: "g1", From: 0, To: 2})
	c.in(team, "- two", "slack:C2")
	c.in(audience.Default, "- three", "slack:C1:1712.5")
	c.in(private, "- four", "slack:C1")
	before := c.entries(r.Since(0, 0))
	inC1 := func(e store.Entry) bool {
		return e.SessionKey == "slack:C1" || strings.HasPrefix(e.SessionKey, "slack:C1:")
	}
	moved, err := r.Rescope(inC1, private)
	if err != nil || !slices.Equal(cursorsOf(moved), []int{1, 3}) {
		t.Fatalf("Rescope moved %v, %v; want 1 and 3 (4 is there already)", cursorsOf(moved), err)
	}
	if moved[0] != before[0] || moved[1] != before[2] {
		t.Errorf("Rescope returned %+v, want the entries as they were", moved)
	}
	after := c.entries(a.Reopen(t).Since(0, 0))
	for i, e := range after {
		want := before[i]
		if inC1(want) {
			want.Scope = private
		}
		if e != want {
			t.Errorf("entry %d after the move: %+v, want %+v", e.Cursor, e, want)
		}
	}
	if got := c.entries(r.SinceIn(private, 0, 0)); !slices.Equal(cursorsOf(got), []int{1, 3, 4}) {
		t.Errorf("the private scope holds %v", cursorsOf(got))
	}
	bl, _ := must2(t)(r.Backlogs(0, nil))
	for _, b := range bl {
		if b.Scope == audience.Default || (b.Scope == team && b.Count != 1) {
			t.Errorf("backlogs after the move: %+v", bl)
		}
	}
	if _, err := r.Rescope(inC1, "../x"); err == nil {
		t.Error("Rescope took a bad scope")
	}
	if moved, err := r.Rescope(inC1, private); err != nil || len(moved) != 0 {
		t.Errorf("a second Rescope moved %v, %v", cursorsOf(moved), err)
	}
}

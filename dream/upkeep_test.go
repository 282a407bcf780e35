package dream

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
)

func day(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02", s, time.Local)
	if err != nil {
		panic(err)
	}
	return t.Add(10 * time.Hour)
}

// stampOne runs the upkeep's stamping on one USER.md edit.
func stampOne(t *testing.T, before, after string, entries []history.Entry, findings []finding) string {
	t.Helper()
	pv := newProvenance(day("2026-11-26"), entries, findings)
	f := &editedFile{rel: fileUser, before: memline.ParseFile([]byte(before)), after: memline.ParseFile([]byte(after))}
	pv.stamp([]*editedFile{f})
	return string(f.after.Bytes())
}

// stampCase is one edit of USER.md the upkeep stamps: the file before and
// after the edit, the batch's findings, and the file it must leave.
type stampCase struct {
	name          string
	before, after string
	findings      []finding
	want          string
}

// stampEntries are the batch the stampCases read.
var stampEntries = []history.Entry{
	{Cursor: 7, Content: "- Ana said hello.\n- Ana is in Lisbon until Friday for a conference."},
	{Cursor: 8, Content: "- Ana moved to Porto last month."},
	{Cursor: 9, Content: "- Bob likes green tea a lot, he says again."},
	{Cursor: 10, Content: "- Something about the weather."},
}

// stampNewCases are new lines and corrections: what a new line gets, and
// what a correction replaces (by id, never by words).
var stampNewCases = []stampCase{
	{
		name:     "new line: today, its own entry, the finding's priority",
		before:   "# User\n",
		after:    "# User\n- Ana is in Lisbon until Friday.\n",
		findings: []finding{{Tag: tagUser, Text: "Ana is in Lisbon until Friday", Priority: memline.Ephemeral}},
		want:     "# User\n- Ana is in Lisbon until Friday. <!-- ephemeral 2026-11-26 src:7 -->\n",
	},
	{
		name:     "the model's own priority wins over the finding's; its date and sources do not",
		before:   "# User\n",
		after:    "# User\n- Ana is in Lisbon until Friday. <!-- permanent 2020-01-01 src:1 -->\n",
		findings: []finding{{Tag: tagUser, Text: "Ana is in Lisbon until Friday", Priority: memline.Ephemeral}},
		want:     "# User\n- Ana is in Lisbon until Friday. <!-- permanent 2026-11-26 src:7 -->\n",
	},
	{
		name:   "no priority anywhere: durable",
		before: "# User\n",
		after:  "# User\n- Ana moved to Porto.\n",
		want:   "# User\n- Ana moved to Porto. <!-- durable 2026-11-26 src:8 -->\n",
	},
	{
		name:     "a line no entry holds is traced to the whole batch",
		before:   "# User\n",
		after:    "# User\n- Carla joined the team.\n",
		findings: []finding{{Tag: tagUser, Text: "Carla joined the team"}},
		want:     "# User\n- Carla joined the team. <!-- durable 2026-11-26 src:7,8,9,10 -->\n",
	},
	{
		name:     "a correction names the line it replaces: today's date and entries, the old line's priority",
		before:   "# User\n- Ana lives in Lisbon. <!-- permanent 2026-01-02 src:3 id:7f3a -->\n- Bob is here. <!-- durable 2026-01-02 src:4 -->\n",
		after:    "# User\n- Ana lives in Porto. <!-- replaces:7f3a -->\n- Bob is here. <!-- durable 2026-01-02 src:4 -->\n",
		findings: []finding{{Tag: tagUser, Text: "Ana lives in Porto now", Correction: true, Replaces: []string{"7f3a"}}},
		want:     "# User\n- Ana lives in Porto. <!-- permanent 2026-11-26 src:8 replaces:7f3a -->\n- Bob is here. <!-- durable 2026-01-02 src:4 -->\n",
	},
	{
		name:     "a line the model wrote without replaces: names what its finding named",
		before:   "# User\n- Ana lives in Lisbon. <!-- durable 2026-01-02 src:3 id:7f3a -->\n",
		after:    "# User\n- Ana lives in Porto.\n",
		findings: []finding{{Tag: tagUser, Text: "Ana lives in Porto now", Replaces: []string{"7f3a"}}},
		want:     "# User\n- Ana lives in Porto. <!-- durable 2026-11-26 src:8 replaces:7f3a -->\n",
	},
	{
		name:     "a line corrected in place, its comment kept, when a finding named its id: a new line replacing it",
		before:   "# User\n- Ana lives in Lisbon. <!-- ephemeral 2026-01-02 src:3 id:7f3a -->\n",
		after:    "# User\n- Ana lives in Porto. <!-- ephemeral 2026-01-02 src:3 id:7f3a -->\n",
		findings: []finding{{Tag: tagUser, Text: "Ana lives in Porto now", Replaces: []string{"7f3a"}}},
		want:     "# User\n- Ana lives in Porto. <!-- ephemeral 2026-11-26 src:8 replaces:7f3a -->\n",
	},
	{
		// Before ids, a new line that shared most words with a removed
		// one was taken for its replacement and given its sources and
		// priority: words decided what a correction replaced.
		name:   "a new line that shares words with a removed one is not taken for it",
		before: "# User\n- Ana's office is Harbour. <!-- permanent 2026-01-02 src:3 id:7f3a -->\n",
		after:  "# User\n- Ana's office is Canal Road.\n",
		want:   "# User\n- Ana's office is Canal Road. <!-- durable 2026-11-26 src:7,8,9,10 -->\n",
	},
}

// stampKeptCases are lines the edits kept, rewrote or moved, confirmed or
// not: what of their metadata stays.
var stampKeptCases = []stampCase{
	{
		name:   "a line rewritten with its id kept, no finding naming it: the same line, edited",
		before: "# User\n- Bob likes tea. <!-- durable 2026-01-02 src:4 id:7f3a -->\n",
		after:  "# User\n- Bob likes black tea. <!-- durable 2026-01-02 src:4 id:7f3a -->\n",
		want:   "# User\n- Bob likes black tea. <!-- durable 2026-01-02 src:4 id:7f3a -->\n",
	},
	{
		name:   "a line rewritten without its comment keeps its metadata",
		before: "# User\n- Bob likes tea. <!-- ephemeral 2026-01-02 src:4 -->\n",
		after:  "# User\n\n## Tastes\n- bob likes  tea\n",
		want:   "# User\n\n## Tastes\n- bob likes  tea <!-- ephemeral 2026-01-02 src:4 -->\n",
	},
	{
		name:     "a finding that restates a line confirms it",
		before:   "# User\n- Bob likes green tea. <!-- durable 2026-01-02 src:4 -->\n",
		after:    "# User\n- Bob likes green tea. <!-- durable 2026-01-02 src:4 -->\n",
		findings: []finding{{Tag: tagUser, Text: "Bob likes green tea"}},
		want:     "# User\n- Bob likes green tea. <!-- durable 2026-11-26 src:4,9 -->\n",
	},
	{
		name:     "hand-written lines get no invented provenance, confirmed or moved",
		before:   "# User\n- Bob likes green tea.\n- Name: Ana.\n",
		after:    "# User\n- Name: Ana.\n- Bob likes green tea.\n",
		findings: []finding{{Tag: tagUser, Text: "Bob likes green tea"}},
		want:     "# User\n- Name: Ana.\n- Bob likes green tea.\n",
	},
	{
		name:     "a finding for another file confirms nothing here",
		before:   "# User\n- Bob likes green tea. <!-- durable 2026-01-02 src:4 -->\n",
		after:    "# User\n- Bob likes green tea. <!-- durable 2026-01-02 src:4 -->\n",
		findings: []finding{{Tag: tagMemory, Text: "Bob likes green tea"}},
		want:     "# User\n- Bob likes green tea. <!-- durable 2026-01-02 src:4 -->\n",
	},
}

func TestStampNewChangedAndConfirmedLines(t *testing.T) {
	for _, tc := range append(slices.Clone(stampNewCases), stampKeptCases...) {
		t.Run(tc.name, func(t *testing.T) {
			if got := stampOne(t, tc.before, tc.after, stampEntries, tc.findings); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	l := func(s string) memline.Line {
		x, ok := memline.Parse(s)
		if !ok {
			t.Fatalf("not a line: %q", s)
		}
		return x
	}
	today := day("2026-02-05")
	for _, c := range []struct {
		line string
		want bool
	}{
		{"- plan <!-- ephemeral 2026-01-05 -->", true},  // 31 days
		{"- plan <!-- ephemeral 2026-01-06 -->", false}, // 30 days
		{"- pref <!-- permanent 2020-01-01 -->", false},
		{"- fact <!-- durable 2020-01-01 -->", false},
		{"- plan <!-- ephemeral -->", false}, // undated: no age
		{"- hand line", false},
	} {
		if got := expired(l(c.line), today, 30); got != c.want {
			t.Errorf("expired(%q) = %v, want %v", c.line, got, c.want)
		}
	}
}

// dreamOn runs one Dream on the given day over one new history entry,
// with a model that finds finding and applies it as the edit old -> new
// of USER.md.
func (e *env) dreamOn(date, entry, finding, old, new string) Report {
	e.t.Helper()
	e.now = func() time.Time { return day(date) }
	e.hist.seed(e.t, len(e.hist.all(e.t)), 1, func(int) string { return entry })
	e.srv.Push(llmtest.Text(finding), calls(editCall("USER.md", old, new)), llmtest.Text("Done."))
	rep, err := e.dreamer(Config{}).Run(e.t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		e.t.Fatalf("dream on %s: %+v, %v", date, rep, err)
	}
	return rep
}

// lineOf is the USER.md line stating fact ("" when none).
func (e *env) lineOf(rel, fact string) string {
	e.t.Helper()
	for _, it := range memline.ParseFile([]byte(e.read(rel))).Items {
		if it.Fact && strings.Contains(it.Line.Text, fact) {
			return it.Raw
		}
	}
	return ""
}

// An ephemeral fact retires to cold memory once it is older than
// EphemeralDays; a permanent one never does; both with a fake clock.
func TestEphemeralRetiresPermanentStays(t *testing.T) {
	e := newEnv(t)
	e.dreamOn("2026-01-05",
		"- Ana is in Lisbon until Friday.\n- Ana wants answers in Portuguese, always.",
		"[USER] [ephemeral] Ana is in Lisbon until Friday\n[USER] [permanent] Ana wants answers in Portuguese",
		"- Name: Ana.\n", "- Name: Ana.\n- Ana is in Lisbon until Friday.\n- Ana wants answers in Portuguese.\n")
	lisbon := e.lineOf("USER.md", "Lisbon")
	if got := noIDs(lisbon); got != "- Ana is in Lisbon until Friday. <!-- ephemeral 2026-01-05 src:1 -->" {
		t.Fatalf("Lisbon line = %q", got)
	}
	if got := noIDs(e.lineOf("USER.md", "Portuguese")); got != "- Ana wants answers in Portuguese. <!-- permanent 2026-01-05 src:1 -->" {
		t.Fatalf("Portuguese line = %q", got)
	}

	// 30 days on, the plan is still there.
	e.dreamOn("2026-02-04", "- Ana uses Vim.", "[USER] Ana uses Vim", "- Name: Ana.\n", "- Name: Ana.\n- Ana uses Vim.\n")
	if e.lineOf("USER.md", "Lisbon") == "" {
		t.Fatal("the plan retired after 30 days, not more")
	}

	// A day later it is older than 30 days: it leaves USER.md for cold
	// memory, whole, in the Dream's commit.
	rep := e.dreamOn("2026-02-05", "- Ana uses Go.", "[USER] Ana uses Go", "- Name: Ana.\n", "- Name: Ana.\n- Ana uses Go.\n")
	if got := e.lineOf("USER.md", "Lisbon"); got != "" {
		t.Errorf("the expired plan is still in USER.md: %q", got)
	}
	cold := e.read("memory/COLD.md")
	// Cold memory says when it left and why, and the line keeps its id.
	l, _ := memline.Parse(lisbon)
	if !strings.Contains(cold, "## 2026-02-05, from USER.md: aged out: ephemeral, last confirmed more than 30 days ago\n\n- Ana is in Lisbon until Friday. <!-- ephemeral 2026-01-05 src:1 id:"+l.ID+" out:2026-02-05 why:aged -->\n") {
		t.Errorf("cold memory:\n%s", cold)
	}
	if rep.ColdLines != 1 {
		t.Errorf("report: %d lines to cold memory, want 1", rep.ColdLines)
	}
	_, diff, err := e.repo.Show(rep.Commit, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff.Unified, "-- Ana is in Lisbon until Friday.") || !strings.Contains(diff.Unified, "+- Ana is in Lisbon until Friday.") ||
		!strings.Contains(diff.Unified, "b/memory/COLD.md") {
		t.Errorf("the Dream commit does not move the line to cold memory:\n%s", diff.Unified)
	}

	// Years later the permanent preference is still in hot memory.
	e.dreamOn("2029-06-01", "- Ana uses Zig.", "[USER] Ana uses Zig", "- Name: Ana.\n", "- Name: Ana.\n- Ana uses Zig.\n")
	if got := noIDs(e.lineOf("USER.md", "Portuguese")); got != "- Ana wants answers in Portuguese. <!-- permanent 2026-01-05 src:1 -->" {
		t.Errorf("the permanent line after years: %q", got)
	}
	if st, err := e.repo.Status(nil); err != nil || !st.Empty() {
		t.Errorf("files differ from HEAD: %+v, %v", st, err)
	}
}

// A correction months later replaces the old value and its date: phase 1
// names the id of the line it replaces, phase 2 writes the new line in its
// place, and the old line goes to cold memory marked superseded by it.
func TestCorrectionReplacesValueAndDate(t *testing.T) {
	e := newEnv(t)
	e.dreamOn("2026-01-05", "- Ana lives in Lisbon.", "[USER] Ana lives in Lisbon",
		"- Name: Ana.\n", "- Name: Ana.\n- Ana lives in Lisbon.\n")
	old := e.lineOf("USER.md", "Lisbon")
	was, _ := memline.Parse(old)
	if noIDs(old) != "- Ana lives in Lisbon. <!-- durable 2026-01-05 src:1 -->" || was.ID == "" {
		t.Fatalf("first line = %q", old)
	}
	e.dreamOn("2026-05-20", "- Ana moved to Porto; she no longer lives in Lisbon.", "[USER] [replaces:"+was.ID+"] Ana lives in Porto",
		old+"\n", "- Ana lives in Porto. <!-- replaces:"+was.ID+" -->\n")
	if got := e.lineOf("USER.md", "Lisbon"); got != "" {
		t.Errorf("the old value is still there: %q", got)
	}
	now, _ := memline.Parse(e.lineOf("USER.md", "Porto"))
	if now.Text != "Ana lives in Porto." || now.Date != "2026-05-20" || !slices.Equal(now.Sources, []int{2}) || now.ID == "" || !slices.Equal(now.Replaces, []string{was.ID}) {
		t.Errorf("corrected line = %+v", now)
	}
	gone, _ := memline.Parse(e.lineOf("memory/COLD.md", "Lisbon"))
	if gone.ID != was.ID || gone.SupersededBy != now.ID || gone.Why != memline.Replaced || gone.Out != "2026-05-20" || gone.Date != "2026-01-05" {
		t.Errorf("the old line in cold memory: %+v", gone)
	}
}

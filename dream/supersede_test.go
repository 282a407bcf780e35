package dream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// commitFiles writes and commits files (path -> text) on the env's
// repository, as memory that was there before the test.
func (e *env) commitFiles(files map[string]string) {
	e.t.Helper()
	var paths []string
	for p, text := range files {
		testkit.WriteFile(e.t, e.ws, p, text)
		paths = append(paths, p)
	}
	if _, err := e.repo.CommitPaths(paths, "memory before the test", ""); err != nil {
		e.t.Fatal(err)
	}
}

// factLine is the parsed line of rel holding words.
func (e *env) factLine(rel, words string) memline.Line {
	e.t.Helper()
	l, ok := memline.Parse(e.lineOf(rel, words))
	if !ok {
		e.t.Fatalf("%s holds no line with %q:\n%s", rel, words, e.read(rel))
	}
	return l
}

// Issue 28, point 10: a corrected value that had already gone to cold
// memory stayed there as if current ("office Harbour" and "office Canal
// Road" side by side, both durable). Phase 1 is shown the cold lines that
// may concern its batch, with their ids; the correction names the old
// line; the program marks it superseded by the new one, in cold memory,
// where it stays for recall and saying why it left (the budget).
func TestCorrectionOfAColdValueSupersedesIt(t *testing.T) {
	e := newEnv(t)
	e.commitFiles(map[string]string{
		// Written before lines had ids: phase 1 is shown it with one, and
		// it keeps that one when it is marked.
		"memory/COLD.md": "# Cold memory\n\n## 2026-11-20, from USER.md: moved out to keep the memory within its budget\n\n" +
			"- Ana's office is Harbour. <!-- durable 2026-10-01 src:1 -->\n- Ana plays the cello. <!-- durable 2026-09-01 src:1 -->\n",
	})
	e.now = func() time.Time { return day("2026-12-01") }
	e.hist.seed(t, 0, 1, func(int) string { return "- My office is Canal Road now, not Harbour." })
	e.srv.SetResponder(llmtest.MemoryModel)
	rep, err := e.dreamer(Config{}).Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted || rep.Commit == "" {
		t.Fatalf("Dream: %+v, %v", rep, err)
	}
	phase1 := e.srv.Requests()[0].Messages[1].Content
	if !strings.Contains(phase1, coldShownHeading) || !strings.Contains(phase1, "Ana's office is Harbour.") || strings.Contains(phase1, "cello") {
		t.Errorf("phase 1 is not shown the cold line the batch concerns (and only it):\n%s", phase1)
	}
	now := e.factLine("USER.md", "Canal Road")
	old := e.factLine("memory/COLD.md", "Harbour")
	if old.ID == "" || old.SupersededBy != now.ID || now.ID == "" || len(now.Replaces) != 1 || now.Replaces[0] != old.ID {
		t.Errorf("the cold value is not superseded by the correction:\nnew %+v\nold %+v", now, old)
	}
	if old.Date != "2026-10-01" || old.Priority != memline.Durable {
		t.Errorf("the old line lost its metadata: %+v", old)
	}
	// Lines not involved stay as they were: a Dream does not rewrite cold
	// memory to give ids.
	if cello := e.lineOf("memory/COLD.md", "cello"); cello != "- Ana plays the cello. <!-- durable 2026-09-01 src:1 -->" {
		t.Errorf("another cold line: %q", cello)
	}
	if strings.Contains(e.read("USER.md"), "Harbour") {
		t.Errorf("the old value is hot:\n%s", e.read("USER.md"))
	}
	e.checkWire()
}

// A literal model adds the corrected value and leaves the old line where
// it stands: the program takes the old line out of hot memory, by the id
// the correction names, into cold memory superseded by the new one — and
// leaves alone a line that reads alike but was not named.
func TestCorrectionLeftBesideItsOldValue(t *testing.T) {
	e := newEnv(t)
	user := "# User\n\n- Ana's office is Harbour. <!-- durable 2026-10-01 src:1 id:7f3a -->\n- Bob's office is Harbour too. <!-- durable 2026-10-01 src:1 id:9b2c -->\n"
	e.commitFiles(map[string]string{"USER.md": user})
	e.now = func() time.Time { return day("2026-12-01") }
	e.hist.seed(t, 0, 1, func(int) string { return "- Ana: my office is Canal Road now." })
	e.srv.Push(llmtest.Text("[USER] [replaces:7f3a] Ana's office is Canal Road."),
		calls(editCall("USER.md", "too. <!-- durable 2026-10-01 src:1 id:9b2c -->\n", "too. <!-- durable 2026-10-01 src:1 id:9b2c -->\n- Ana's office is Canal Road. <!-- replaces:7f3a -->\n")),
		llmtest.Text("Done."))
	rep, err := e.dreamer(Config{}).Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || rep.Outcome != OutcomeCompleted {
		t.Fatalf("Dream: %+v, %v", rep, err)
	}
	hot := e.read("USER.md")
	if strings.Contains(hot, "Ana's office is Harbour") || !strings.Contains(hot, "Bob's office is Harbour too.") {
		t.Errorf("USER.md:\n%s", hot)
	}
	now := e.factLine("USER.md", "Canal Road")
	old := e.factLine("memory/COLD.md", "Ana's office is Harbour")
	if old.ID != "7f3a" || old.SupersededBy != now.ID || old.Why != memline.Replaced || old.Out != "2026-12-01" {
		t.Errorf("the replaced line in cold memory: %+v (new %+v)", old, now)
	}
	if !strings.Contains(e.read("memory/COLD.md"), coldHeading(memline.Replaced, 30)) {
		t.Errorf("cold memory does not say why:\n%s", e.read("memory/COLD.md"))
	}
}

func TestParseReplaces(t *testing.T) {
	for in, want := range map[string]string{
		"[USER] [replaces:7f3a] Ana's office is Canal Road.":          "[USER] [correction] [replaces:7f3a] Ana's office is Canal Road.",
		"[USER] [ephemeral] [replaces: 7F3A, 9b2c] Off on Friday.":    "[USER] [ephemeral] [correction] [replaces:7f3a,9b2c] Off on Friday.",
		"- [replaces id:7f3a] [MEMORY] Deploys are on Thursdays now.": "[MEMORY] [correction] [replaces:7f3a] Deploys are on Thursdays now.",
		"[USER] [replaces:] no ids":                                   "[USER] [replaces:] no ids", // no id: not a qualifier
	} {
		a := parseAnalysis(in)
		got := ""
		if len(a.findings) == 1 {
			got = a.findings[0].String()
		}
		if got != want {
			t.Errorf("parseAnalysis(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestColdShownPicksCurrentLinesTheBatchConcerns(t *testing.T) {
	cold := []byte("# Cold memory\n\n- Ana's office is Harbour. <!-- durable 2026-10-01 id:0001 -->\n" +
		"- Ana's office was Quay Street. <!-- durable 2025-01-01 id:0002 superseded-by:0001 -->\n" +
		"- The office plants need water on Mondays. <!-- durable 2025-01-01 id:0003 -->\n" +
		"- Unrelated. <!-- durable 2025-01-01 id:0004 -->\n- Ana's office, no id.\n")
	got := coldShown(cold, []history.Entry{{Cursor: 1, Content: "- Ana's office is Canal Road now."}})
	var texts []string
	for _, l := range got {
		texts = append(texts, l.line.Text)
	}
	if want := "Ana's office, no id.|Ana's office is Harbour.|The office plants need water on Mondays."; strings.Join(texts, "|") != want {
		t.Errorf("shown %q, want the current lines sharing words, the most first (the newer among equals)", texts)
	}
}

// A line written before ids (or by hand) has none in its file: phase 1 is
// shown it with one all the same, the correction names it, phase 2 is
// told which line that is, and the old line goes to cold memory with that
// id, superseded — whether the model replaced it in place or left it
// beside the new value. Lines not named keep their file as it was.
func TestCorrectionOfALineWithoutAnID(t *testing.T) {
	for _, literal := range []bool{false, true} {
		e := newEnv(t)
		user := "# User\n\n- Ana's office is Harbour. <!-- durable 2026-10-01 src:1 -->\n- Bob plays chess.\n"
		e.commitFiles(map[string]string{"USER.md": user})
		e.now = func() time.Time { return day("2026-12-01") }
		e.hist.seed(t, 0, 1, func(int) string { return "- My office is Canal Road now, not Harbour." })
		if literal {
			// Told which line to replace, it appends instead.
			e.srv.SetResponder(func(r llmtest.Request) llmtest.Reply {
				if len(r.Tools) > 0 && len(r.Messages) == 2 {
					return calls(editCall("USER.md", "- Bob plays chess.\n", "- Bob plays chess.\n- My office is Canal Road now.\n"))
				}
				return llmtest.MemoryModel(r)
			})
		} else {
			e.srv.SetResponder(llmtest.MemoryModel)
		}
		rep, err := e.dreamer(Config{}).Run(context.Background(), TriggerManual, AllScopes(), nil)
		if err != nil || rep.Outcome != OutcomeCompleted {
			t.Fatalf("literal %v: Dream: %+v, %v", literal, rep, err)
		}
		if !literal && !strings.Contains(e.srv.Requests()[1].Messages[1].Content, namedHeading) {
			t.Errorf("phase 2 is not told which line the correction names:\n%s", e.srv.Requests()[1].Messages[1].Content)
		}
		hot := e.read("USER.md")
		if strings.Contains(hot, "Harbour") || !strings.Contains(hot, "- Bob plays chess.\n") {
			t.Errorf("literal %v: USER.md:\n%s", literal, hot)
		}
		now := e.factLine("USER.md", "Canal Road")
		old := e.factLine("memory/COLD.md", "Harbour")
		if old.ID == "" || old.SupersededBy != now.ID || now.Replaces[0] != old.ID || old.Why != memline.Replaced || old.Date != "2026-10-01" {
			t.Errorf("literal %v: new %+v, old %+v", literal, now, old)
		}
	}
}

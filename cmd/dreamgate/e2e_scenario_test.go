package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// plantedFact is a fact a user states in the scenario, the memory file it
// belongs in, and the word that names it there; old is the value a later
// correction replaces ("" when the fact is never corrected).
type plantedFact struct {
	line, file, word, old string
}

// The 25 facts of the scenario, as Dream should write them; three are
// corrections of an earlier value.
var plantedFacts = []plantedFact{
	{"- My name is Marguerite Okafor.", "USER.md", "Marguerite", ""},
	{"- My favourite editor is Helix.", "USER.md", "Helix", "Vim"},
	{"- Please sign off every answer with Ciao.", "SOUL.md", "Ciao", "Cheers"},
	{"- The project codename is Bluefinch.", "memory/MEMORY.md", "Bluefinch", ""},
	{"- I live in Ljubljana.", "USER.md", "Ljubljana", ""},
	{"- Please keep answers under five sentences.", "SOUL.md", "five sentences", ""},
	{"- The release train leaves every Thursday.", "memory/MEMORY.md", "Thursday", ""},
	{"- My daughter plays the cello.", "USER.md", "cello", ""},
	{"- The database runs on PostgreSQL 16.", "memory/MEMORY.md", "PostgreSQL", ""},
	{"- I work as a structural engineer.", "USER.md", "structural engineer", ""},
	{"- The staging server listens on port 9443.", "memory/MEMORY.md", "9443", "8443"},
	{"- Please use metric units in every answer.", "SOUL.md", "metric units", ""},
	{"- The billing service is written in Go.", "memory/MEMORY.md", "billing service", ""},
	{"- My cat is called Pistachio.", "USER.md", "Pistachio", ""},
	{"- Please never use emoji in replies.", "SOUL.md", "emoji", ""},
	{"- The incident channel is named ops-fire.", "memory/MEMORY.md", "ops-fire", ""},
	{"- I am allergic to peanuts.", "USER.md", "peanuts", ""},
	{"- Our main competitor is Quillbase.", "memory/MEMORY.md", "Quillbase", ""},
	{"- The design review happens in room Kestrel.", "memory/MEMORY.md", "Kestrel", ""},
	{"- Please quote code in fenced blocks.", "SOUL.md", "fenced blocks", ""},
	{"- My bicycle is a green Brompton.", "USER.md", "Brompton", ""},
	{"- I drink oat milk flat whites.", "USER.md", "oat milk", ""},
	{"- The quarterly budget is 40000 euros.", "memory/MEMORY.md", "40000 euros", ""},
	{"- I speak Portuguese at home.", "USER.md", "Portuguese", ""},
	{"- Please call the weekly sync the huddle.", "SOUL.md", "huddle", ""},
}

// The 30 user turns, by conversation and process.
var (
	// terminal:alpha, one `chat --session alpha` process per turn.
	alphaTurns = []string{
		"My name is Marguerite Okafor.",
		"My favourite editor is Vim.",
		"Please sign off every answer with Cheers.",
		"The project codename is Bluefinch.",
		"I live in Ljubljana.",
		"Please keep answers under five sentences.",
		"The release train leaves every Thursday.",
		"Actually, my favourite editor is Helix, not Vim.",
		"My daughter plays the cello.",
		"The database runs on PostgreSQL 16.",
	}
	// terminal:beta, the same way.
	betaTurns = []string{
		"I work as a structural engineer.",
		"The staging server listens on port 8443.",
		"Please use metric units in every answer.",
		"The billing service is written in Go.",
		"Where do I live?",
		"My cat is called Pistachio.",
		"Please never use emoji in replies.",
		"The incident channel is named ops-fire.",
		"I am allergic to peanuts.",
		"Our main competitor is Quillbase.",
	}
	// terminal:default in the gateway, before its restart.
	beforeRestartTurns = []string{
		"Actually, the staging server listens on port 9443, not 8443.",
		"The design review happens in room Kestrel.",
		"Please quote code in fenced blocks.",
		"My bicycle is a green Brompton.",
		"I drink oat milk flat whites.",
	}
	// terminal:default after the restart; the first is answered from
	// what the first Dream wrote.
	afterRestartTurns = []string{
		"What is my favourite editor?",
		"Actually, please sign off every answer with Ciao, not Cheers.",
		"The quarterly budget is 40000 euros.",
		"I speak Portuguese at home.",
		"Please call the weekly sync the huddle.",
	}
)

// handNote is the one edit a person makes to a memory file by hand.
const handNote = "- Hand note: the office plant is called Fernando."

// The whole memory pipeline as a user lives it, through the binary, with a
// model that makes one edit per call: 30 turns in 3 conversations plant 25
// facts and 3 corrections; two conversations left by `chat --session` are
// archived by the gateway's idle scan of the disk at start; the gateway is
// restarted in the middle of the third; a memory file is edited by hand
// between the two Dreams, each started with /dream. Every fact ends up once
// in its file, every corrected value is gone, no message is archived twice,
// the repository is valid for git, and its log holds Dream commits and the
// one hand edit only.
func TestScenarioThirtyTurnsThreeSessionsTwoDreams(t *testing.T) {
	if len(alphaTurns)+len(betaTurns)+len(beforeRestartTurns)+len(afterRestartTurns) != 30 || len(plantedFacts) != 25 {
		t.Fatal("the scenario is 30 turns and 25 facts")
	}
	h := newHarness(t)
	h.set("agent.idleCompactAfterMinutes", 15)
	// No scheduled Dream may run between the test's own.
	h.set("dream.cron", "0 0 1 1 *")
	// Two entries a batch: the first Dream drains three entries in two
	// batches, and the second batch corrects what the first one wrote.
	h.set("dream.maxBatchSize", 2)
	h.llm.SetResponder(llmtest.OneEditModel)

	// Sessions 1 and 2: a process per turn, as `chat --session` is used
	// from scripts. Nothing is archived: the budget is far away.
	scenarioSessionsAlphaBeta(t, h)
	scenarioFirstDream(t, h)
	// A person edits MEMORY.md by hand between the Dreams.
	scenarioEditByHand(t, h)
	// The restarted gateway goes on with session 3; /dream archives its
	// tail first and dreams again.
	dreamLog, dreamList := scenarioSecondDream(t, h)

	// Every fact once, in its file; every corrected value gone.
	scenarioCheckFacts(t, h)
	// The restarted gateway still replayed the end of the conversation
	// that the first /dream archived.
	scenarioCheckReplay(t, h)
	scenarioCheckEdits(t, h)
	// Each fact reached Dream's analysis once: nothing was dreamed twice.
	scenarioCheckAnalysedOnce(t, h)
	// The history: cursors strictly increase, no message of a session is
	// in two entries, and the Dream cursor is at the last entry.
	scenarioCheckHistory(t, h)

	// The repository, through the real git command line: valid, clean,
	// and its log is the Dreams and the one hand edit.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed; the git command-line checks need it (.ci/run installs it)")
	}
	subjects, dreams, manual := scenarioCheckGitLog(t, h)
	scenarioCheckDreamLog(t, h, dreamLog, dreamList, subjects, dreams, manual)
}

func scenarioSessionsAlphaBeta(t *testing.T, h *harness) {
	t.Helper()
	for _, s := range []struct {
		name  string
		turns []string
	}{{"alpha", alphaTurns}, {"beta", betaTurns}} {
		for _, msg := range s.turns {
			if r := h.run("chat", "--session", s.name, "-m", msg); r.code != 0 {
				t.Fatalf("chat --session %s %q: exit %d: %s", s.name, msg, r.code, r.stderr)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(h.ws, "memory", "history.jsonl")); err == nil && len(readHistory(t, h.ws)) > 0 {
		t.Fatalf("history before any idle archive: %+v", readHistory(t, h.ws))
	}
}

// scenarioFirstDream leaves the gateway stopped, as a restart needs.
func scenarioFirstDream(t *testing.T, h *harness) {
	t.Helper()
	// Both go quiet for two hours; the gateway's scan of the disk at start
	// archives them.
	h.age(t, "terminal:alpha", 2*time.Hour)
	h.age(t, "terminal:beta", 2*time.Hour)
	g := h.startTerminalGateway(t)
	waitUntil(t, "the idle archive of alpha and beta", g.stderr, func() bool {
		keys := map[string]bool{}
		for _, k := range historyKeys(h.ws) {
			keys[k] = true
		}
		return keys["terminal:alpha"] && keys["terminal:beta"]
	})

	// Session 3 in the gateway, then the first Dream.
	for _, msg := range beforeRestartTurns {
		g.say(t, msg, "Got it.")
	}
	dream1 := g.say(t, "/dream", "read.")
	t.Logf("first /dream: %s", dream1)
	if !strings.Contains(dream1, "USER.md") || !strings.Contains(dream1, "SOUL.md") || !strings.Contains(dream1, "MEMORY.md") {
		t.Errorf("first /dream replied %q, want changes to the three files", dream1)
	}
	g.leave(t)
	if n := strings.Count(g.stderr.String(), "idle archive of a session left unarchived on disk"); n != 2 {
		t.Errorf("the gateway's start archived %d conversations from disk, want alpha and beta; log:\n%s", n, g.stderr)
	}
}

func scenarioEditByHand(t *testing.T, h *harness) {
	t.Helper()
	memPath := filepath.Join(h.ws, "memory", "MEMORY.md")
	mem, err := os.ReadFile(memPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memPath, []byte(strings.TrimRight(string(mem), "\n")+"\n"+handNote+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scenarioSecondDream returns what /dream-log and /dream-restore answered,
// for the checks against the repository once it is final.
func scenarioSecondDream(t *testing.T, h *harness) (dreamLog, dreamList string) {
	t.Helper()
	g := h.startTerminalGateway(t)
	if got := g.say(t, afterRestartTurns[0], "\n"); !strings.Contains(got, "My favourite editor is Helix.") {
		t.Errorf("after the restart %q was answered %q, want the corrected editor from USER.md", afterRestartTurns[0], got)
	}
	for _, msg := range afterRestartTurns[1:] {
		g.say(t, msg, "Got it.")
	}
	dream2 := g.say(t, "/dream", "read.")
	t.Logf("second /dream: %s", dream2)
	dreamLog = g.say(t, "/dream-log", "Undo it with /dream-restore")
	t.Logf("/dream-log:\n%s", dreamLog)
	dreamList = g.say(t, "/dream-restore", "/dream-restore <sha>")
	t.Logf("/dream-restore:\n%s", dreamList)
	g.leave(t)
	return dreamLog, dreamList
}

func scenarioCheckFacts(t *testing.T, h *harness) {
	t.Helper()
	files := map[string]string{}
	for _, f := range []string{"USER.md", "SOUL.md", "memory/MEMORY.md"} {
		b, err := os.ReadFile(filepath.Join(h.ws, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = string(b)
	}
	for _, f := range plantedFacts {
		for name, text := range files {
			want := 0
			if name == f.file {
				want = 1
			}
			if n := strings.Count(text, f.line); n != want {
				t.Errorf("%q is %d times in %s, want %d", f.line, n, name, want)
			}
			if n := strings.Count(text, f.word); n != want {
				t.Errorf("%q is named %d times in %s, want %d", f.word, n, name, want)
			}
			if f.old != "" && strings.Contains(text, f.old) {
				t.Errorf("the corrected value %q is still in %s", f.old, name)
			}
		}
	}
	if n := strings.Count(files["memory/MEMORY.md"], handNote); n != 1 {
		t.Errorf("the hand edit is %d times in MEMORY.md, want 1", n)
	}
	if t.Failed() {
		for name, text := range files {
			t.Logf("%s:\n%s", name, text)
		}
	}
}

func scenarioCheckReplay(t *testing.T, h *harness) {
	t.Helper()
	firstAfter := 0
	for _, r := range h.llm.Requests() {
		if len(r.Tools) == 0 || llmtest.Spoken(r.Messages[len(r.Messages)-1].Content) != afterRestartTurns[0] {
			continue
		}
		firstAfter++
		replayed := false
		for _, m := range r.Messages[1:] {
			replayed = replayed || m.Content == beforeRestartTurns[len(beforeRestartTurns)-1]
		}
		if !replayed {
			t.Errorf("the first turn after the restart did not replay %q", beforeRestartTurns[len(beforeRestartTurns)-1])
		}
	}

	if firstAfter != 1 {
		t.Errorf("%d chat calls for the first turn after the restart, want 1", firstAfter)
	}
}

func scenarioCheckEdits(t *testing.T, h *harness) {
	t.Helper()
	// Phase 2 made one edit per call, every one of them sound: a finding
	// is one edit (the editor's twice: stated, then corrected in the same
	// batch), 24 in the first Dream and 4 in the second, far more than
	// dream.maxIterations (10) calls.
	edits, failed := 0, 0
	for _, r := range h.llm.Requests() {
		last := r.Messages[len(r.Messages)-1]
		if len(r.Tools) == 0 || !strings.HasPrefix(r.Messages[1].Content, "## Findings to apply") || last.Role != "tool" {
			continue
		}
		if strings.HasPrefix(last.Content, "Edited ") {
			edits++
		} else {
			failed++
			t.Errorf("an edit failed: %s", last.Content)
		}
	}
	if edits != 28 || failed != 0 {
		t.Errorf("phase 2 made %d edits (%d failed), want 28", edits, failed)
	}
}

func scenarioCheckAnalysedOnce(t *testing.T, h *harness) {
	t.Helper()
	analysed := map[string]int{}
	for _, r := range h.llm.Requests() {
		if len(r.Tools) > 0 || len(r.Messages) < 2 || !strings.HasPrefix(r.Messages[1].Content, "## Archive entries") {
			continue
		}
		entries, _, _ := strings.Cut(r.Messages[1].Content, "\n## Today")
		for _, f := range plantedFacts {
			analysed[f.word] += strings.Count(entries, f.word)
		}
	}
	for _, f := range plantedFacts {
		if analysed[f.word] != 1 {
			t.Errorf("%q reached Dream's analysis %d times, want once", f.word, analysed[f.word])
		}
	}
}

func scenarioCheckHistory(t *testing.T, h *harness) {
	t.Helper()
	hist := readHistory(t, h.ws)
	type msgRef struct {
		session string
		index   int
	}
	archivedIn := map[msgRef]int{}
	sessions := map[string]bool{}
	for i, e := range hist {
		if i > 0 && e.Cursor <= hist[i-1].Cursor {
			t.Errorf("cursor %d follows %d", e.Cursor, hist[i-1].Cursor)
		}
		if e.SessionID == "" || len(e.Range) != 2 || e.Range[0] >= e.Range[1] {
			t.Errorf("entry %d has no message range: %+v", e.Cursor, e)
			continue
		}
		sessions[e.SessionKey] = true
		for m := e.Range[0]; m < e.Range[1]; m++ {
			ref := msgRef{e.SessionID, m}
			if prev, dup := archivedIn[ref]; dup {
				t.Errorf("message %d of %s (%s) is in entries %d and %d", m, e.SessionID, e.SessionKey, prev, e.Cursor)
			}
			archivedIn[ref] = e.Cursor
		}
	}
	for _, k := range []string{"terminal:alpha", "terminal:beta", "terminal:default"} {
		if !sessions[k] {
			t.Errorf("no history entry of %s: %+v", k, hist)
		}
	}
	cursor, err := os.ReadFile(filepath.Join(h.ws, "memory", ".dream_cursor"))
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1].Cursor; strings.TrimSpace(string(cursor)) != strconv.Itoa(last) {
		t.Errorf(".dream_cursor = %q, want the last cursor %d", cursor, last)
	}
}

// scenarioCheckGitLog returns the log's subjects, oldest first, and the
// indexes in it of the Dream commits and of the hand edit's, which the
// chat commands' answers are checked against.
func scenarioCheckGitLog(t *testing.T, h *harness) (subjects []string, dreams, manual []int) {
	t.Helper()
	gitCLI(t, h.ws, "fsck", "--full")
	if st := gitCLI(t, h.ws, "status", "--porcelain"); st != "" {
		t.Errorf("git status --porcelain = %q, want clean", st)
	}
	subjects = strings.Split(strings.TrimSpace(gitCLI(t, h.ws, "log", "--format=%s", "--reverse")), "\n")
	t.Logf("git log:\n%s", strings.Join(subjects, "\n"))
	for i, s := range subjects {
		switch {
		case i == 0 && s == "init: memory store":
		case strings.HasPrefix(s, "dream: "):
			dreams = append(dreams, i)
		case strings.HasPrefix(s, "manual: "):
			manual = append(manual, i)
		default:
			t.Errorf("commit %d %q is neither a Dream's nor a hand edit's", i, s)
		}
	}
	if len(manual) != 1 || len(dreams) < 2 || dreams[0] > manual[0] || dreams[len(dreams)-1] < manual[0] {
		t.Fatalf("want Dream commits, the one hand edit, Dream commits; git log:\n%s", strings.Join(subjects, "\n"))
	}
	handDiff := gitCLI(t, h.ws, "show", "--format=", "HEAD~"+strconv.Itoa(len(subjects)-1-manual[0]))
	if changed := changedLines(handDiff); len(changed) != 1 || changed[0] != "+"+handNote {
		t.Errorf("the manual commit changes %q, want only the hand note:\n%s", changed, handDiff)
	}
	for _, i := range dreams {
		diff := gitCLI(t, h.ws, "show", "--format=", "HEAD~"+strconv.Itoa(len(subjects)-1-i))
		if strings.Contains(strings.Join(changedLines(diff), "\n"), "Fernando") {
			t.Errorf("Dream commit %q holds the hand edit:\n%s", subjects[i], diff)
		}
	}
	return subjects, dreams, manual
}

func scenarioCheckDreamLog(t *testing.T, h *harness, dreamLog, dreamList string, subjects []string, dreams, manual []int) {
	t.Helper()
	// /dream-log shows the latest Dream commit, Dream's changes alone;
	// /dream-restore lists the changes that can be undone: the Dream
	// commits and the hand edit's.
	if !strings.Contains(dreamLog, subjects[dreams[len(dreams)-1]]) || !strings.Contains(dreamLog, "+- I speak Portuguese at home.") ||
		strings.Contains(strings.Join(changedLines(dreamLog), "\n"), "Fernando") {
		t.Errorf("/dream-log = %q, want the last Dream commit %q and its changes alone", dreamLog, subjects[dreams[len(dreams)-1]])
	}
	listed := regexp.MustCompile("(?m)^- `[0-9a-f]+` .*$").FindAllString(dreamList, -1)
	if len(listed) != min(len(dreams)+len(manual), 10) {
		t.Errorf("/dream-restore lists %d commits, want the %d Dream commits and the hand edit's:\n%s", len(listed), len(dreams), dreamList)
	}
	for _, l := range listed {
		if !strings.Contains(l, "dream: ") && !strings.Contains(l, "manual: edits outside Dream") {
			t.Errorf("/dream-restore lists %q", l)
		}
	}
	// The hand edit's commit is shown as what it is.
	manualSHA := strings.TrimSpace(gitCLI(t, h.ws, "log", "-1", "--format=%h", "HEAD~"+strconv.Itoa(len(subjects)-1-manual[0])))
	if r := h.run("dream", "log", manualSHA); r.code != 0 || !strings.Contains(r.stdout, "manual: edits outside Dream") ||
		!strings.Contains(r.stdout, "+"+handNote) || strings.Contains(r.stdout, "/dream-restore "+manualSHA) {
		t.Errorf("dream log %s: exit %d %q %s", manualSHA, r.code, r.stdout, r.stderr)
	}
	// `dreamgate dream log` agrees with /dream-log.
	if r := h.run("dream", "log"); r.code != 0 || !strings.Contains(r.stdout, subjects[dreams[len(dreams)-1]]) {
		t.Errorf("dream log: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}

// changedLines returns the added and removed lines of a unified diff.
func changedLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			out = append(out, l)
		}
	}
	return out
}

package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, body string) Scenario {
	t.Helper()
	scs, err := Parse("t.json", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return scs[0]
}

func TestScoreEveryCheckKind(t *testing.T) {
	sc := mustParse(t, good)
	files := map[string]string{
		FileUser:   "# Users\n- Alice lives in Porto.\n- Alice used to live in LISBON.",
		FileMemory: "# Memory\n- Alice moved to Porto in May.",
		FileSoul:   "# Soul\n- Never mention Mars.\n- mars is red",
	}
	r := Score(sc, Outcome{Files: files, Answers: []string{"She lives in porto now."},
		Usage: map[string]Tokens{PurposeChat: {Prompt: 10, Completion: 2, Calls: 1}, PurposeDream: {Prompt: 100, Calls: 3}}})
	if r.Facts != (Ratio{2, 2}) || r.Corrections != (Ratio{0, 1}) || r.Questions != (Ratio{1, 1}) {
		t.Errorf("facts %+v corrections %+v questions %+v", r.Facts, r.Corrections, r.Questions)
	}
	if r.Forbidden != 2 {
		t.Errorf("forbidden lines = %d, want 2 (absent is case-insensitive, counted per line)", r.Forbidden)
	}
	if r.Passed {
		t.Error("a failed correction must fail the scenario")
	}
	if r.Calls != 4 || r.Usage[PurposeArchive] != (Tokens{}) {
		t.Errorf("calls %d usage %+v", r.Calls, r.Usage)
	}
	corr := r.Checks[2]
	if corr.Kind != KindCorrection || corr.Passed || !strings.Contains(corr.Detail, "USER.md: - Alice used to live in LISBON.") {
		t.Errorf("correction check: %+v", corr)
	}
	// The regexp is case-sensitive unless it says otherwise.
	files[FileMemory] = "- ALICE MOVED TO PORTO"
	files[FileUser] = "- Porto"
	files[FileSoul] = ""
	r = Score(sc, Outcome{Files: files, Answers: []string{"no idea"}})
	if !r.Checks[1].Passed {
		t.Error("(?i) in matches should ignore case")
	}
	if r.Questions != (Ratio{0, 1}) || !strings.Contains(r.Checks[4].Detail, "no idea") {
		t.Errorf("question: %+v", r.Checks[4])
	}
	if !(r.Facts == Ratio{2, 2} && r.Corrections == Ratio{1, 1} && r.Forbidden == 0) {
		t.Errorf("second outcome: %+v", r)
	}
	// Missing answers (a failed turn) fail their questions.
	if r := Score(sc, Outcome{Files: files}); r.Questions != (Ratio{0, 1}) {
		t.Errorf("no answer: %+v", r.Questions)
	}
}

func TestContainsWithoutFileLooksEverywhere(t *testing.T) {
	sc := mustParse(t, `{"name": "s", "sessions": [{"key": "a", "turns": ["x"]}], "expect": [{"contains": "tabs"}]}`)
	if r := Score(sc, Outcome{Files: map[string]string{FileSoul: "Use TABS."}}); !r.Passed {
		t.Error("contains without file should look in every memory file")
	}
	if r := Score(sc, Outcome{Files: map[string]string{}}); r.Passed {
		t.Error("nothing written cannot pass")
	}
}

// scriptedPlayer returns outcomes in order.
type scriptedPlayer struct {
	outs []Outcome
	errs []error
	n    int
}

func (p *scriptedPlayer) Play(ctx context.Context, sc Scenario) (Outcome, error) {
	i := p.n
	p.n++
	var err error
	if i < len(p.errs) {
		err = p.errs[i]
	}
	return p.outs[i], err
}

func TestRunReportsSpreadAndFailures(t *testing.T) {
	a := mustParse(t, `{"name": "a", "sessions": [{"key": "k", "turns": ["x"]}],
		"expect": [{"file": "USER.md", "contains": "one"}, {"file": "USER.md", "contains": "two"}], "questions": [{"ask": "q?", "expect": "yes"}]}`)
	b := mustParse(t, `{"name": "b", "sessions": [{"key": "k", "turns": ["x"]}], "expect": [{"absent": "secret"}]}`)
	all := func(u string) Outcome {
		return Outcome{Files: map[string]string{FileUser: u}, Answers: []string{"yes"},
			Usage: map[string]Tokens{PurposeArchive: {Prompt: 1000, Completion: 500, Cached: 640, Calls: 2}, PurposeChat: {Prompt: 100, Cached: 0}}}
	}
	p := &scriptedPlayer{
		outs: []Outcome{all("one two"), all("clean"), all("one"), all("secret\nsecret again")},
		errs: []error{nil, nil, nil, nil},
	}
	var progress bytes.Buffer
	clock := time.Unix(0, 0)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	rep := Run(context.Background(), []Scenario{a, b}, p, Options{Runs: 2, Progress: &progress, Now: now})
	if rep.Passed || rep.Runs != 2 || len(rep.Results) != 4 {
		t.Fatalf("report: passed %v runs %d results %d", rep.Passed, rep.Runs, len(rep.Results))
	}
	sa := rep.Scenarios[0]
	if sa.PassedRuns != 1 || *sa.Facts != (Stat{Mean: 75, Min: 50, Max: 100}) || *sa.Questions != (Stat{100, 100, 100}) || sa.Corrections != nil {
		t.Errorf("scenario a: %+v facts %+v", sa, sa.Facts)
	}
	sb := rep.Scenarios[1]
	if sb.Forbidden != (Stat{Mean: 1, Min: 0, Max: 2}) || sb.Facts != nil {
		t.Errorf("scenario b: %+v", sb)
	}
	if o := rep.Overall; *o.Facts != (Stat{Mean: 75, Min: 50, Max: 100}) || o.Tokens[PurposeArchive] != (Stat{3000, 3000, 3000}) ||
		o.Cached != (Stat{1280, 1280, 1280}) ||
		o.Calls != (Stat{4, 4, 4}) || o.Seconds != (Stat{2, 2, 2}) {
		t.Errorf("overall: %+v", o)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if len(lines) != 4 || lines[0] != "eval: run 1/2 [1/2] a: passed, 3/3 checks, 2 model calls, 1s" ||
		!strings.HasPrefix(lines[3], "eval: run 2/2 [2/2] b: FAILED, 0/1 checks") {
		t.Errorf("progress:\n%s", progress.String())
	}

	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"a         1/2     75% (50–100)  –            0",
		"overall   1/2     75% (50–100)  –            1 (0–2)    100%",
		"3.0K",
		"cached",
		"1.3K", // the cached prompt tokens
		"b (run 2): forbidden memory never says \"secret\" — found: USER.md: secret | USER.md: secret again",
		"2 runs: each figure is the mean",
		"0 of 2 scenarios passed every check.",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	overall := back["overall"].(map[string]any)
	if overall["correctionsAppliedPercent"] != nil || overall["factsRecalledPercent"].(map[string]any)["min"] != 50.0 {
		t.Errorf("json overall: %v", overall)
	}
}

func TestRunNotPlayedAndCancelled(t *testing.T) {
	b := mustParse(t, `{"name": "b", "sessions": [{"key": "k", "turns": ["x"]}], "expect": [{"absent": "secret"}]}`)
	p := &scriptedPlayer{outs: []Outcome{{}, {}}, errs: []error{errors.New("no disk")}}
	var progress bytes.Buffer
	rep := Run(context.Background(), []Scenario{b}, p, Options{Progress: &progress})
	if rep.Passed || rep.Results[0].Error != "no disk" || !strings.Contains(progress.String(), "b: not played: no disk") {
		t.Errorf("a scenario that could not be played must fail: %+v\n%s", rep.Results[0], progress.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep := Run(ctx, []Scenario{b}, p, Options{Runs: 3}); rep.Passed || len(rep.Results) != 0 {
		t.Errorf("a cancelled run passes nothing: %+v", rep)
	}
}

// An expectation or question of an audience reads what that audience's
// prompts may show: its readable scopes' files, never the root's or
// another scope's.
func TestScoreByAudience(t *testing.T) {
	sc := mustParse(t, `{"name": "s",
	 "sessions": [{"key": "slack:D1", "audience": "slack/person/T1/UANA", "turns": ["my band is K7"]}],
	 "expect": [
	   {"audience": "slack/person/T1/UANA", "contains": "K7"},
	   {"audience": "slack/person/T1/UANA", "contains": "Fridays"},
	   {"audience": "slack/team/T1", "absent": "K7"},
	   {"audience": "slack/person/T1/UBOB", "absent": "K7"},
	   {"absent": "Fridays"},
	   {"audience": "slack/team/T2", "absent": "Fridays"}],
	 "questions": [
	   {"ask": "what is Ana's band?", "audience": "slack/person/T1/UBOB", "absent": "K7"},
	   {"ask": "what is my band?", "audience": "slack/person/T1/UANA", "expect": "K7"}]}`)
	if got := sc.Sessions[0].Audience.Home(); got != "person-slack-t1-uana" {
		t.Fatalf("session audience home %q", got)
	}
	files := map[string]string{
		"scopes/person-slack-t1-uana/USER.md":         "- Ana's band is K7",
		"scopes/team-slack-t1/memory/MEMORY.md":       "- the team ships on Fridays",
		"scopes/person-slack-t1-ubob/USER.md":         "- Bob likes tea",
		FileUser:                                      "- the operator",
		"scopes/team-slack-t2/memory/MEMORY.md":       "- other team",
		"scopes/private-slack-t1-c1/memory/MEMORY.md": "- K7 too",
	}
	r := Score(sc, Outcome{Files: files, Answers: []string{"I don't know.", "Your band is K7."}})
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check failed: %+v", c)
		}
	}
	files["scopes/team-slack-t1/USER.md"] = "- K7 leaked"
	r = Score(sc, Outcome{Files: files, Answers: []string{"It is K7.", ""}})
	failed := map[string]bool{}
	for _, c := range r.Checks {
		if !c.Passed {
			failed[c.What] = true
		}
	}
	for _, want := range []string{`memory in slack/team/T1 never says "K7"`, `memory in slack/person/T1/UBOB never says "K7"`,
		`answer in slack/person/T1/UBOB to "what is Ana's band?" never says "K7"`, `answer in slack/person/T1/UANA to "what is my band?" contains "K7"`} {
		if !failed[want] {
			t.Errorf("%q did not fail; failed: %v", want, failed)
		}
	}
}

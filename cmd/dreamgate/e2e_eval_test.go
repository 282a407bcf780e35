package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/eval"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// evalHarness is a user's machine whose model is llmtest.MemoryModel, so
// what each scenario leaves in memory is known in advance.
func evalHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.llm.SetResponder(llmtest.MemoryModel)
	return h
}

func decodeReport(t *testing.T, out string) eval.Report {
	t.Helper()
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, out)
	}
	return rep
}

func TestEvalPassesEveryCheckKind(t *testing.T) {
	h := evalHarness(t)
	r := h.run("eval", "--scenario", filepath.Join("testdata", "eval", "rules.json"), "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReport(t, r.stdout)
	if !rep.Passed || len(rep.Results) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	res := rep.Results[0]
	kinds := map[string]int{}
	for _, c := range res.Checks {
		kinds[c.Kind]++
		if !c.Passed {
			t.Errorf("check failed: %+v", c)
		}
	}
	for _, k := range []string{eval.KindFact, eval.KindCorrection, eval.KindForbidden, eval.KindQuestion} {
		if kinds[k] == 0 {
			t.Errorf("no %s check ran: %v", k, kinds)
		}
	}
	if res.Facts != (eval.Ratio{Passed: 6, Total: 6}) || res.Corrections != (eval.Ratio{Passed: 1, Total: 1}) ||
		res.Questions != (eval.Ratio{Passed: 2, Total: 2}) || res.Forbidden != 0 {
		t.Errorf("scores: facts %+v corrections %+v questions %+v forbidden %d", res.Facts, res.Corrections, res.Questions, res.Forbidden)
	}
	for _, p := range eval.Purposes {
		if res.Usage[p].Calls == 0 || res.Usage[p].Total() == 0 {
			t.Errorf("no %s usage recorded: %+v", p, res.Usage)
		}
	}
	if !strings.Contains(r.stderr, "eval: [1/1] people-corrections-tools: passed") {
		t.Errorf("no progress line on stderr:\n%s", r.stderr)
	}
	// The throw-away directories are gone and the user's are untouched.
	if _, err := os.Stat(h.ws); !os.IsNotExist(err) {
		t.Errorf("eval touched the configured workspace: %v", err)
	}
	if _, err := os.Stat(h.state); !os.IsNotExist(err) {
		t.Errorf("eval touched the configured state directory: %v", err)
	}
}

func TestEvalFailingCheckExitsOneAndSaysWhy(t *testing.T) {
	h := evalHarness(t)
	r := h.run("eval", "--scenario", filepath.Join("testdata", "eval", "failing.json"))
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"distractor-written",
		"forbidden memory never says \"Mars\" — found: USER.md: - My neighbour insists we will all live on Mars one day.",
		"fact USER.md contains \"Saturn\"",
		"correction USER.md never says \"neighbour\"",
		"question answer to \"Where will we all live one day?\" contains \"Jupiter\" — answer: My neighbour insists",
		"0 of 1 scenarios passed every check.",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the table does not say %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "distractor-written: FAILED, 0/4 checks") {
		t.Errorf("progress line missing:\n%s", r.stderr)
	}
	t.Log("\n" + r.stdout)
}

func TestEvalRunsReportTheSpread(t *testing.T) {
	h := evalHarness(t)
	dir := t.TempDir()
	for _, f := range []string{"rules.json", "failing.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "eval", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := h.run("eval", "--scenario", dir, "--runs", "2", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (one scenario fails)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReport(t, r.stdout)
	if rep.Runs != 2 || len(rep.Results) != 4 || len(rep.Scenarios) != 2 {
		t.Fatalf("runs %d, results %d, scenarios %d", rep.Runs, len(rep.Results), len(rep.Scenarios))
	}
	// Directory order: failing.json before rules.json.
	fail, pass := rep.Scenarios[0], rep.Scenarios[1]
	if fail.Scenario != "distractor-written" || fail.PassedRuns != 0 || fail.Runs != 2 {
		t.Errorf("failing scenario summary: %+v", fail)
	}
	if pass.PassedRuns != 2 || pass.Facts == nil || *pass.Facts != (eval.Stat{Mean: 100, Min: 100, Max: 100}) {
		t.Errorf("passing scenario summary: %+v", pass)
	}
	if fail.Forbidden != (eval.Stat{Mean: 1, Min: 1, Max: 1}) {
		t.Errorf("forbidden lines: %+v", fail.Forbidden)
	}
	// Overall: per run 6 of 7 facts (one scenario's 6, the other's 0 of 1).
	if o := rep.Overall.Facts; o == nil || o.Min != o.Max || int(o.Mean) != 85 {
		t.Errorf("overall facts: %+v", o)
	}
	if rep.Overall.Runs != 2 || rep.Overall.Tokens[eval.PurposeDream].Mean == 0 {
		t.Errorf("overall: %+v", rep.Overall)
	}
	for _, line := range []string{"eval: run 1/2 [1/2] distractor-written", "eval: run 2/2 [2/2] people-corrections-tools: passed"} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("progress %q missing:\n%s", line, r.stderr)
		}
	}
}

func TestEvalBadScenarioExitsTwoNamingTheField(t *testing.T) {
	h := evalHarness(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	body := `{"name": "typo", "sessions": [{"key": "a", "turns": ["hello", {"text": "hi", "idel": true}]}], "expect": [{"absent": "x"}]}`
	if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.run("eval", "--scenario", bad)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := bad + `: scenario "typo": sessions[0].turns[1].idel: is not a known field`
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr does not name file, scenario and field (%s):\n%s", want, r.stderr)
	}
	if len(h.llm.Requests()) != 0 {
		t.Error("a bad scenario file still reached the model")
	}
}

// evalInProcess runs `dreamgate eval` in this process with TMPDIR pointed at
// a directory of the test's, so what the eval leaves there can be seen.
func evalInProcess(t *testing.T, h *harness, args ...string) (code int, stdout, stderr string, tmp string) {
	t.Helper()
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out, errb strings.Builder
	code = run(t.Context(), append([]string{"--config", h.cfgPath, "eval"}, args...), strings.NewReader(""), &out, &errb,
		func(string) string { return "" })
	return code, out.String(), errb.String(), tmp
}

func TestEvalRemovesItsDirectoriesUnlessKept(t *testing.T) {
	h := evalHarness(t)
	scenario := filepath.Join("testdata", "eval", "rules.json")
	code, _, stderr, tmp := evalInProcess(t, h, "--scenario", scenario)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("eval left %d entries in the temp directory", len(left))
	}

	code, _, stderr, tmp = evalInProcess(t, h, "--scenario", scenario, "--keep")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	kept, _ := filepath.Glob(filepath.Join(tmp, "dreamgate-eval-*"))
	if len(kept) != 1 || !strings.Contains(stderr, kept[0]) {
		t.Fatalf("--keep: kept %v, stderr:\n%s", kept, stderr)
	}
	ws := filepath.Join(kept[0], "1-people-corrections-tools", "workspace")
	hist := readHistory(t, ws)
	// The idle turn archived bob's first two lines on their own; /new
	// archived the rest of that conversation as a second entry.
	var bob []string
	for _, e := range hist {
		if e.SessionKey == "slack:C1" {
			bob = append(bob, e.Content)
		}
	}
	if len(bob) != 2 || !strings.Contains(bob[0], "answers short") || strings.Contains(bob[0], "freeze") ||
		!strings.Contains(bob[1], "freeze deploys") {
		t.Errorf("slack:C1 history entries = %q, want the idle archive then the /new archive", bob)
	}
	// Dream read everything and committed its edits.
	if st, err := os.ReadFile(filepath.Join(ws, "memory", ".dream_cursor")); err != nil || strings.TrimSpace(string(st)) != "4" {
		t.Errorf("dream cursor = %q (%v), want 4 (every entry read)", st, err)
	}
}

func TestEvalLongConversationCrossesTheBudget(t *testing.T) {
	h := evalHarness(t)
	code, stdout, stderr, tmp := evalInProcess(t, h, "--scenario", filepath.Join("testdata", "eval", "budget.json"), "--keep", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	rep := decodeReport(t, stdout)
	if p := rep.Results[0].Problems; len(p) != 0 {
		t.Errorf("problems: %q", p)
	}
	kept, _ := filepath.Glob(filepath.Join(tmp, "dreamgate-eval-*", "1-budget-crossed", "workspace"))
	if len(kept) != 1 {
		t.Fatalf("kept workspace not found under %s", tmp)
	}
	hist := readHistory(t, kept[0])
	// Archives during the conversation (the budget) and one at /new.
	if len(hist) < 4 {
		t.Errorf("%d history entries; the conversation should cross the budget at least three times", len(hist))
	}
	// The first archive reached memory: hot, or cold once a deep Dream
	// found a later note replacing it (the notes differ in a word or two).
	hot, _ := os.ReadFile(filepath.Join(kept[0], "memory", "MEMORY.md"))
	cold, _ := os.ReadFile(filepath.Join(kept[0], "memory", "COLD.md"))
	if !strings.Contains(string(hot)+string(cold), "Status note 1:") {
		t.Errorf("the first note is in neither MEMORY.md nor COLD.md:\n%s\n%s", hot, cold)
	}
	t.Logf("%d entries, usage %+v", len(hist), rep.Results[0].Usage)
}

func TestEvalPlaysTheBuiltInScenarios(t *testing.T) {
	h := evalHarness(t)
	r := h.run("eval", "--json")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rep := decodeReport(t, r.stdout)
	builtin, err := eval.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(builtin) {
		t.Fatalf("%d results for %d built-in scenarios", len(rep.Results), len(builtin))
	}
	for _, res := range rep.Results {
		// The fake is no judge of what matters, so checks may fail; but
		// every scenario is played to the end without a pipeline failure.
		if res.Error != "" || len(res.Problems) != 0 {
			t.Errorf("%s: error %q problems %q", res.Scenario, res.Error, res.Problems)
		}
		if res.Usage[eval.PurposeChat].Calls == 0 || res.Usage[eval.PurposeArchive].Calls == 0 {
			t.Errorf("%s: usage %+v", res.Scenario, res.Usage)
		}
	}
	t.Logf("passed with the rule-following fake: %v", func() (names []string) {
		for _, s := range rep.Scenarios {
			if s.PassedRuns == 1 {
				names = append(names, s.Scenario)
			}
		}
		return
	}())
}

func TestEvalWithoutAModelSaysSoOnce(t *testing.T) {
	h := newHarness(t)
	h.set("llm.baseURL", closedURL(t))
	r := h.run("eval")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	oneSentence(t, r.stderr)
	if !strings.Contains(r.stderr, "dreamgate eval:") || r.stdout != "" {
		t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
	}
}

func TestEvalBadFlagsExitTwo(t *testing.T) {
	h := evalHarness(t)
	for _, args := range [][]string{{"--runs", "0"}, {"--bogus"}, {"--scenario", filepath.Join(t.TempDir(), "none.json")}} {
		if r := h.run(append([]string{"eval"}, args...)...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
}

package dream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/internal/tokens"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/memory/memline"
)

// monthsOfUser is a USER.md after months: 60 durable facts of 2026, a
// duplicate, a corrected fact (Lisbon in January, Porto in October), a
// plan from 40 days before the clock's day, and a permanent rule from two
// years before.
func monthsOfUser() string {
	var b strings.Builder
	b.WriteString("# User\n\n- Ana wants answers in Portuguese. <!-- permanent 2024-11-01 src:1 -->\n")
	for i := range 60 {
		fmt.Fprintf(&b, "- Ana's project number %d uses the codename %s. <!-- durable 2026-%02d-%02d src:%d -->\n",
			i, strings.Repeat("x", 3+i%5), 1+i%10, 1+i%28, 10+i)
	}
	b.WriteString("- Ana lives in Lisbon. <!-- durable 2026-01-10 src:2 -->\n")
	b.WriteString("- Ana drinks green tea. <!-- durable 2026-02-01 src:3 -->\n")
	b.WriteString("- Ana is in Berlin until Friday. <!-- ephemeral 2026-10-18 src:4 -->\n")
	b.WriteString("- ana drinks green tea <!-- durable 2026-09-01 src:5 -->\n")
	b.WriteString("- Ana lives in Porto. <!-- durable 2026-10-20 src:6 -->\n")
	return b.String()
}

// keys are the facts of a memory text, by memline.Key.
func keys(text string) map[string]bool {
	out := map[string]bool{}
	for _, it := range memline.ParseFile([]byte(text)).Items {
		if it.Fact {
			out[memline.Key(it.Line.Text)] = true
		}
	}
	return out
}

// texts counts the facts of a memory text, by their text.
func texts(text string) map[string]int {
	out := map[string]int{}
	for _, it := range memline.ParseFile([]byte(text)).Items {
		if it.Fact {
			out[strings.TrimSpace(it.Line.Text)]++
		}
	}
	return out
}

// hotOf counts the scope's memory as the deep Dream and the prompt do:
// each line with text as shown, plus one.
func hotOf(t *testing.T, e *env) int {
	t.Helper()
	var c tokens.Counter
	var texts []string
	for _, rel := range memory.HotFiles() {
		texts = append(texts, memory.ShownText(DefaultScope, rel, []byte(e.read(rel))))
	}
	return memory.Cost(&c, texts...) // as the prompt counts
}

// deepEnv is a workspace whose USER.md is monthsOfUser, committed, with
// the clock on 2026-11-27.
func deepEnv(t *testing.T) (*env, string) {
	e := newEnv(t)
	user := monthsOfUser()
	testkit.WriteFile(t, e.ws, "USER.md", user)
	if _, err := e.repo.CommitPaths([]string{"USER.md"}, "months of facts", ""); err != nil {
		t.Fatal(err)
	}
	now := day("2026-11-27")
	e.now = func() time.Time { return now }
	return e, user
}

// Asked for by the prompt, a deep Dream brings a scope over its budget
// back under its target with the rule-following model: duplicates and a
// correction merged (the later value and date kept), the expired plan
// retired, the permanent rule kept, the rest moved out by the model's
// second, firmer pass; hot and cold memory together hold every fact, and
// one "dream: deep" commit holds both files.
func TestDeepDreamBringsAScopeUnderBudget(t *testing.T) {
	e, before := deepEnv(t)
	e.srv.SetResponder(llmtest.MemoryModel)
	d := e.dreamer(Config{HotTokens: 1000})
	if err := d.Ledger().RequestDeep(DefaultScope); err != nil {
		t.Fatal(err)
	}
	// A restart does not forget the request.
	d = e.dreamer(Config{HotTokens: 1000})
	if got := d.Ledger().DeepRequested(); len(got) != 1 || got[0] != DefaultScope {
		t.Fatalf("requests after a restart = %v", got)
	}
	start := hotOf(t, e)
	if start <= 1000 {
		t.Fatalf("the test's memory is within its budget already: %d tokens", start)
	}
	if st := d.Status(AllScopes()); len(st.DeepAsked) != 1 || st.DeepAsked[0] != DefaultScope || st.LastDeep != nil {
		t.Errorf("status before: asked %v, last deep %v; want the default scope asked, none run", st.DeepAsked, st.LastDeep)
	}

	rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deep) != 1 {
		t.Fatalf("deep Dreams = %+v", rep.Deep)
	}
	if st := d.Status(AllScopes()); len(st.DeepAsked) != 0 || st.LastDeep == nil {
		t.Errorf("status after: asked %v, last deep %v; want none asked, one run", st.DeepAsked, st.LastDeep)
	}
	dr := rep.Deep[0]
	t.Logf("deep Dream: %d -> %d tokens (target %d), %d merged, %d retired, %d moved by the model, %d by the program; %d passes, %d prompt + %d completion tokens",
		dr.Before, dr.After, dr.Target, dr.Merged, dr.Aged, dr.Moved, dr.Budget, dr.Passes, dr.Usage.PromptTokens, dr.Usage.CompletionTokens)
	if dr.Passes != 2 || dr.Merged+dr.Replaced != 2 || dr.Aged != 1 || dr.Moved == 0 {
		t.Errorf("deep Dream = %+v; want 2 passes, 2 merged, 1 retired, some moved out by the model", dr)
	}
	if n := hotOf(t, e); n > 800 || dr.After != n {
		t.Errorf("memory after the deep Dream: %d tokens (report %d), want at most 800 (0.8 of 1000)", n, dr.After)
	}
	user, cold := e.read("USER.md"), e.read("memory/COLD.md")
	for k := range keys(before) {
		if !keys(user)[k] && !keys(cold)[k] {
			t.Errorf("fact lost: %q is in neither USER.md nor COLD.md", k)
		}
	}
	if got := noIDs(e.lineOf("USER.md", "Portuguese")); got != "- Ana wants answers in Portuguese. <!-- permanent 2024-11-01 src:1 -->" {
		t.Errorf("the permanent rule: %q", got)
	}
	checkDeepCorrection(t, e, user, cold)
	checkColdReasons(t, cold)
	if strings.Contains(user, "Berlin") || !strings.Contains(cold, "aged out: ephemeral") {
		t.Errorf("the 40-day-old plan did not retire:\n%s", cold)
	}
	if n := strings.Count(strings.ToLower(user), "drinks green tea"); n != 1 {
		t.Errorf("the duplicate: %d lines", n)
	}
	c := e.log(1)[0]
	if !strings.HasPrefix(c.Subject, DeepSubject) || c.Short != dr.Commit || rep.Outcome != OutcomeCompleted {
		t.Errorf("commit %q (%s), report %s, %s", c.Subject, c.Short, dr.Commit, rep.Outcome)
	}
	if st, err := e.repo.Status(nil); err != nil || !st.Empty() {
		t.Errorf("files differ from HEAD after the deep Dream: %+v, %v", st, err)
	}
	if got := d.Ledger().DeepRequested(); len(got) != 0 {
		t.Errorf("request still there: %v", got)
	}
	if p := e.progress(); p.SinceDeep != 0 || p.LastDeep == nil {
		t.Errorf("progress: %+v", p)
	}
	e.checkWire()

	// Under its target, the next Dream makes no deep Dream.
	rep, err = d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 0 || rep.Outcome != OutcomeNothingNew {
		t.Errorf("the next Dream: %+v, %v", rep, err)
	}
}

// checkDeepCorrection checks the correction TestDeepDreamBringsAScopeUnderBudget's
// deep Dream merged: the later value stays in USER.md, naming the line it
// replaced; the old value is in cold memory alone, superseded by it.
func checkDeepCorrection(t *testing.T, e *env, user, cold string) {
	t.Helper()
	porto, _ := memline.Parse(e.lineOf("USER.md", "lives"))
	lisbon, _ := memline.Parse(e.lineOf("memory/COLD.md", "Lisbon"))
	if porto.Text != "Ana lives in Porto." || porto.Date != "2026-10-20" || len(porto.Replaces) != 1 || porto.Replaces[0] != lisbon.ID || porto.ID == "" {
		t.Errorf("the corrected fact: %+v", porto)
	}
	if lisbon.SupersededBy != porto.ID || lisbon.Why != memline.Replaced || lisbon.Out != "2026-11-27" {
		t.Errorf("the old value in cold memory: %+v", lisbon)
	}
	if strings.Contains(user, "Lisbon") || !strings.Contains(cold, "Lisbon") {
		t.Error("the old value is not in cold memory alone")
	}
}

// checkColdReasons checks that each line of cold memory says when and
// why it left (issue 28, point 10), as TestDeepDreamBringsAScopeUnderBudget's
// deep Dream moved them.
func checkColdReasons(t *testing.T, cold string) {
	t.Helper()
	// Issue 28, point 10: each cold line says why it left — the lines the
	// model moved out to make room were filed as "merged, replaced or no
	// longer true".
	whyOf := map[string]memline.Reason{"Berlin": memline.Aged, "Lisbon": memline.Replaced, "green tea": memline.Merged, "project number": memline.Moved}
	for _, it := range memline.ParseFile([]byte(cold)).Items {
		if !it.Fact {
			continue
		}
		l := it.Line
		if l.Why == "" || l.Out != "2026-11-27" || l.ID == "" {
			t.Errorf("a cold line does not say when and why it left: %q", it.Raw)
		}
		for words, why := range whyOf {
			if strings.Contains(strings.ToLower(l.Text), words) && l.Why != why {
				t.Errorf("%q left for %q, want %q", it.Raw, l.Why, why)
			}
		}
		if (l.Why == memline.Merged || l.Why == memline.Replaced) != l.Superseded() {
			t.Errorf("%q: superseded-by is set exactly for merged and replaced lines", it.Raw)
		}
	}
	if strings.Contains(cold, "merged, replaced or no longer true") {
		t.Errorf("cold memory lumps reasons together:\n%s", cold)
	}
}

// A model that never shrinks anything still leaves the scope under its
// target: the program moves the lowest-priority, oldest lines out (never
// the permanent one), each one into cold memory and the commit, and a
// restore of the deep Dream brings them back.
func TestDeepDreamWhoseModelDoesNotShrink(t *testing.T) {
	e, before := deepEnv(t)
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("DONE") })
	// Over the share of its budget, the scope is due without a request.
	d := e.dreamer(Config{HotTokens: 1000, DeepAtShare: 0.5})
	rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deep) != 1 {
		t.Fatalf("deep Dreams = %+v", rep.Deep)
	}
	dr := rep.Deep[0]
	if dr.Passes != 2 || dr.Budget == 0 || dr.Merged != 0 {
		t.Errorf("deep Dream = %+v; want 2 passes and lines moved out by the program", dr)
	}
	if n := hotOf(t, e); n > 500 {
		t.Errorf("memory after the deep Dream: %d tokens, want at most 500", n)
	}
	user, cold := e.read("USER.md")+e.read("memory/MEMORY.md"), e.read("memory/COLD.md")
	before += initMemory
	for k := range keys(before) {
		if !keys(user)[k] && !keys(cold)[k] {
			t.Errorf("fact lost: %q is in neither hot nor cold memory", k)
		}
	}
	if h, c, b := len(memline.ParseFile([]byte(user)).Facts()), len(memline.ParseFile([]byte(cold)).Facts()), len(memline.ParseFile([]byte(before)).Facts()); h+c != b {
		t.Errorf("%d lines in hot and %d in cold memory, want %d in all\n%s\n%s", h, c, b, user, cold)
	}
	if !strings.Contains(user, "Portuguese") || !strings.Contains(cold, coldHeading(memline.Budget, 30)) {
		t.Errorf("USER.md:\n%s\nCOLD.md:\n%s", user, cold)
	}
	// The undated and oldest durable lines left first: the newest stay.
	if !strings.Contains(user, "Ana lives in Porto.") {
		t.Errorf("the newest fact moved out before older ones:\n%s", user)
	}

	if _, err := d.Restore(dr.Commit, AllScopes(), RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.read("USER.md") + e.read("memory/MEMORY.md"); got != before {
		t.Errorf("USER.md after the restore:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "memory", "COLD.md")); !os.IsNotExist(err) {
		t.Errorf("cold memory after the restore: %v", err)
	}
}

// Every DeepEvery Dreams of a scope, a deep Dream merges and retires even
// within the budget; the count starts again after it.
func TestDeepDreamEveryNDreams(t *testing.T) {
	e, _ := deepEnv(t)
	e.srv.SetResponder(llmtest.MemoryModel)
	d := e.dreamer(Config{DeepEvery: 2})
	for i := range 2 {
		e.hist.seed(t, i+1, 1, func(int) string { return fmt.Sprintf("- Ana uses tool number %d.", i) })
		rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 1; (len(rep.Deep) == 1) != want {
			t.Fatalf("Dream %d: deep Dreams %+v, want one: %v", i+1, rep.Deep, want)
		}
	}
	if p := e.progress(); p.SinceDeep != 0 {
		t.Errorf("count after the deep Dream: %d", p.SinceDeep)
	}
	user := e.read("USER.md")
	if strings.Contains(user, "Berlin") || strings.Contains(user, "Lisbon") || strings.Count(strings.ToLower(user), "drinks green tea") != 1 {
		t.Errorf("USER.md after the deep Dream:\n%s", user)
	}
}

func TestParseDeep(t *testing.T) {
	ops := parseDeep("Sure.\n- MERGE U1, U4: - Ana drinks tea.\n**MOVE** m2 M3\nMERGE U5:\n1. move S1\nREPLACE U2 U3 with U7\nREPLACE U2\nretire M1\nDONE")
	want := []deepOp{{verb: opMerge, ids: []string{"U1", "U4"}, text: "Ana drinks tea."}, {verb: opMove, ids: []string{"M2", "M3"}},
		{verb: opMove, ids: []string{"S1"}}, {verb: opReplace, ids: []string{"U2", "U3"}, with: "U7"}, {verb: opRetire, ids: []string{"M1"}}}
	if fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Errorf("ops = %+v, want %+v", ops, want)
	}
}

// A permanent line is never moved out by the model, an unknown or reused
// id does nothing, and a merge keeps the best priority, the newest date
// and every source.
func TestApplyDeepRules(t *testing.T) {
	f := &deepFile{rel: fileUser, f: memline.ParseFile([]byte("# User\n- A. <!-- permanent 2025-01-01 src:1 id:000a -->\n- B. <!-- ephemeral 2026-03-01 src:2 id:000b -->\n- C. <!-- durable 2026-02-01 src:3 id:000c -->\n"))}
	res := applyDeep([]*deepFile{f}, []deepOp{{verb: opMove, ids: []string{"U1", "U9"}}, {verb: opMerge, ids: []string{"U2", "U3"}, text: "B and C."}, {verb: opRetire, ids: []string{"U3"}}}, idSet{"000a": true, "000b": true, "000c": true})
	merged := f.f.Items[2].Line
	if got := string(f.f.Bytes()); got != "# User\n- A. <!-- permanent 2025-01-01 src:1 id:000a -->\n- B and C. <!-- durable 2026-03-01 src:2,3 id:"+merged.ID+" replaces:000b,000c -->\n" {
		t.Errorf("file:\n%s", got)
	}
	if res.merged != 1 || res.moved != 0 || res.retired != 0 || res.refused != 3 || coldCount(res.cold) != 2 {
		t.Errorf("applied = %+v", res)
	}
	// Both merged lines went to cold memory, each superseded by the merge.
	for _, l := range res.cold[0].lines {
		if res.cold[0].why != memline.Merged || l.SupersededBy != merged.ID {
			t.Errorf("cold: %+v, %+v", res.cold[0], l)
		}
	}
}

// A scope whose permanent lines alone pass the target is left over it
// (they never move), and its size alone does not call for another deep
// Dream until it grows.
func TestDeepDreamOverTargetWithPermanentLinesOnly(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("# User\n\n")
	for i := range 40 {
		fmt.Fprintf(&b, "- Rule %d: answer project %d questions in the house style. <!-- permanent 2026-01-%02d -->\n", i, i, 1+i%28)
	}
	testkit.WriteFile(t, e.ws, "USER.md", b.String())
	now := day("2026-11-27")
	e.now = func() time.Time { return now }
	e.srv.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("MOVE U1 U2") })
	d := e.dreamer(Config{HotTokens: 1000, DeepAtShare: 0.5})
	rep, err := d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 1 {
		t.Fatalf("first Dream: %+v, %v", rep.Deep, err)
	}
	if got := noIDs(e.read("USER.md")); got != b.String() {
		t.Errorf("permanent lines moved:\n%s", got)
	}
	if p := e.progress(); p.DeepLeft != rep.Deep[0].After || p.DeepLeft <= 500 {
		t.Errorf("progress %+v after %+v", p, rep.Deep[0])
	}
	// Nor does a prompt's request (the prompt still cannot show it all).
	if err := d.Ledger().RequestDeep(DefaultScope); err != nil {
		t.Fatal(err)
	}
	calls := len(e.srv.Requests())
	rep, err = d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 0 || len(e.srv.Requests()) != calls || len(d.Ledger().DeepRequested()) != 0 {
		t.Errorf("second Dream: %+v, %v, %d model calls, requests %v", rep.Deep, err, len(e.srv.Requests())-calls, d.Ledger().DeepRequested())
	}
	// Once it grows, it is due again.
	testkit.WriteFile(t, e.ws, "USER.md", b.String()+"- Ana likes long walks in the hills. <!-- durable 2026-11-01 -->\n")
	rep, err = d.Run(context.Background(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 1 || rep.Deep[0].Budget != 1 {
		t.Errorf("after it grew: %+v, %v", rep.Deep, err)
	}
}

// A deep Dream is one step: killed after writing its copy, it changed
// nothing; killed between two of its files (cold memory and USER.md),
// the next start writes the other from its commit. Either way every fact
// of USER.md is then in exactly one tier, hot or cold (issue point 2: the
// half-written state was committed, lines hot and cold at once), and the
// deep Dream's one commit can be restored.
func TestDeepDreamKilledBetweenItsFilesIsWhole(t *testing.T) {
	e, before := deepEnv(t)
	e.srv.SetResponder(llmtest.MemoryModel)
	e.hot = 1000
	cfg := Config{Workspace: e.ws, HotTokens: 1000}

	e.killedAt(PointDeepWrite, 1)
	if st, _ := e.repo.Status(nil); !st.Empty() || len(e.log(10)) != 2 || e.read("USER.md") != before {
		t.Fatalf("a deep Dream killed before its step landed changed something: %+v", st.Files)
	}

	e.killedAt(gitstore.PointCheckout, 1)
	c := e.log(1)[0]
	if !strings.HasPrefix(c.Subject, DeepSubject) {
		t.Fatalf("last commit %q, want the deep Dream's", c.Subject)
	}
	if st, _ := e.repo.Status(nil); st.Empty() {
		t.Fatal("after the kill between its files, every file holds the commit's version")
	}
	d := e.dreamer(cfg)
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 0 || rep.Recovered != c.Short {
		t.Fatalf("next run: recovered %q, deep %+v, %v", rep.Recovered, rep.Deep, err)
	}
	if st, _ := e.repo.Status(nil); !st.Empty() {
		t.Errorf("files left uncommitted: %+v", st)
	}
	if cs := e.log(2); cs[0].SHA != c.SHA {
		t.Errorf("commits after the recovery: %q, %q", cs[0].Subject, cs[1].Subject)
	}
	// Every fact is still there, and none went to cold memory twice (a
	// merged line's sources are in cold memory and the merged line hot).
	hot, cold := keys(e.read("USER.md")), texts(e.read("memory/COLD.md"))
	for k := range texts(before) {
		if !hot[memline.Key(k)] && cold[k] == 0 {
			t.Errorf("%q is in neither tier", k)
		}
		if cold[k] > 1 {
			t.Errorf("%q is in cold memory %d times", k, cold[k])
		}
	}
	if _, err := d.Restore(c.Short, AllScopes(), RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.read("USER.md"); got != before {
		t.Errorf("USER.md after restoring the deep Dream:\n%s", got)
	}
}

// A deep Dream's prompt fits the Dream model's window (issue point 11: at
// 10,000 facts its one call held 234K tokens against a 128K window): the
// scope's facts are shown in as many calls as fit, each fact in one call
// of a pass, and the memory still ends within its target.
func TestDeepDreamFitsTheWindowInCalls(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString("# User\n\n")
	const facts = 600
	for i := range facts {
		fmt.Fprintf(&b, "- Ana's project P%03d is called Heron%03d and ships in spring. <!-- durable 2026-%02d-01 src:%d -->\n", i, i, 1+i%11, i+1)
	}
	testkit.WriteFile(t, e.ws, "USER.md", b.String())
	if _, err := e.repo.CommitPaths([]string{"USER.md"}, "months of facts", ""); err != nil {
		t.Fatal(err)
	}
	now := day("2026-11-27")
	e.now = func() time.Time { return now }
	e.srv.SetResponder(llmtest.MemoryModel)
	cfg := Config{HotTokens: 4000, Window: 8000, MaxTokens: 500}
	d := e.dreamer(cfg)
	if err := d.Ledger().RequestDeep(DefaultScope); err != nil {
		t.Fatal(err)
	}
	rep, err := d.Run(t.Context(), TriggerManual, AllScopes(), nil)
	if err != nil || len(rep.Deep) != 1 || rep.Deep[0].Commit == "" {
		t.Fatalf("run: %+v, %v", rep.Deep, err)
	}
	var count tokens.Counter
	calls, shown := 0, map[string]int{}
	for _, r := range e.srv.Requests() {
		user := r.Messages[len(r.Messages)-1].Content
		if !strings.HasPrefix(user, "## Deep Dream") {
			continue
		}
		if n := count.Count(r.Messages[0].Content) + count.Count(user); n > cfg.Window-cfg.MaxTokens {
			t.Errorf("a deep Dream call holds %d tokens, over the window's %d", n, cfg.Window-cfg.MaxTokens)
		}
		if strings.Contains(user, "This pass must free") {
			continue // the second pass numbers what the first left
		}
		calls++
		for line := range strings.Lines(user) {
			if id, _, ok := strings.Cut(line, " ["); ok && strings.HasPrefix(id, "U") {
				shown[id]++
			}
		}
	}
	if calls < 2 {
		t.Errorf("%d calls in the first pass, want the facts in several", calls)
	}
	if len(shown) != facts {
		t.Errorf("the first pass showed %d facts, want %d", len(shown), facts)
	}
	for id, n := range shown {
		if n != 1 {
			t.Errorf("%s shown %d times in one pass", id, n)
		}
	}
	if got := hotOf(t, e); got > int(float64(cfg.HotTokens)*DefaultDeepAtShare) {
		t.Errorf("memory after the deep Dream: %d tokens, over its target", got)
	}
}

package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// The end-to-end tests run on the embedded engine (the files), and all but
// those listed in filesOnly run a second time on the PostgreSQL engine:
// TestPostgresEndToEnd runs this test binary again with engineEnv set, and
// every harness of that run keeps its program state in a schema of its own
// in the test cluster (store.postgres in its config). A test that checks
// the program files themselves (history.jsonl's bytes, the inbox file, a
// kill between two file writes) is in filesOnly; what the tests read of the
// archive, they read through the engine (readHistory).

const (
	// engineEnv chooses the harness's engine: "postgres", or the files.
	engineEnv = "DREAMGATE_TEST_ENGINE"
	// builtBinEnv hands the second run the binary the first one built.
	builtBinEnv = "DREAMGATE_TEST_BIN"
)

// filesOnly are the end-to-end tests that do not run on PostgreSQL, and
// why: each checks the files themselves (it writes history.jsonl or a
// session file to set up its case, reads a program file, or kills the
// process at a file's write), or a promise only the files' engine makes
// today. Every other test of the e2e_*_test.go files runs in the
// PostgreSQL pass: a new one joins it unless it is listed here.
var filesOnly = map[string]string{
	"TestKilledArchiveIsNotRepeated":                     "kills at history.jsonl's append",
	"TestKilledDreamIsRecoveredThroughTheBinary":         "writes history.jsonl to set up",
	"TestGatewayBoundsHistoryWithDreamOff":               "writes 1,000+ entries into history.jsonl",
	"TestOverBudgetPromptAsksForADeepDream":              "reads memory/.dream_ledger",
	"TestKillAtTheRefWriteKeepsDreamHistory":             "writes history.jsonl to set up",
	"TestEmptiedBranchIsRepairedThroughTheBinary":        "writes history.jsonl to set up",
	"TestUnrepairableBranchStopsDream":                   "writes history.jsonl to set up",
	"TestNewScopeBetweenAnothersEntriesThroughTheBinary": "writes history.jsonl to set up",
	"TestLongEntryIsReadWholeThroughTheBinary":           "writes history.jsonl to set up",
	"TestRecentHistoryFollowsTheScopesCursor":            "writes history.jsonl to set up",
	"TestWebShowsSlackNames":                             "writes history.jsonl to set up",
	"TestWebShowsDiscordNames":                           "writes scopes' memory files by hand to set up (on PostgreSQL the page lists the database repository's scopes)",
	"TestMonthsOfFactsStayWithinBudget":                  "reads history.jsonl",
	"TestScenarioThirtyTurnsThreeSessionsTwoDreams":      "reads the session files",
	"TestSetAsideConversationSurvivesAKill":              "reads the set-aside conversations' files",
	"TestOpenModesAreTightenedAtStart":                   "checks the session files' modes",
	"TestEvalRemovesItsDirectoriesUnlessKept":            "eval plays scenarios in workspaces of its own, on files",
	"TestEvalLongConversationCrossesTheBudget":           "eval plays scenarios in workspaces of its own, on files",
	"TestMonthsOfCorrectionsAfterTheOldValuesWentCold":   "reads history.jsonl",
	"TestBackupRoundTrip":                                "dreamgate backup reads the files' engine",
	"TestBackupWaitsForARunningDream":                    "dreamgate backup waits on the files' Dream lock",
	"TestMigrateNeedsADatabase":                          "asks for a database where the config names none",
	"TestWorkspaceInsideAnotherRepository":               "a repository around the workspace concerns the files' memory repository; on PostgreSQL it is the database's",
	"TestAMemoryLinkIsNeverFollowedThroughSlack":         "plants memory files and links in the scope folders, which the database's memory never reads",
	"TestChatBesideTerminalGatewayIsRefused":             "a conversation's lock across processes is the files' (flock); on PostgreSQL it comes with work shared by conversation",
}

// endToEndTests lists the tests of the e2e_*_test.go files that the
// PostgreSQL pass runs: all but filesOnly's and the Postgres ones, which
// run in the first pass already.
func endToEndTests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("e2e_*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no end-to-end test files: %v", err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range append(files, "web_test.go") {
		parsed, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range parsed.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || strings.Contains(fn.Name.Name, "Postgres") {
				continue
			}
			if _, skip := filesOnly[fn.Name.Name]; !skip {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}

// pgWorkspaces maps a harness's workspace to its database's DSN, in the
// PostgreSQL pass.
var pgWorkspaces sync.Map

// useEngine gives the harness a database of its own when the run is the
// PostgreSQL pass.
func (h *harness) useEngine() {
	if os.Getenv(engineEnv) != "postgres" {
		return
	}
	dsn := pgtest.DSN(h.t)
	h.cfg["store"] = map[string]any{"postgres": dsn}
	pgWorkspaces.Store(h.ws, dsn)
	// What moved to the database is never written to the files.
	h.t.Cleanup(func() {
		for _, pattern := range []string{"sessions/*.jsonl", "sessions/*.meta.json", "inbox*.jsonl", webKeyFile} {
			if found, _ := filepath.Glob(filepath.Join(h.state, pattern)); len(found) > 0 {
				h.t.Errorf("on the PostgreSQL engine, program state went to the files: %v", found)
			}
		}
		if data, _ := os.ReadFile(filepath.Join(h.ws, "memory", "history.jsonl")); len(data) > 0 {
			h.t.Errorf("on the PostgreSQL engine, the archive went to memory/history.jsonl")
		}
		if ledger := dream.NewLedgerFiles(h.ws); true {
			if _, ok, _ := ledger.Record(); ok {
				h.t.Errorf("on the PostgreSQL engine, Dream's ledger went to the workspace's files")
			}
		}
	})
}

// readHistoryFromDatabase reads the archive of ws's harness from its
// database; ok is false on the embedded engine.
func readHistoryFromDatabase(t *testing.T, ws string) ([]historyLine, bool) {
	t.Helper()
	dsn, ok := pgWorkspaces.Load(ws)
	if !ok {
		return nil, false
	}
	db, err := postgres.Open(context.Background(), dsn.(string), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Archive().Since(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]historyLine, 0, len(es))
	for _, e := range es {
		l := historyLine{Cursor: e.Cursor, Timestamp: e.Timestamp, Content: e.Content, SessionKey: e.SessionKey, SessionID: e.SessionID}
		if e.SessionID != "" {
			l.Range = []int{e.Range[0], e.Range[1]}
		}
		out = append(out, l)
	}
	return out, true
}

// readDreamCursor is memory/.dream_cursor's content, or on the PostgreSQL
// engine the database's Dream cursor written as that file would hold it.
func readDreamCursor(t *testing.T, ws string) []byte {
	t.Helper()
	dsn, ok := pgWorkspaces.Load(ws)
	if !ok {
		b, _ := os.ReadFile(filepath.Join(ws, "memory", ".dream_cursor"))
		return b
	}
	db, err := postgres.Open(context.Background(), dsn.(string), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Archive().DreamCursor()
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strconv.Itoa(n))
}

// pageKeyInDatabase is the memory page's key in ws's harness's database;
// ok is false on the embedded engine.
func pageKeyInDatabase(t *testing.T, ws string) ([]byte, bool) {
	t.Helper()
	dsn, ok := pgWorkspaces.Load(ws)
	if !ok {
		return nil, false
	}
	db, err := postgres.Open(context.Background(), dsn.(string), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key, _, err := db.Secrets().Lookup(pageKeyName)
	if err != nil {
		t.Fatal(err)
	}
	return key, true
}

// historyKeysFromDatabase is historyKeys on the PostgreSQL engine.
func historyKeysFromDatabase(ws string) ([]string, bool) {
	dsn, ok := pgWorkspaces.Load(ws)
	if !ok {
		return nil, false
	}
	db, err := postgres.Open(context.Background(), dsn.(string), postgres.Options{})
	if err != nil {
		return nil, true
	}
	defer db.Close()
	es, _ := db.Archive().Since(0, 0)
	var keys []string
	for _, e := range es {
		if e.SessionKey != "" {
			keys = append(keys, e.SessionKey)
		}
	}
	return keys, true
}

// One process on PostgreSQL behaves as on files: every end-to-end test
// but filesOnly's passes on the PostgreSQL engine too. Each must have run
// and passed (a skip fails it: a test that cannot run on this engine is
// listed in filesOnly, with why).
func TestPostgresEndToEnd(t *testing.T) {
	if os.Getenv(engineEnv) != "" {
		t.Skip("this is the PostgreSQL pass itself")
	}
	pgtest.Server(t)
	if testing.Short() {
		t.Skip("the PostgreSQL pass runs the listed end-to-end tests again")
	}
	pass := endToEndTests(t)
	// Its own deadline, well within the package's (go test's 10 minutes):
	// a test that hangs on this engine fails the pass with its stacks,
	// rather than the whole package without a word of which.
	run := "^(" + strings.Join(pass, "|") + ")$"
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", run, "-test.count=1", "-test.v", "-test.timeout=6m")
	cmd.Env = append(os.Environ(), engineEnv+"=postgres", builtBinEnv+"="+binPath)
	out, err := cmd.CombinedOutput()
	passed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\w+)`).FindAllStringSubmatch(string(out), -1) {
		passed[m[2]] = m[1] == "PASS"
	}
	for _, name := range pass {
		if !passed[name] {
			t.Errorf("%s did not pass on the PostgreSQL engine", name)
		}
	}
	if err != nil || t.Failed() {
		t.Fatalf("the PostgreSQL pass: %v\n%s", err, lastLines(string(out), 200))
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

package main

import (
	"context"
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

// The end-to-end tests run on the embedded engine (the files), and the
// ones listed in postgresPass run a second time on the PostgreSQL engine:
// TestPostgresEndToEnd runs this test binary again with engineEnv set, and
// every harness of that run keeps its program state in a schema of its own
// in the test cluster (store.postgres in its config). A test that checks
// the program files themselves (history.jsonl's bytes, the inbox file, a
// kill between two file writes) is not listed; what the tests read of the
// archive, they read through the engine (readHistory).

const (
	// engineEnv chooses the harness's engine: "postgres", or the files.
	engineEnv = "DREAMGATE_TEST_ENGINE"
	// builtBinEnv hands the second run the binary the first one built.
	builtBinEnv = "DREAMGATE_TEST_BIN"
)

// postgresPass are the end-to-end tests that also run on the PostgreSQL
// engine, chosen to cover every path of program state through the built
// binary (a one-shot chat, a restart, archives, /new, Dream from chat and
// the CLI, Slack and Discord, scopes, recall, the inbox answering what a
// kill -9 left) in a few minutes.
var postgresPass = []string{
	"TestChatOneShotWithATool",
	"TestSessionSurvivesRestart",
	"TestArchivedConversationKeepsItsLastMessages",
	"TestLongConversationIsArchivedAndRecalled",
	"TestNewArchivesBeforeTheProcessExits",
	"TestDreamRunLogRestoreThroughTheBinary",
	"TestDreamFromChatAndStatus",
	"TestTeamChannelArchiveNamesWhoSaidWhat",
	"TestSlackAndDiscordThroughTheBinary",
	"TestScopesThroughSlack",
	"TestChaosInFlightAnsweredAfterRestart",
	"TestWebPageThroughTheBinary",
	"TestWebLinkThroughSlack",
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

// One process on PostgreSQL behaves as on files: the listed end-to-end
// tests pass on the PostgreSQL engine too. Each must have run and passed
// (a skip fails it: a test that cannot run on this engine is not listed).
func TestPostgresEndToEnd(t *testing.T) {
	if os.Getenv(engineEnv) != "" {
		t.Skip("this is the PostgreSQL pass itself")
	}
	pgtest.Server(t)
	if testing.Short() {
		t.Skip("the PostgreSQL pass runs the listed end-to-end tests again")
	}
	run := "^(" + strings.Join(postgresPass, "|") + ")$"
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", run, "-test.count=1", "-test.v", "-test.timeout=25m")
	cmd.Env = append(os.Environ(), engineEnv+"=postgres", builtBinEnv+"="+binPath)
	out, err := cmd.CombinedOutput()
	passed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\w+)`).FindAllStringSubmatch(string(out), -1) {
		passed[m[2]] = m[1] == "PASS"
	}
	for _, name := range postgresPass {
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

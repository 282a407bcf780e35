package dream

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// pgEnv is a Dreamer whose memory repository, ledger and history are one
// PostgreSQL database's, as cmd wires them with store.postgres set.
type pgEnv struct {
	*env
	db   *postgres.DB
	dsn  string
	repo *gitstore.Store
	d    *Dreamer
}

func newPGEnv(t *testing.T) *pgEnv {
	t.Helper()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	db, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	repo, err := gitstore.OpenDB(db.Repository(), gitstore.Options{Tracked: workspace.MemoryFiles(),
		Patterns: workspace.TrackedPatterns(), Lines: audience.ScopesDir,
		Initial: map[string][]byte{"SOUL.md": []byte(initSoul), "USER.md": []byte(initUser), "memory/MEMORY.md": []byte(initMemory)}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: db.Archive(), Repo: repo,
		Memory: memory.New(memory.NewCommitted(repo), false), LedgerStore: db.DreamLedger(), Logger: slog.New(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	return &pgEnv{env: e, db: db, dsn: dsn, repo: repo, d: d}
}

// exec runs sql on the test's schema.
func (p *pgEnv) exec(t *testing.T, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// ledgerHead is the commit the ledger's record (in the database) names as
// the last it took in.
func (p *pgEnv) ledgerHead(t *testing.T) string {
	t.Helper()
	b, ok, err := p.db.DreamLedger().Record()
	if err != nil || !ok {
		t.Fatalf("the ledger's record: ok %v, %v", ok, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Head
}

// On PostgreSQL a step's commit, its ref and its ledger step are one
// transaction: a ledger write that fails takes the commit back with it
// (the step did not happen, and says so), and a step that lands is the
// ledger's head with its commit, with no start needed to take it in.
func TestStepAndItsLedgerAreOneTransactionOnPostgres(t *testing.T) {
	p := newPGEnv(t)
	team := audience.Scope("team-slack-t1")
	if _, err := p.d.Edit(team, memory.User, []byte("- Ana leads the team.\n")); err != nil {
		t.Fatal(err)
	}
	first, err := p.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ledgerHead(t); got != first.SHA {
		t.Fatalf("the ledger's head after a step = %.8s, want its commit %s", got, first.Short)
	}
	// The database refuses the ledger's write from now on.
	p.exec(t, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse BEFORE UPDATE ON dream_ledger FOR EACH ROW EXECUTE FUNCTION refuse()`)
	_, err = p.d.Edit(team, memory.User, []byte("- Ana leads the team.\n- Bob joined.\n"))
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a step whose ledger write fails = %v, want the database's refusal", err)
	}
	if h, err := p.repo.Head(); err != nil || h.SHA != first.SHA {
		t.Errorf("the repository's head after the refused step = %s, %v; want %s (no commit without its ledger step)", h.Short, err, first.Short)
	}
	data, _, err := p.repo.FileAt(first.SHA, "scopes/team-slack-t1/USER.md")
	if err != nil || string(data) != "- Ana leads the team.\n" {
		t.Errorf("the team's USER.md = %q, %v", data, err)
	}
	p.exec(t, `DROP TRIGGER refuse ON dream_ledger`)
	res, err := p.d.Edit(team, memory.User, []byte("- Ana leads the team.\n- Bob joined.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ledgerHead(t); got != res.Commit.SHA {
		t.Errorf("the ledger's head after the step = %.8s, want %s", got, res.Commit.Short)
	}
}

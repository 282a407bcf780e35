package main

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/store/storetest"
	"github.com/jackc/pgx/v5"
)

// With store.postgres the archive and the conversations go to the
// database, through the built binary: a conversation archived by /new is
// an entry there, the conversation is rows there, and the workspace's
// history.jsonl and the state directory's sessions hold nothing.
func TestPostgresArchiveThroughTheBinary(t *testing.T) {
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	h.set("store.postgres", dsn)
	pgWorkspaces.Store(h.ws, dsn)
	h.llm.Push(llmtest.Text("Noted."), llmtest.Text("- The user prefers tea over coffee"))
	if r := h.run("chat", "-m", "I prefer tea over coffee."); r.code != 0 {
		t.Fatalf("chat: %d %s", r.code, r.stderr)
	}
	if r := h.run("chat", "-m", "/new"); r.code != 0 {
		t.Fatalf("/new: %d %s", r.code, r.stderr)
	}
	hist := readHistory(t, h.ws)
	if len(hist) != 1 || !strings.Contains(hist[0].Content, "tea over coffee") || hist[0].SessionID == "" {
		t.Fatalf("the database's archive = %+v", hist)
	}
	// The template's empty history.jsonl stays empty.
	if data, _ := os.ReadFile(filepath.Join(h.ws, "memory", "history.jsonl")); len(data) != 0 {
		t.Fatalf("the workspace's history.jsonl holds entries: the archive went to the files:\n%s", data)
	}
	if files, _ := filepath.Glob(filepath.Join(h.state, "sessions", "*.jsonl")); len(files) != 0 {
		t.Fatalf("the conversation went to the files: %v", files)
	}
	db, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	convs, err := db.Conversations().List()
	if err != nil || len(convs) != 1 || convs[0].Key != "terminal:default" || convs[0].Live || convs[0].Lines != 2 {
		t.Fatalf("the database's conversations (the one /new set aside; the new one has no message yet) = %+v, %v", convs, err)
	}
	r := h.run("status")
	if r.code != 0 || !strings.Contains(r.stdout, "1 entry") {
		t.Fatalf("status: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A DSN that does not parse is a config error naming the field (exit 2);
// a database that cannot be reached fails the command in a sentence that
// names store.postgres, or the variable it came from. Each is one line
// and none shows the password.
func TestStoreDSNErrors(t *testing.T) {
	h := newHarness(t)
	h.set("store.postgres", "postgres://ana:s3cret@127.0.0.1:bad/dg")
	r := h.run("chat", "-m", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "store.postgres") || strings.Contains(r.stderr, "s3cret") {
		t.Fatalf("a DSN that does not parse: exit %d\n%s", r.code, r.stderr)
	}
	oneSentence(t, r.stderr)
	h.set("store.postgres", "postgres://ana:s3cret@127.0.0.1:1/dg?connect_timeout=2")
	r = h.run("chat", "-m", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "store.postgres") || strings.Contains(r.stderr, "s3cret") {
		t.Fatalf("an unreachable database: exit %d\n%s", r.code, r.stderr)
	}
	oneSentence(t, r.stderr)
	h.set("store.postgres", "")
	env := []string{"DREAMGATE_POSTGRES_URL=postgres://ana:s3cret@127.0.0.1:1/dg?connect_timeout=2"}
	r = h.runEnv(env, "chat", "-m", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "DREAMGATE_POSTGRES_URL") || strings.Contains(r.stderr, "s3cret") {
		t.Fatalf("DREAMGATE_POSTGRES_URL to an unreachable database: exit %d\n%s", r.code, r.stderr)
	}
	oneSentence(t, r.stderr)
}

// A database a newer dreamgate has upgraded is refused by the binary in
// one sentence that names store.postgres and says what to run, and the
// database is left as it was.
func TestPostgresNewerSchemaIsRefusedInOneSentence(t *testing.T) {
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	h.set("store.postgres", dsn)
	if r := h.run("chat", "-m", "hi"); r.code != 0 {
		t.Fatalf("chat on a new database: exit %d\n%s", r.code, r.stderr)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	newer := postgres.SchemaVersion() + 1
	if _, err := conn.Exec(t.Context(), `INSERT INTO dreamgate_schema (version_id, is_applied) VALUES ($1, true)`, newer); err != nil {
		t.Fatal(err)
	}
	r := h.run("chat", "-m", "hi again")
	if r.code == 0 || !strings.Contains(r.stderr, "store.postgres") || !strings.Contains(r.stderr, "at least as new") {
		t.Fatalf("chat on a newer schema: exit %d\n%s", r.code, r.stderr)
	}
	oneSentence(t, r.stderr)
	var msgs int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM conversation_lines`).Scan(&msgs); err != nil || msgs != 2 {
		t.Fatalf("the database holds %d messages (%v), want the first chat's 2", msgs, err)
	}
}

// On PostgreSQL the memory page's key and its used sign-in links are the
// database's: a link `dreamgate web-link` made before a restart signs the
// operator in after it (the files' engine refuses such a link, not
// knowing whether it was used), and only once, also after another
// restart.
func TestPostgresWebLinkAcrossARestart(t *testing.T) {
	dsn := pgtest.DSN(t)
	h := newHarness(t)
	h.set("store.postgres", dsn)
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	base := "http://" + addr
	stop := func(p *gatewayProc) {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
	}
	p := h.startGateway(t)
	waitWeb(t, p, base)
	r := h.run("web-link")
	link := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.Contains(link, "/signin?link=") {
		t.Fatalf("web-link: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	stop(p)
	signIn := func() int {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		res, err := c.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"link": {"1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		res, err = c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	p = h.startGateway(t)
	waitWeb(t, p, base)
	if code := signIn(); code != http.StatusSeeOther {
		t.Fatalf("a link made before the restart: %d, want a sign-in\n%s", code, p.stderr.String())
	}
	stop(p)
	p = h.startGateway(t)
	waitWeb(t, p, base)
	if code := signIn(); code != http.StatusUnauthorized {
		t.Fatalf("the link a second time, after another restart: %d, want refused", code)
	}
	if files, _ := filepath.Glob(filepath.Join(h.state, webKeyFile)); len(files) != 0 {
		t.Fatal("the page's key went to the state directory")
	}
}

// The state directory's files keep the secrets' contract.
func TestStoreEmbeddedSecrets(t *testing.T) {
	storetest.RunSecrets(t, func(t *testing.T) (store.Secrets, func(*testing.T) store.Secrets) {
		dir := t.TempDir()
		return stateSecrets{dir: dir}, func(*testing.T) store.Secrets { return stateSecrets{dir: dir} }
	})
}

package recall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/history"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/workspace"
)

// Audiences of the tests: two teams, a DM in team 1, a private channel in
// team 1, and the operator.
var (
	team1   = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}
	team2   = audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T2"}
	anaDM   = audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}
	private = audience.Audience{Kind: audience.Private, Platform: "slack", Team: "T1", Chat: "CPRIV"}
	op      = audience.Audience{Kind: audience.Operator, Platform: "terminal"}
)

// fakeConvs keeps conversations in memory and serves them as the session
// store does: a file per generation (the live one under its key's name,
// set-aside ones under "<name>.<id>"), a stamp that changes with every
// change, reads that resume from an opaque position (here the message
// index) and start over when the position is not one it handed out.
type fakeConvs struct {
	mu    sync.Mutex
	files map[string]*fakeConv
	reads int
	// fail makes Read of that name fail as a file changed under it.
	fail map[string]bool
}

type fakeConv struct {
	key, id  string
	aud      audience.Audience
	msgs     []llm.Message
	archived int
}

func newFakeConvs() *fakeConvs {
	return &fakeConvs{files: map[string]*fakeConv{}, fail: map[string]bool{}}
}

// say adds messages to the live conversation of key (created with aud)
// and archives all but the last keep of them.
func (f *fakeConvs) say(key string, aud audience.Audience, keep int, msgs ...llm.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.files[key]
	if !ok {
		c = &fakeConv{key: key, id: fmt.Sprintf("gen%d", len(f.files)), aud: aud}
		f.files[key] = c
	}
	c.msgs = append(c.msgs, msgs...)
	c.archived = max(c.archived, len(c.msgs)-keep)
}

// rotate sets key's live conversation aside, as /new does, and archives
// its tail, as the consolidator then does.
func (f *fakeConvs) rotate(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.files[key]
	c.archived = len(c.msgs)
	f.files[key+"."+c.id] = c
	f.files[key] = &fakeConv{key: key, id: c.id + "x", aud: c.aud}
}

func (f *fakeConvs) Files() ([]ConversationFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ConversationFile
	for name, c := range f.files {
		out = append(out, ConversationFile{Name: name, Key: c.key, Stamp: fmt.Sprintf("%s/%d/%d", c.id, len(c.msgs), c.archived)})
	}
	return out, nil
}

func (f *fakeConvs) Read(name string, resume func(id string) (int, int64), fn func(int, llm.Message) error) (ConversationRead, error) {
	f.mu.Lock()
	c, ok := f.files[name]
	fail := f.fail[name]
	f.reads++
	f.mu.Unlock()
	if !ok {
		return ConversationRead{}, errors.New("no such file")
	}
	from, at := resume(c.id)
	if int64(from) != at || from > c.archived {
		from = 0
	}
	for i := from; i < c.archived; i++ {
		if err := fn(i, c.msgs[i]); err != nil {
			return ConversationRead{}, err
		}
	}
	if fail {
		return ConversationRead{}, errors.New("changed while read")
	}
	return ConversationRead{Key: c.key, ID: c.id, Audience: c.aud, Next: c.archived, NextAt: int64(c.archived)}, nil
}

// fixture is a workspace with an archive, conversations and an index.
type fixture struct {
	ws, state string
	hist      *history.Store
	convs     *fakeConvs
	logs      *testkit.LogRecorder
	opts      Options
	idx       *Index
}

var fixedNow = time.Date(2026, 11, 20, 14, 3, 0, 0, time.Local)

func newFixture(t testing.TB) *fixture { return newFixtureWith(t, nil) }

// newPostgresFixture is a fixture whose index is kept in PostgreSQL, in a
// schema of the test's own.
func newPostgresFixture(t testing.TB) *fixture {
	t.Helper()
	db, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return newFixtureWith(t, db.Recall())
}

// onEngines runs a test of what recall promises on both engines: the
// ranking, the scopes and the updates are recall's, whichever engine keeps
// the index. The PostgreSQL run needs the test cluster (internal/pgtest).
func onEngines(t *testing.T, test func(t *testing.T, newFixture func(testing.TB) *fixture)) {
	t.Run("embedded", func(t *testing.T) { test(t, newFixture) })
	t.Run("postgres", func(t *testing.T) { test(t, newPostgresFixture) })
}

// newFixtureWith is a fixture whose index is kept by engine (nil: the
// embedded one in the state directory).
func newFixtureWith(t testing.TB, engine store.RecallIndex) *fixture {
	t.Helper()
	f := &fixture{ws: t.TempDir(), state: t.TempDir(), convs: newFakeConvs(), logs: &testkit.LogRecorder{}}
	var err error
	f.hist, err = history.Open(filepath.Join(f.ws, workspace.MemoryDir), history.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	f.opts = Options{
		Store:         engine,
		Dir:           filepath.Join(f.state, "recall"),
		Memory:        memory.New(memory.NewDisk(f.ws), false),
		History:       f.hist,
		Conversations: f.convs,
		Logger:        f.logs.Logger(),
		Every:         time.Hour, // the tests update when they mean to
	}
	f.idx = Open(f.opts)
	t.Cleanup(func() { _ = f.idx.Close() })
	return f
}

// reopen closes the index and opens another on the same files.
func (f *fixture) reopen(t testing.TB) {
	t.Helper()
	if err := f.idx.Close(); err != nil {
		t.Fatal(err)
	}
	f.idx = Open(f.opts)
	t.Cleanup(func() { _ = f.idx.Close() })
}

func (f *fixture) archive(t testing.TB, scope audience.Scope, content, key string) history.Entry {
	t.Helper()
	e, err := f.hist.AppendIn(scope, content, key)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (f *fixture) cold(t testing.TB, scope audience.Scope, text string) {
	t.Helper()
	path := filepath.Join(f.ws, filepath.FromSlash(scope.Dir()), filepath.FromSlash(workspace.Cold))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) update(t testing.TB) Stats {
	t.Helper()
	st, err := f.idx.Update(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (f *fixture) search(t testing.TB, q string, readable ...audience.Scope) []Match {
	t.Helper()
	res, err := f.idx.Search(context.Background(), q, readable, MaxLimit)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return res.Matches
}

func user(sender, text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: text, Sender: sender, Time: fixedNow}
}

func reply(text string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: text, Time: fixedNow}
}

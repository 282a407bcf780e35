package dream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store"
)

// memLeases are scope leases in memory: held marks names another process
// holds; lose makes the fence of a name fail from then on (another
// process took it over).
type memLeases struct {
	mu     sync.Mutex
	epoch  map[string]int64
	held   map[string]bool
	lost   map[string]bool
	leased []string
}

func newMemLeases() *memLeases {
	return &memLeases{epoch: map[string]int64{}, held: map[string]bool{}, lost: map[string]bool{}}
}

func (m *memLeases) Lease(name string) (int64, bool, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[name] {
		return 0, false, false, nil
	}
	m.epoch[name]++
	m.leased = append(m.leased, name)
	return m.epoch[name], true, false, nil
}

func (m *memLeases) Unlease(string) error { return nil }

func (m *memLeases) CheckFence(name string, epoch int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost[name] || m.epoch[name] != epoch {
		return store.ErrLeaseLost
	}
	return nil
}

// A scope whose lease another process holds is left to it: this Dream
// reads and writes nothing of it, and dreams the others.
func TestScopeLeasedElsewhereIsLeftAlone(t *testing.T) {
	e := newScopedEnv(t)
	e.add(audience.Default, "operator likes tea")
	e.add(team, "team ships on fridays")
	leases := newMemLeases()
	leases.held[scopeLease(team)] = true
	d := e.dreamer(Config{})
	d.ShareScopes(leases)
	if _, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	for _, an := range e.analyses() {
		if strings.Contains(an, "fridays") {
			t.Fatal("the team's entries were read by a Dream that does not hold its lease")
		}
	}
	if got := e.read("USER.md"); !strings.Contains(got, "operator likes tea") {
		t.Errorf("the default scope was not dreamed: %q", got)
	}
	if r := e.record(); r.Scopes[team] != nil && r.Scopes[team].Cursor >= 2 {
		t.Errorf("the team's cursor moved: %+v", r.Scopes[team])
	}
	if want := []string{scopeLease(audience.Default)}; strings.Join(leases.leased, ",") != strings.Join(want, ",") {
		t.Errorf("leased %v, want %v", leases.leased, want)
	}
}

// A Dream whose lease was taken over meanwhile (its process cut off from
// the store, another process dreaming the scope now) commits nothing: the
// store's fence refuses the step before anything is written.
func TestStepUnderALostLeaseIsNotCommitted(t *testing.T) {
	e := newScopedEnv(t)
	e.add(team, "team ships on fridays")
	leases := newMemLeases()
	d := e.dreamer(Config{})
	d.ShareScopes(leases)
	// The lease is lost while phase 1 runs, before the step lands.
	e.fail = func(string) bool {
		leases.mu.Lock()
		leases.lost[scopeLease(team)] = true
		leases.mu.Unlock()
		return false
	}
	rep, err := d.Run(t.Context(), TriggerCron, AllScopes(), nil)
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("run: %+v, %v; want the lease's loss", rep, err)
	}
	for _, c := range e.commits() {
		if strings.HasPrefix(c.c.Subject, SubjectPrefix) {
			t.Errorf("a Dream commit made under a lost lease: %q", c.c.Subject)
		}
	}
	if got := e.read("scopes/team-slack-t1/USER.md"); strings.Contains(got, "fridays") {
		t.Errorf("the team's files were written under a lost lease: %q", got)
	}
}

// The ledger's record is written under the scope's fence when the store
// can fence it.
func TestLedgerWritesAreFenced(t *testing.T) {
	e := newScopedEnv(t)
	e.add(team, "team ships on fridays")
	st := &fencedStore{leases: newMemLeases()}
	d, err := New(Config{Workspace: e.ws}, Deps{Model: e.llm, History: e.hist, Repo: e.repo, Logger: slog.New(e.logs), LedgerStore: st})
	if err != nil {
		t.Fatal(err)
	}
	d.ShareScopes(st.leases)
	if _, err := d.Run(context.Background(), TriggerCron, AllScopes(), nil); err != nil {
		t.Fatal(err)
	}
	if st.fenced == 0 {
		t.Fatal("no write of the record was fenced")
	}
	for _, f := range st.fences {
		if f.Lease != scopeLease(team) || f.Epoch != 1 {
			t.Errorf("a write fenced by %+v", f)
		}
	}
}

// fencedStore is a DreamLedger in memory that fences writes as the
// PostgreSQL engine does.
type fencedStore struct {
	leases *memLeases
	mu     sync.Mutex
	rec    []byte
	fenced int
	fences []store.Fence
}

func (s *fencedStore) Record() ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec, s.rec != nil, nil
}

func (s *fencedStore) PutRecord(rec []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec = append([]byte(nil), rec...)
	return nil
}

func (s *fencedStore) PutRecordFenced(rec []byte, f store.Fence) error {
	if err := s.leases.CheckFence(f.Lease, f.Epoch); err != nil {
		return err
	}
	s.mu.Lock()
	s.fenced++
	s.fences = append(s.fences, f)
	s.mu.Unlock()
	return s.PutRecord(rec)
}

func (s *fencedStore) LockRecord() (func(), error) { return func() {}, nil }

var dreamLockMu sync.Mutex

func (s *fencedStore) TryDream(now time.Time) (func(), bool, time.Time, error) {
	if !dreamLockMu.TryLock() {
		return nil, false, time.Time{}, nil
	}
	return dreamLockMu.Unlock, true, now, nil
}

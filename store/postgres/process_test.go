package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/internal/pgtest"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// join makes a process of its own on dsn (a database handle of its own,
// as another dreamgate process has), left when the test ends.
func join(t *testing.T, dsn, host string) (*postgres.DB, *postgres.Process) {
	t.Helper()
	db := open(t, dsn, nil)
	// The default lease: its connection check gives a ping a third of it,
	// and a 1 s lease lost a live process's claims on a loaded machine.
	// No test waits for a lease to run out; a kill ends the connection.
	p, err := db.Join(context.Background(), postgres.ProcessInfo{Host: host, PID: 1, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return db, p
}

// kill ends p's connection from the server's side, as the server ends a
// dead process's.
func kill(t *testing.T, db *postgres.DB, p *postgres.Process) {
	t.Helper()
	if err := db.Exec(`SELECT pg_terminate_backend($1)`, p.BackendPID()); err != nil {
		t.Fatal(err)
	}
}

func accept(t *testing.T, db *postgres.DB, box, key, id string) {
	t.Helper()
	if _, err := db.Inbox(box).Accept(store.InboxMessage{Channel: "slack", MessageID: id, Conversation: key, Origin: []byte("{}"), Text: id, Accepted: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// One process at a time holds a conversation; a released one is the
// next's, and the other process hears of the release.
func TestPostgresClaimsAreExclusive(t *testing.T) {
	dsn := pgtest.DSN(t)
	dbA, a := join(t, dsn, "a")
	_, b := join(t, dsn, "b")
	accept(t, dbA, "inbox", "slack:C1", "m1")
	accept(t, dbA, "inbox", "slack:C2", "m2")
	accept(t, dbA, "inbox", "slack:C1", "m3")

	if ok, over, err := a.Claim("slack:C1"); err != nil || !ok || over {
		t.Fatalf("a's claim: %v %v %v", ok, over, err)
	}
	if ok, _, err := b.Claim("slack:C1"); err != nil || ok {
		t.Fatalf("b claimed what a holds: %v %v", ok, err)
	}
	if held, err := b.HeldElsewhere("slack:C1"); err != nil || !held {
		t.Fatalf("b sees a's claim held elsewhere: %v, %v", held, err)
	}
	if held, err := a.HeldElsewhere("slack:C1"); err != nil || held {
		t.Fatalf("a sees its own claim held elsewhere: %v, %v", held, err)
	}
	keys, err := b.Claimable([]string{"slack"}, 0, 10)
	if err != nil || len(keys) != 1 || keys[0] != "slack:C2" {
		t.Fatalf("claimable for b = %v, %v; want slack:C2 alone", keys, err)
	}
	if got, _ := b.Claimable([]string{"discord"}, 0, 10); len(got) != 0 {
		t.Errorf("claimable on another platform = %v", got)
	}
	// A conversation nobody claimed yet is left to its receiver a while.
	if got, _ := b.Claimable([]string{"slack"}, time.Hour, 10); len(got) != 0 {
		t.Errorf("claimable within the receiver's moment = %v", got)
	}
	waiting, err := a.Waiting("slack:C1")
	if err != nil || len(waiting) != 2 || waiting[0].MessageID != "m1" || waiting[1].MessageID != "m3" {
		t.Fatalf("waiting = %+v, %v; want m1 then m3", waiting, err)
	}
	procs, err := dbA.Processes()
	if err != nil || len(procs) != 2 || len(procs[0].Claims) != 1 || procs[0].Claims[0].Name != "slack:C1" || procs[0].Host != "a" {
		t.Fatalf("processes = %+v, %v", procs, err)
	}
	// What /healthz and dreamgate status show: a claim's age, and the
	// messages waiting over every process.
	if since := procs[0].Claims[0].Since; since.IsZero() || time.Since(since) > time.Minute || time.Until(since) > time.Minute {
		t.Errorf("claim held since %v, want about now", since)
	}
	if n, err := dbA.InboxDepth(); err != nil || n != 3 {
		t.Errorf("inbox depth = %d, %v; want 3", n, err)
	}
	if err := dbA.Inbox("inbox").Answer("slack", "m1", time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := dbA.InboxDepth(); err != nil || n != 2 {
		t.Errorf("inbox depth after an answer = %d, %v; want 2", n, err)
	}
	if err := a.Release("slack:C1"); err != nil {
		t.Fatal(err)
	}
	if held, err := b.HeldElsewhere("slack:C1"); err != nil || held {
		t.Fatalf("b sees a released claim held: %v, %v", held, err)
	}
	select {
	case key := <-b.Wake():
		if key != "slack:C1" {
			t.Errorf("b woken for %q", key)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b did not hear of the release")
	}
	if ok, over, err := b.Claim("slack:C1"); err != nil || !ok || over {
		t.Fatalf("b's claim after the release: %v %v %v", ok, over, err)
	}
}

// A process that dies lets go of its claims with its connection: another
// takes the conversation over, and knows it was a takeover; the dead one,
// if it lives on, hears that it lost them.
func TestPostgresDeadProcessesClaimsAreTakenOver(t *testing.T) {
	dsn := pgtest.DSN(t)
	dbA, a := join(t, dsn, "a")
	dbB, b := join(t, dsn, "b")
	accept(t, dbA, "inbox", "slack:C1", "m1")
	if ok, _, err := a.Claim("slack:C1"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if keys, _ := b.Claimable([]string{"slack"}, 0, 10); len(keys) != 0 {
		t.Fatalf("claimable while a lives = %v", keys)
	}
	lost := a.Lost()
	kill(t, dbB, a)
	select {
	case <-lost:
	case <-time.After(30 * time.Second):
		t.Fatal("a never noticed it lost its connection")
	}
	var keys []string
	var err error
	waitUntil(t, "the conversation claimable", func() bool {
		keys, err = b.Claimable([]string{"slack"}, 0, 10)
		return err != nil || len(keys) > 0
	})
	if err != nil || len(keys) != 1 {
		t.Fatalf("claimable after a died = %v, %v", keys, err)
	}
	if ok, over, err := b.Claim("slack:C1"); err != nil || !ok || !over {
		t.Fatalf("b's claim of a dead process's conversation: ok %v, takeover %v, %v", ok, over, err)
	}
	// a is live again on a new connection, and does not hold C1.
	if ok, _, err := a.Claim("slack:C1"); err != nil || ok {
		t.Fatalf("a claimed what b took over: %v %v", ok, err)
	}
	procs, err := dbB.Processes()
	if err != nil || len(procs) != 2 {
		t.Fatalf("processes after a came back = %+v, %v", procs, err)
	}
}

// A lease raises its epoch at every taking; a write fenced by an older
// epoch is refused.
func TestPostgresLeasesFenceByEpoch(t *testing.T) {
	dsn := pgtest.DSN(t)
	dbA, a := join(t, dsn, "a")
	dbB, b := join(t, dsn, "b")
	e1, ok, _, err := a.Lease("dream:")
	if err != nil || !ok || e1 < 1 {
		t.Fatalf("a's lease: %d %v %v", e1, ok, err)
	}
	if _, ok, _, err := b.Lease("dream:"); err != nil || ok {
		t.Fatalf("b leased what a holds: %v %v", ok, err)
	}
	if err := dbA.Fenced("dream:", e1, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a's write under its lease: %v", err)
	}
	kill(t, dbB, a)
	var e2 int64
	var over bool
	// The server ends a's connection and lets its locks go meanwhile.
	waitUntil(t, "b leases what a held", func() bool {
		e2, ok, over, err = b.Lease("dream:")
		return err != nil || ok
	})
	if err != nil || !over || e2 <= e1 {
		t.Fatalf("b's lease after a died: epoch %d (a's %d), takeover %v, %v", e2, e1, over, err)
	}
	if err := dbA.Fenced("dream:", e1, func(context.Context) error { return nil }); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a's write under its lost lease: %v, want ErrLeaseLost", err)
	}
	// The Dream ledger's record: written under the current epoch only.
	if err := dbA.DreamLedger().PutRecordFenced([]byte(`{"a":1}`), store.Fence{Lease: "dream:", Epoch: e1}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a's ledger write under its lost lease: %v, want ErrLeaseLost", err)
	}
	if err := dbB.DreamLedger().PutRecordFenced([]byte(`{"b":1}`), store.Fence{Lease: "dream:", Epoch: e2}); err != nil {
		t.Fatalf("b's ledger write under its lease: %v", err)
	}
	// And in the memory repository's transaction, where a step's commit
	// and its ledger step are written together.
	inRepo := func(db *postgres.DB, epoch int64, rec string) error {
		return db.Repository().Write(func(tx gitstore.DBTx) error {
			if err := tx.(store.FencedTx).CheckFence(store.Fence{Lease: "dream:", Epoch: epoch}); err != nil {
				return err
			}
			return tx.(store.LedgerTx).PutRecord([]byte(rec))
		})
	}
	if err := inRepo(dbA, e1, `{"a":2}`); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a's step under its lost lease: %v, want ErrLeaseLost", err)
	}
	if err := inRepo(dbB, e2, `{"b":1}`); err != nil {
		t.Fatalf("b's step under its lease: %v", err)
	}
	if rec, _, err := dbA.DreamLedger().Record(); err != nil || string(rec) != `{"b":1}` {
		t.Fatalf("the record is %s (%v), want b's", rec, err)
	}
	if err := b.CheckFence("dream:", e2); err != nil {
		t.Fatalf("b's fence: %v", err)
	}
	if err := b.Unlease("dream:"); err != nil {
		t.Fatal(err)
	}
	if err := dbB.Fenced("dream:", e2, func(context.Context) error { return nil }); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a write under a lease let go: %v, want ErrLeaseLost", err)
	}
}

// waitUntil polls cond until it holds: what it waits for happens in the
// database server, which says nothing when it does.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("waiting for %s: timed out", what)
		case <-tick.C:
		}
	}
}

// A conversation's waiting messages come in the order they were sent (the
// platform's time), whichever process accepted them first: Slack may
// hand a conversation's next message to another process's connection
// before the first process has recorded the one before.
func TestPostgresWaitingInSentOrder(t *testing.T) {
	dsn := pgtest.DSN(t)
	db, a := join(t, dsn, "a")
	sent := time.Now()
	for _, m := range []struct {
		id string
		at time.Time
	}{{"m2", sent.Add(time.Second)}, {"m1", sent}, {"m3", sent.Add(2 * time.Second)}} {
		if _, err := db.Inbox("inbox").Accept(store.InboxMessage{Channel: "slack", MessageID: m.id, Conversation: "slack:C1", Origin: []byte("{}"), Text: m.id, Accepted: m.at}); err != nil {
			t.Fatal(err)
		}
	}
	waiting, err := a.Waiting("slack:C1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range waiting {
		got = append(got, m.MessageID)
	}
	if len(got) != 3 || got[0] != "m1" || got[1] != "m2" || got[2] != "m3" {
		t.Fatalf("waiting %v, want m1 m2 m3", got)
	}
}

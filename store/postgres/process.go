package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dreamgate/dreamgate/internal/backoff"
	"github.com/dreamgate/dreamgate/store"
)

// A process's membership of the database is one connection of its own,
// apart from the pool: it holds the process's advisory lock (the process
// is live while it is held) and the advisory locks of every claim and
// lease the process holds, so all of them end together when the process
// dies or loses the database — PostgreSQL releases a session's advisory
// locks when its connection closes, the queue pattern River and que use.
// The server notices a silent peer within the lease (TCP keepalives set
// on the connection); the process pings its connection as often and
// gives up everything it held (Lost) when a ping fails. Notifications
// (LISTEN) come on a second connection of its own.

// DefaultLease bounds how long a dead or cut-off process's claims and
// leases outlive it.
const DefaultLease = 15 * time.Second

// ProcessInfo names a process for the others.
type ProcessInfo struct {
	Host    string
	PID     int
	Version string
	// Lease is DefaultLease when zero.
	Lease time.Duration
}

// Process is this process's membership of the database: its claims
// (store.Claims) and leases (store.Leases).
type Process struct {
	db    *DB
	info  ProcessInfo
	id    int64
	key1  int32 // the advisory lock class of this schema's processes
	wake  chan string
	life  context.Context
	stop  context.CancelFunc
	loops sync.WaitGroup

	// listening is closed once the listener first listens (heard).
	listening chan struct{}
	heard     sync.Once

	mu   sync.Mutex // the connection, one statement at a time
	conn *pgx.Conn  // nil once lost, until the next call dials again
	lost chan struct{}
	// held are the claims and leases taken on conn, by lock name.
	held map[string]time.Time
}

var (
	_ store.Claims = (*Process)(nil)
	_ store.Leases = (*Process)(nil)
)

// Join makes this process a member of the database: it records it and
// takes its advisory lock on a connection of its own.
func (db *DB) Join(ctx context.Context, info ProcessInfo) (*Process, error) {
	if info.Lease <= 0 {
		info.Lease = DefaultLease
	}
	p := &Process{db: db, info: info, wake: make(chan string, 64), lost: make(chan struct{}), held: map[string]time.Time{}}
	conn, err := p.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("join the database's processes: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT hashtext('dreamgate process ' || current_schema()) & 2147483647`).Scan(&p.key1)
	if err == nil {
		err = conn.QueryRow(ctx, `INSERT INTO processes (host, pid, version) VALUES ($1, $2, $3) RETURNING id`,
			info.Host, info.PID, info.Version).Scan(&p.id)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2::integer)`, p.key1, p.id)
	}
	if err == nil {
		// pg_stat_activity names the process's connections.
		_, err = conn.Exec(ctx, `SELECT set_config('application_name', $1, false)`, p.appName())
	}
	if err == nil {
		// Processes dead for a day are forgotten.
		_, err = conn.Exec(ctx, `DELETE FROM processes WHERE started_at < now() - interval '1 day' AND id NOT IN (`+liveProcesses+`)`, p.key1)
	}
	if err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("join the database's processes: %w", err)
	}
	p.conn = conn
	p.life, p.stop = context.WithCancel(db.life)
	p.listening = make(chan struct{})
	p.loops.Go(p.heartbeat)
	p.loops.Go(p.listen)
	// What another process tells once Join returned is heard: a release
	// told before the listener listened was missed. A listener that
	// cannot start in time costs hints only; the sweeps find the work.
	select {
	case <-p.listening:
	case <-ctx.Done():
	case <-time.After(db.timeout):
	}
	db.log.Info("joined the database's processes", "process", p.id)
	return p, nil
}

// liveProcesses selects the ids of the processes whose advisory lock is
// held ($1: the schema's lock class).
const liveProcesses = `SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted
	AND classid = $1::integer::oid AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

// Logger is the engine's logger.
func (p *Process) Logger() *slog.Logger { return p.db.log }

// ID is this process's number among the database's processes.
func (p *Process) ID() int64 { return p.id }

// LeaseTime is how long a dead process's claims and leases outlive it at
// most.
func (p *Process) LeaseTime() time.Duration { return p.info.Lease }

// dial opens a connection of the process's own, whose peer the server
// gives up on within the lease.
func (p *Process) dial(ctx context.Context) (*pgx.Conn, error) {
	cfg := p.db.pool.Config().ConnConfig.Copy()
	secs := max(int(p.info.Lease/time.Second/3), 1)
	for k, v := range map[string]string{
		"application_name":        p.appName(),
		"tcp_keepalives_idle":     strconv.Itoa(secs),
		"tcp_keepalives_interval": strconv.Itoa(max(secs/2, 1)),
		"tcp_keepalives_count":    "2",
		"tcp_user_timeout":        strconv.Itoa(int(p.info.Lease / time.Millisecond)),
	} {
		cfg.RuntimeParams[k] = v
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// appName is the application_name of the process's connections.
func (p *Process) appName() string {
	if p.id == 0 {
		return "dreamgate process"
	}
	return "dreamgate process " + strconv.FormatInt(p.id, 10)
}

// Close leaves the database: every claim and lease is let go with the
// connection, and the process is no longer listed.
func (p *Process) Close() {
	p.stop()
	p.loops.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.db.timeout)
	defer cancel()
	_, _ = p.conn.Exec(ctx, `DELETE FROM claims WHERE process = $1`, p.id)
	_, _ = p.conn.Exec(ctx, `UPDATE leases SET process = NULL WHERE process = $1`, p.id)
	_, _ = p.conn.Exec(ctx, `DELETE FROM processes WHERE id = $1`, p.id)
	_ = p.conn.Close(ctx)
	p.conn = nil
}

// Lost implements store.Claims.
func (p *Process) Lost() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Wake implements store.Claims.
func (p *Process) Wake() <-chan string { return p.wake }

// errLost is returned by calls on a connection that was lost meanwhile.
var errLost = errors.New("the connection holding this process's claims was lost; they may be another's now")

// exec runs fn on the connection, dialling a new one after a loss (the
// process is live again under the same id; what it held is not).
func (p *Process) exec(fn func(ctx context.Context, conn *pgx.Conn) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := context.WithTimeout(p.life, p.db.timeout)
	defer cancel()
	if p.conn == nil {
		if err := p.rejoinLocked(ctx); err != nil {
			return err
		}
	}
	err := fn(ctx, p.conn)
	if err != nil && p.conn.IsClosed() {
		p.loseLocked(err)
	}
	return err
}

// rejoinLocked dials again after a loss and takes the process's lock.
func (p *Process) rejoinLocked(ctx context.Context) error {
	conn, err := p.dial(ctx)
	if err != nil {
		return fmt.Errorf("reconnect to hold claims: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2::integer)`, p.key1, p.id); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("reconnect to hold claims: %w", err)
	}
	// What the lost connection held is void: its rows too.
	if _, err := conn.Exec(ctx, `DELETE FROM claims WHERE process = $1`, p.id); err != nil {
		_ = conn.Close(ctx)
		return fmt.Errorf("reconnect to hold claims: %w", err)
	}
	p.conn = conn
	p.db.log.Info("process reconnected to the database", "process", p.id)
	return nil
}

// loseLocked drops the connection and everything held on it, and tells
// whoever watches Lost.
func (p *Process) loseLocked(err error) {
	if p.conn == nil {
		return
	}
	_ = p.conn.Close(context.Background())
	p.conn = nil
	clear(p.held)
	close(p.lost)
	p.lost = make(chan struct{})
	p.db.log.Warn("lost the connection that holds this process's claims and leases; letting them go", "process", p.id, "err", err)
}

// heartbeat pings the connection every third of the lease; a ping that
// fails or does not answer within that loses it.
func (p *Process) heartbeat() {
	every := max(p.info.Lease/3, 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.life.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		if p.conn != nil {
			ctx, cancel := context.WithTimeout(p.life, every)
			_, err := p.conn.Exec(ctx, `SELECT 1`)
			cancel()
			if err != nil && p.life.Err() == nil {
				p.loseLocked(err)
			}
		}
		p.mu.Unlock()
	}
}

// notifyChannel is the LISTEN channel of every schema; a payload is the
// schema, a tab and a conversation key ("" for any).
const notifyChannel = "dreamgate_work"

// Notify implements store.Claims.
func (p *Process) Notify(key string) error {
	ctx, cancel := p.db.call()
	defer cancel()
	if _, err := p.db.pool.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', current_schema() || E'\t' || $1)`, key); err != nil {
		return fmt.Errorf("tell the other processes: %w", err)
	}
	return nil
}

// listen passes the notifications of this schema to Wake, on a
// connection of its own, dialled again with backoff when it fails; a
// notification missed meanwhile is a hint lost, not work: the gateway
// looks for work on a timer too.
func (p *Process) listen() {
	for attempt := 0; p.life.Err() == nil; attempt++ {
		err := p.listenOnce()
		if p.life.Err() != nil {
			return
		}
		p.db.log.Warn("listening for other processes failed; listening again", "err", err)
		if backoff.Sleep(p.life, backoff.Jitter(backoff.Delay(attempt, 100*time.Millisecond, p.info.Lease))) != nil {
			return
		}
	}
}

func (p *Process) listenOnce() error {
	conn, err := p.dial(p.life)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(p.life, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := conn.Exec(p.life, `LISTEN `+notifyChannel); err != nil {
		return err
	}
	p.heard.Do(func() { close(p.listening) })
	for {
		n, err := conn.WaitForNotification(p.life)
		if err != nil {
			return err
		}
		s, key, ok := strings.Cut(n.Payload, "\t")
		if !ok || s != schema || n.PID == conn.PgConn().PID() {
			continue
		}
		select {
		case p.wake <- key:
		default: // a wake is already waiting to be read
		}
	}
}

package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The scenarios' view of the database's inbox: a person says a
// conversation's next message once the assistant has the one before (a
// gateway recorded it), and a scenario that waits in vain for answers
// says where the unanswered messages stand.

// inboxPool is the scenario's small pool on its schema, opened once.
func (s *scenario) inboxPool(ctx context.Context) (*pgxpool.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool != nil {
		return s.pool, nil
	}
	cfg, err := pgxpool.ParseConfig(s.dsn)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 4
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open the scenario's database: %w", err)
	}
	s.pool = p
	return p, nil
}

// appName is what the database calls a scenario gateway's pooled
// connections (those of its process's own are "dreamgate process N"):
// the scenario's schema names it apart from the gateways of the same name
// in the scenarios running beside it on the same server.
func (s *scenario) appName(gateway string) string {
	schema := ""
	if u, err := url.Parse(s.dsn); err == nil {
		schema = u.Query().Get("search_path")
	}
	return "scenario " + schema + " gateway " + gateway
}

// appNamed is the scenario's dsn with gateway's application_name.
func (s *scenario) appNamed(ts scriptT, gateway string) string {
	u, err := url.Parse(s.dsn)
	ts.Check(err)
	q := u.Query()
	q.Set("application_name", s.appName(gateway))
	u.RawQuery = q.Encode()
	return u.String()
}

// waitConnectionsGone waits until the server let go of a stopped
// gateway's connections — its pooled ones, and its process's (the live
// processes are no more than the gateways running) — and so of the
// advisory locks they held (a Dream's, a claim's): the server notices a
// killed client's closed socket a moment after the kill.
func (s *scenario) waitConnectionsGone(ctx context.Context, gateway string) error {
	pool, err := s.inboxPool(ctx)
	if err != nil {
		return err
	}
	t := time.NewTicker(recordedPoll)
	defer t.Stop()
	for {
		s.mu.Lock()
		running := 0
		for _, g := range s.gateways {
			select {
			case <-g.exited:
			default:
				running++
			}
		}
		s.mu.Unlock()
		var pooled, live int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_stat_activity WHERE application_name = $1),
			(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted
				AND classid = (hashtext('dreamgate process ' || current_schema()) & 2147483647)::integer::oid
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`, s.appName(gateway)).Scan(&pooled, &live)
		if err != nil {
			return fmt.Errorf("look for gateway %s's connections: %w", gateway, err)
		}
		if pooled == 0 && live <= running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gateway %s's connections outlived it (%d pooled, %d live processes for %d gateways): %w", gateway, pooled, live, running, ctx.Err())
		case <-t.C:
		}
	}
}

// recordedPoll is how often waitRecorded looks again.
const recordedPoll = 20 * time.Millisecond

// waitRecorded waits until a gateway recorded the Slack message ts in the
// database's inbox. Slack's ack alone does not say so: a gateway acks a
// message it has not recorded yet once Slack's deadline nears, and a
// person's next message may then reach another gateway first.
func (s *scenario) waitRecorded(ctx context.Context, ts string) error {
	pool, err := s.inboxPool(ctx)
	if err != nil {
		return err
	}
	t := time.NewTicker(recordedPoll)
	defer t.Stop()
	for {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE channel = 'slack' AND message_id = $1`, ts).Scan(&n)
		if err != nil {
			return fmt.Errorf("look for message %s in the inbox: %w", ts, err)
		}
		if n > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("message %s acknowledged but never recorded in the inbox: %w", ts, ctx.Err())
		case <-t.C:
		}
	}
}

// unansweredReport says, for the messages said and not answered, what
// the inbox holds of them and who claims their conversations.
func (s *scenario) unansweredReport(answered map[string]bool) string {
	s.talk.mu.Lock()
	var missing []talkMessage
	var texts []string
	for text, m := range s.talk.sent {
		if !answered[text] {
			missing = append(missing, m)
			texts = append(texts, text)
		}
	}
	s.talk.mu.Unlock()
	if len(missing) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := s.inboxPool(ctx)
	if err != nil {
		return "\nunanswered: " + strings.Join(texts, ", ") + ": " + err.Error()
	}
	var b strings.Builder
	for i, m := range missing {
		var conv, box string
		var answered *time.Time
		var holder *int64
		err := pool.QueryRow(ctx, `SELECT m.conversation, m.box, m.answered_at, c.process FROM inbox_messages m
			LEFT JOIN claims c ON c.conversation = m.conversation WHERE m.channel = 'slack' AND m.message_id = $1`, m.ts).Scan(&conv, &box, &answered, &holder)
		fmt.Fprintf(&b, "\nunanswered %s (ts %s): ", texts[i], m.ts)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "not in the inbox (%v)", err)
		default:
			fmt.Fprintf(&b, "conversation %s, box %s, answered at %v, claimed by process %v", conv, box, deref(answered), deref(holder))
		}
	}
	return b.String()
}

func deref[T any](p *T) any {
	if p == nil {
		return "-"
	}
	return *p
}

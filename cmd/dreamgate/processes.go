package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/channels/discord"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// Many processes, one assistant. A gateway on PostgreSQL (store.postgres)
// joins the database's processes: it shares the conversations with every
// other gateway on that database (a conversation answered by the one
// process holding its claim, taken over when that process dies), and
// /healthz and `dreamgate status` list the live processes with what each
// holds. On the files, the gateway is the only process and none of this
// runs.

// defaultLeaseSeconds is store.leaseSeconds' default: how long a dead
// process's conversations and leases stay its own at most.
const defaultLeaseSeconds = 15

// lease is the configured lease.
func (c Config) lease() time.Duration {
	if c.Store.LeaseSeconds <= 0 {
		return defaultLeaseSeconds * time.Second
	}
	return time.Duration(c.Store.LeaseSeconds) * time.Second
}

// join makes this gateway one of the database's processes, sharing its
// conversations (and its Discord shards); leave lets everything it holds
// go. Without a database it does nothing.
func (p *gatewayProcess) join() error {
	a := p.a
	if a.db == nil {
		return nil
	}
	host, _ := os.Hostname()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	proc, err := a.db.Join(ctx, postgres.ProcessInfo{Host: host, PID: os.Getpid(), Version: readVersion().Version, Lease: p.cfg.lease()})
	if err != nil {
		return fmt.Errorf("share the conversations with the database's other processes (store.postgres): %w", err)
	}
	p.proc = proc
	p.g.ShareConversations(proc, gateway.ShareOptions{
		MaxConversations: p.cfg.Gateway.MaxConcurrentTurns,
		Sweep:            p.cfg.lease() / 3,
	})
	if p.dreamer != nil {
		// The schedule fires in every process; each scope's lease
		// decides which one dreams it.
		p.dreamer.ShareScopes(proc)
	}
	p.health.cluster.Store(&clusterSource{db: a.db, proc: proc, g: p.g})
	return nil
}

// leave lets go of everything this process holds on the database.
func (p *gatewayProcess) leave() {
	if p.proc != nil {
		p.proc.Close()
	}
}

// shardLeases are the database's leases of the bot's Discord shards, for a
// sharded bot on PostgreSQL; nil otherwise.
func (p *gatewayProcess) shardLeases() discord.ShardLeases {
	if p.proc == nil || p.cfg.Channels.Discord.ShardCount == 0 {
		return nil
	}
	return shardLeases{p.proc}
}

// shardLeases hold Discord shards by the database's leases, one named
// "discord shard N" each.
type shardLeases struct{ p *postgres.Process }

func shardLeaseName(n int) string { return fmt.Sprintf("discord shard %d", n) }

func (s shardLeases) Lease(shard int) (bool, error) {
	_, ok, takenOver, err := s.p.Lease(shardLeaseName(shard))
	if takenOver {
		s.p.Logger().Info("took over a Discord shard a process that died held", "shard", shard)
	}
	return ok, err
}

func (s shardLeases) Release(shard int) error { return s.p.Unlease(shardLeaseName(shard)) }

func (s shardLeases) Lost() <-chan struct{} { return s.p.Lost() }

// clusterSource is what /healthz reads of the database's processes.
type clusterSource struct {
	db   *postgres.DB
	proc *postgres.Process
	g    *gateway.Gateway
}

// clusterHealth is /healthz's "processes": the database's live processes
// and what each holds, this one's id, and how the sharing goes here.
type clusterHealth struct {
	This       int64           `json:"this"`
	Live       []processHealth `json:"live"`
	Takeovers  int             `json:"takeovers"`
	InboxDepth int             `json:"inboxDepth"`
	Error      string          `json:"error,omitempty"`
}

// processHealth is one live process.
type processHealth struct {
	ID      int64        `json:"id"`
	Host    string       `json:"host"`
	PID     int          `json:"pid"`
	Version string       `json:"version"`
	Started time.Time    `json:"started"`
	Claims  []heldHealth `json:"claims"`
	Leases  []heldHealth `json:"leases"`
}

// heldHealth is one claim (a conversation) or lease, and its age.
type heldHealth struct {
	Name       string    `json:"name"`
	Since      time.Time `json:"since"`
	AgeSeconds float64   `json:"ageSeconds"`
	Epoch      int64     `json:"epoch,omitempty"`
}

func (c *clusterSource) report(now time.Time) *clusterHealth {
	out := &clusterHealth{This: c.proc.ID(), Live: []processHealth{}}
	if sh, ok := c.g.Shared(); ok {
		out.Takeovers = sh.Takeovers
	}
	procs, err := c.db.Processes()
	if err == nil {
		out.InboxDepth, err = c.db.InboxDepth()
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	for _, p := range procs {
		out.Live = append(out.Live, processHealth{ID: p.ID, Host: p.Host, PID: p.PID, Version: p.Version, Started: p.Started,
			Claims: heldList(p.Claims, now), Leases: heldList(p.Leases, now)})
	}
	return out
}

func heldList(hs []store.Held, now time.Time) []heldHealth {
	out := make([]heldHealth, 0, len(hs))
	for _, h := range hs {
		out = append(out, heldHealth{Name: h.Name, Since: h.Since, AgeSeconds: now.Sub(h.Since).Round(time.Millisecond).Seconds(), Epoch: h.Epoch})
	}
	return out
}

// statusProcesses is `dreamgate status`'s Processes section: each live
// process of the database with what it holds, the oldest first.
func statusProcesses(w io.Writer, op operatorParts) {
	if op.a == nil || op.a.db == nil {
		return
	}
	procs, err := op.a.db.Processes()
	if err != nil {
		fmt.Fprintf(w, "Processes: cannot be listed (%v)\n", err)
		return
	}
	depth, _ := op.a.db.InboxDepth()
	if len(procs) == 0 {
		fmt.Fprintf(w, "Processes: no gateway is running on the database; %d message(s) wait\n", depth)
		return
	}
	fmt.Fprintf(w, "Processes: %d live on the database; %d message(s) wait\n", len(procs), depth)
	now := time.Now()
	for _, p := range procs {
		fmt.Fprintf(w, "  #%d %s pid %d (%s), up %s: %s\n", p.ID, p.Host, p.PID, p.Version,
			now.Sub(p.Started).Round(time.Second), heldLine(p, now))
	}
}

// heldLine says what a process holds: its leases by name, and its claims
// by count with the oldest.
func heldLine(p store.ProcessStatus, now time.Time) string {
	var parts []string
	for _, l := range p.Leases {
		parts = append(parts, fmt.Sprintf("lease %s (epoch %d, %s)", l.Name, l.Epoch, now.Sub(l.Since).Round(time.Second)))
	}
	sort.Slice(p.Claims, func(i, j int) bool { return p.Claims[i].Since.Before(p.Claims[j].Since) })
	switch n := len(p.Claims); n {
	case 0:
		parts = append(parts, "no conversation")
	case 1:
		parts = append(parts, fmt.Sprintf("conversation %s (%s)", p.Claims[0].Name, now.Sub(p.Claims[0].Since).Round(time.Second)))
	default:
		parts = append(parts, fmt.Sprintf("%d conversations, the oldest %s (%s)", n, p.Claims[0].Name, now.Sub(p.Claims[0].Since).Round(time.Second)))
	}
	return strings.Join(parts, "; ")
}

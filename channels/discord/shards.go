package discord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dreamgate/dreamgate/channels"
)

// Shards shared by processes. Discord gives each shard's events to one
// gateway session; several processes sharing a bot on one store each
// connect as a shard whose lease they hold (ShardLeases), so a shard has
// exactly one process. A process whose shard is held by another — or,
// with AnyShard, that finds every shard held — stands by (its health says
// so) and takes a shard over when its holder dies and the lease is free;
// a process that loses its lease (its store connection ended) closes its
// session and stands by again. The slash commands are declared by the
// holder of shard 0, and only when Discord's set differs, so a takeover
// declares nothing twice.

// AnyShard, as Config.ShardID with ShardLeases, connects as whichever
// shard is free.
const AnyShard = -1

// ShardLeases hold a bot's shards across processes (the store's leases).
type ShardLeases interface {
	// Lease takes shard for this process without waiting; ok is false
	// when another process holds it.
	Lease(shard int) (ok bool, err error)
	// Release lets shard go.
	Release(shard int) error
	// Lost is closed when this process's leases ended: its shard may be
	// another's now.
	Lost() <-chan struct{}
}

// errShardLost ends serving a shard whose lease this process lost.
var errShardLost = errors.New("this process lost its shard's lease")

// defaultStandbyPoll is how often a standby process tries the leases.
const defaultStandbyPoll = 5 * time.Second

// holdShard takes the lease of this process's shard (with AnyShard, of
// the first free one of count) and sets the session to it, standing by
// until one is free. Without ShardLeases it holds the configured shard at
// once. lost is closed when the lease ends; ok is false when ctx ended.
func (a *Adapter) holdShard(ctx context.Context, count int) (lost <-chan struct{}, ok bool) {
	if a.shardLeases == nil || count <= 1 {
		return nil, true
	}
	every := a.standbyPoll
	if every <= 0 {
		every = defaultStandbyPoll
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		lost := a.shardLeases.Lost()
		if shard, ok := a.tryShards(count); ok {
			a.shardID = shard
			a.session.ShardID, a.session.ShardCount = shard, count
			a.log.Info("discord: holding the shard's lease", "shard", shard, "of", count)
			return lost, true
		}
		a.health.Set(channels.StateStandby, a.standbyDetail(count))
		select {
		case <-ctx.Done():
			return nil, false
		case <-t.C:
		}
	}
}

// tryShards tries the configured shard, or with AnyShard each in turn.
func (a *Adapter) tryShards(count int) (int, bool) {
	want := []int{a.wantShard}
	if a.wantShard == AnyShard {
		want = want[:0]
		for i := range count {
			want = append(want, i)
		}
	}
	for _, shard := range want {
		ok, err := a.shardLeases.Lease(shard)
		if err != nil {
			a.log.Warn("discord: cannot take a shard's lease; trying again", "shard", shard, "err", err)
			continue
		}
		if ok {
			return shard, true
		}
	}
	return 0, false
}

func (a *Adapter) standbyDetail(count int) string {
	if a.wantShard == AnyShard {
		return fmt.Sprintf("standing by: all %d shards are held by other processes", count)
	}
	return fmt.Sprintf("standing by: shard %d is held by another process", a.wantShard)
}

// releaseShard lets the shard's lease go as the adapter stops.
func (a *Adapter) releaseShard() {
	if a.shardLeases == nil || a.session.ShardCount <= 1 {
		return
	}
	if err := a.shardLeases.Release(a.shardID); err != nil {
		a.log.Warn("discord: cannot let the shard's lease go; it ends with this process", "shard", a.shardID, "err", err)
	}
}

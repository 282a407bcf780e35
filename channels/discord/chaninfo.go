package discord

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/backoff"
)

// chanInfo is what the adapter needs to know about a guild channel for its
// audience.
type chanInfo struct {
	thread   bool
	parentID string // a thread's channel; a category is no parent that matters here
	// privateThread is a private thread: private to its members.
	privateThread bool
	// overwrites are a channel's permission overwrites, as the channel
	// carries them (a channel synced with its category carries the
	// category's); a thread has none of its own: its channel's count.
	overwrites []overwrite
	// unknown marks a channel Discord would not describe, for a while.
	unknown bool
}

// chanTTL is how long what Discord said of a channel stands: the
// gateway's CHANNEL_UPDATE refreshes it at once, and the TTL catches what
// the gateway did not say (an update missed while disconnected).
const chanTTL = 5 * time.Minute

// chanFailTTL is how long a failed lookup stands before Discord is asked
// again.
const chanFailTTL = time.Minute

// channelInfo says what a guild channel is (a thread and its parent, its
// overwrites): from the gateway's announcements, else from GET
// /channels/{id}, kept chanTTL. ok is false when Discord could not say
// (that is kept chanFailTTL): the caller treats it as a plain channel,
// private to itself.
func (a *Adapter) channelInfo(ctx context.Context, id string) (info chanInfo, ok bool) {
	if info, ok := a.chans.get(id); ok {
		return info, !info.unknown
	}
	var c *discordgo.Channel
	err := a.lookup(ctx, func(ctx context.Context) (err error) {
		c, err = a.session.Channel(id, discordgo.WithContext(ctx))
		return err
	})
	if err == nil && c != nil {
		return a.chans.learn(c), true
	}
	if ctx.Err() == nil {
		a.log.Warn("discord: channel lookup failed; treating it as a plain channel and keeping its memory apart as a private one", "chat", id, "err", err)
		a.chans.c.Put(id, chanInfo{unknown: true}, chanFailTTL)
	}
	return chanInfo{}, false
}

// lookup runs one REST read, retried (lookupTries in all) while it fails
// for a reason that may pass.
func (a *Adapter) lookup(ctx context.Context, call func(context.Context) error) error {
	var err error
	for try := 1; try <= lookupTries; try++ {
		if err = call(ctx); err == nil {
			return nil
		}
		if !transient(err) || try == lookupTries || backoff.Sleep(ctx, backoff.Jitter(a.tune.sendBackoff*time.Duration(try))) != nil {
			break
		}
	}
	return err
}

// channelCache maps channel ids to chanInfo, bounded, each entry kept
// chanTTL.
type channelCache struct {
	c *channels.TTLCache[chanInfo]
}

func newChannelCache(max int, now func() time.Time) *channelCache {
	return &channelCache{c: channels.NewTTLCache[chanInfo](max, now)}
}

func (c *channelCache) get(id string) (chanInfo, bool) { return c.c.Get(id) }

// learn keeps what ch says.
func (c *channelCache) learn(ch *discordgo.Channel) chanInfo {
	if ch == nil || ch.ID == "" {
		return chanInfo{}
	}
	info := chanInfo{thread: ch.IsThread()}
	if info.thread {
		info.parentID = ch.ParentID
		info.privateThread = ch.Type == discordgo.ChannelTypeGuildPrivateThread
	} else {
		info.overwrites = overwritesOf(ch)
	}
	c.c.Put(ch.ID, info, chanTTL)
	return info
}

func (c *channelCache) forget(ch *discordgo.Channel) {
	if ch != nil {
		c.c.Delete(ch.ID)
	}
}

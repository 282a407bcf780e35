package slack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// What Slack said of a channel, kept so that a busy channel is not looked
// up at every message, and forgotten the moment Slack announces a change
// (changes.go). How old a description may be depends on what the event
// says of the channel itself:
//
//   - a message event names its kind (channel_type) and whether it is
//     shared (is_ext_shared_channel): a description that agrees with both
//     stands convTTL, one that disagrees is looked up again before the
//     turn;
//   - an app_mention or a slash command names neither: it is answered
//     with a description at most mentionFresh old;
//   - a failed lookup stands convFailTTL, as a shared channel's: when
//     Slack cannot say, the narrower audience wins.

const (
	convTTL      = 5 * time.Minute
	mentionFresh = 30 * time.Second
	convFailTTL  = 30 * time.Second
	convCap      = 10000
	convTimeout  = 3 * time.Second
	// membersPage is how many members one conversations.members call
	// asks for; maxMemberPages bounds a channel's listing (a larger
	// channel counts as having outsiders).
	membersPage    = 1000
	maxMemberPages = 50
)

// convKind is what conversations.info said of a channel.
type convKind int

const (
	convUnknown convKind = iota // Slack could not say
	convIM
	convPrivate
	convPublic
	convShared
)

// channelInfo is what Slack said of a channel: its kind and whether one of
// its members is a guest or a person of another organisation (or could not
// be told from a member), and when.
type channelInfo struct {
	kind      convKind
	person    string // a DM's (convIM): the person the bot's DM is with
	outsiders bool
	at        time.Time
}

// agrees reports whether the kind a message event names (channel_type)
// and its shared flag fit the description: a shared channel is a
// "channel" or a "group" too.
func (i channelInfo) agrees(channelType string, extShared bool) bool {
	if extShared && i.kind != convShared {
		return false
	}
	switch channelType {
	case "channel":
		return i.kind == convPublic || i.kind == convShared
	case "group", "mpim":
		return i.kind == convPrivate || i.kind == convShared
	case "im":
		return i.kind == convIM
	}
	return false
}

// convCache holds channel descriptions. A lookup started before a change
// was announced does not put its (older) answer back: drop raises the
// channel's epoch, and put keeps only answers read after it.
type convCache struct {
	mu    sync.Mutex
	now   func() time.Time
	m     map[string]convEntry
	epoch uint64 // raised by every drop
	floor uint64 // answers read before it are not kept (dropAll, eviction)
}

type convEntry struct {
	info    channelInfo
	has     bool
	dropped uint64 // the epoch of the channel's last drop
}

func newConvCache(now func() time.Time) *convCache {
	return &convCache{now: now, m: map[string]convEntry{}}
}

// get returns channel's description, if any, and the epoch to put a new
// one with.
func (c *convCache) get(channel string) (channelInfo, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[channel]
	return e.info, e.has, c.epoch
}

// put keeps info for channel, unless the channel was dropped since seen
// (get's epoch).
func (c *convCache) put(channel string, seen uint64, info channelInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seen < c.floor || c.m[channel].dropped > seen {
		return
	}
	if _, ok := c.m[channel]; !ok && len(c.m) >= convCap {
		c.epoch++
		c.floor = c.epoch
		clear(c.m)
		return
	}
	c.m[channel] = convEntry{info: info, has: true, dropped: c.m[channel].dropped}
}

// drop forgets channel's description: Slack announced a change.
func (c *convCache) drop(channel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if _, ok := c.m[channel]; !ok && len(c.m) >= convCap {
		c.floor = c.epoch
		clear(c.m)
		return
	}
	c.m[channel] = convEntry{dropped: c.epoch}
}

// dropAll forgets every description: announcements may have been missed
// (a new connection).
func (c *convCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.floor = c.epoch
	clear(c.m)
}

// fresh reports whether info may answer an event that says channelType of
// its channel ("" when it says none). The channel is not shared, as far
// as the event says: a shared one's audience needs no description.
func (a *Adapter) fresh(info channelInfo, channelType string) bool {
	age := a.now().Sub(info.at)
	switch {
	case info.kind == convUnknown:
		return age < convFailTTL
	case channelType == "":
		return age < mentionFresh
	case !info.agrees(channelType, false):
		return false
	}
	return age < convTTL
}

// channelInfo describes channel of the workspace team for an event that
// said channelType of it ("" when it said none), through the cache.
func (r *runner) channelInfo(ctx context.Context, team, channel, channelType string) channelInfo {
	c := r.a.convs
	info, has, seen := c.get(channel)
	if has && r.a.fresh(info, channelType) {
		return info
	}
	info = r.describe(ctx, team, channel)
	if ctx.Err() == nil {
		c.put(channel, seen, info)
	}
	return info
}

// describe asks Slack what channel is (conversations.info) and, for a
// public or private channel, whether a member is a guest or of another
// organisation (conversations.members, and who each member is).
func (r *runner) describe(ctx context.Context, team, channel string) channelInfo {
	a := r.a
	kind, person := a.conversationKind(ctx, channel)
	info := channelInfo{kind: kind, person: person, at: a.now()}
	if info.kind != convPublic && info.kind != convPrivate {
		return info
	}
	members, err := a.members(ctx, channel)
	if err != nil {
		if ctx.Err() == nil {
			a.lookupFailed(err, "slack cannot list a channel's members; keeping its memory apart, as a shared channel's", channel)
		}
		info.outsiders = true
		return info
	}
	info.outsiders = a.outsiderAmong(ctx, team, members, r.botUserID)
	return info
}

// conversationKind asks conversations.info what channel is, and for a DM
// whose it is; a failure is convUnknown. Slack describes to the bot only
// the DMs it is in: a DM between two people is channel_not_found.
func (a *Adapter) conversationKind(ctx context.Context, channel string) (convKind, string) {
	callCtx, cancel := context.WithTimeout(ctx, min(convTimeout, a.apiTimeout))
	c, err := a.api.GetConversationInfoContext(callCtx, &slack.GetConversationInfoInput{ChannelID: channel})
	cancel()
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return convUnknown, ""
	case strings.HasPrefix(channel, "D") && slackErrorCode(err) == "channel_not_found":
		a.log.Debug("slack DM the bot is not in (between two people); answered as a conversation of its own", "chat", channel)
		return convUnknown, ""
	default:
		a.lookupFailed(err, "slack cannot tell what a channel is; keeping its memory apart and reading none of the workspace's, as a shared channel's", channel)
		return convUnknown, ""
	}
	kind := conversationKindOf(c)
	if kind != convIM {
		return kind, ""
	}
	return kind, c.User
}

// members lists channel's members (conversations.members), page by page.
func (a *Adapter) members(ctx context.Context, channel string) ([]string, error) {
	var all []string
	cursor := ""
	for range maxMemberPages {
		callCtx, cancel := context.WithTimeout(ctx, min(convTimeout, a.apiTimeout))
		ids, next, err := a.api.GetUsersInConversationContext(callCtx, &slack.GetUsersInConversationParameters{ChannelID: channel, Cursor: cursor, Limit: membersPage})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("conversations.members: %w", err)
		}
		all = append(all, ids...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("conversations.members: more than %d members", maxMemberPages*membersPage)
}

// lookupFailed logs a failed channel lookup: a missing scope once, with
// what to do, anything else each time.
func (a *Adapter) lookupFailed(err error, msg, channel string) {
	if slackErrorCode(err) == "missing_scope" {
		if a.convNoScope.CompareAndSwap(false, true) {
			a.log.Warn("slack app cannot read what its channels are (it needs the channels:read, groups:read, mpim:read and im:read scopes; reinstall it): every channel's memory is kept apart, reading none of the workspace's", "err", err)
		}
		return
	}
	a.log.Warn(msg, "chat", channel, "err", err)
}

// conversationKindOf reads conversations.info's flags. Shared comes first:
// people of another organisation (or workspace) are in a shared private
// channel too.
func conversationKindOf(c *slack.Channel) convKind {
	switch {
	case c.IsExtShared || c.IsOrgShared || c.IsShared || c.IsPendingExtShared || c.IsGlobalShared:
		return convShared
	case c.IsIM:
		return convIM
	case c.IsMpIM || c.IsPrivate || c.IsGroup:
		return convPrivate
	default:
		return convPublic
	}
}

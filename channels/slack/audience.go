package slack

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/dreamgate/dreamgate/audience"
)

// The audience of a conversation: who can read it, from what Slack says of
// it, never from the text. A DM is its person's; a group DM or a private
// channel its members' (Private); a public channel the workspace's (Team);
// a channel shared with another organisation, or with other workspaces of
// an Enterprise Grid, is Shared, and sees none of the workspace's memory.
// The workspace is the one the event came from, so two workspaces never
// meet in one audience.
//
// What a channel is comes from conversations.info (the channels:read,
// groups:read, mpim:read and im:read scopes), kept convTTL because a
// channel can be made private or shared. When Slack cannot say, the
// conversation is Shared: it keeps a memory of its own and reads none of
// the workspace's, since people of another organisation may be in it (a
// private channel would read the team's memory).

const (
	convTTL = 5 * time.Minute
	// convFailTTL is how long a failed lookup's answer stands before
	// Slack is asked again.
	convFailTTL = time.Minute
	convCap     = 10000
	convTimeout = 3 * time.Second
)

// where is what an event or a slash command says about its conversation.
type where struct {
	team        string // the workspace it came from (team_id, else the authorization's)
	channelType string // message events: im, mpim, channel, group; "" when not said
	// external is set when Slack says the channel is shared with another
	// organisation (is_ext_shared_channel) or the sender belongs to
	// another workspace (user_team).
	external bool
}

// eventWhere reads where from an events_api envelope: the team_id, else
// the first authorization's team (raw, the payload slack-go parsed drops
// it), and the shared-channel flag.
func eventWhere(teamID string, extShared bool, req json.RawMessage) where {
	w := where{team: teamID, external: extShared}
	if w.team == "" && len(req) > 0 {
		var env struct {
			Authorizations []struct {
				TeamID string `json:"team_id"`
			} `json:"authorizations"`
		}
		if json.Unmarshal(req, &env) == nil && len(env.Authorizations) > 0 {
			w.team = env.Authorizations[0].TeamID
		}
	}
	return w
}

// convKind is what conversations.info said of a channel.
type convKind int

const (
	convUnknown convKind = iota // Slack could not say
	convIM
	convPrivate
	convPublic
	convShared
)

// audienceOf decides the audience of a conversation in channel, where user
// spoke. ok is false when Slack's ids make no valid audience (never seen:
// they are uppercase letters and digits), and the message is dropped.
func (r *runner) audienceOf(ctx context.Context, w where, channel, user string) (audience.Audience, bool) {
	team := w.team
	if team == "" {
		team = r.teamID
	}
	aud := audience.Audience{Platform: Name, Team: team}
	kind := convUnknown
	switch {
	case w.external:
		kind = convShared
	case w.channelType == "im" || (w.channelType == "" && strings.HasPrefix(channel, "D")):
		kind = convIM
	default:
		kind = r.a.conversationKind(ctx, channel)
	}
	switch kind {
	case convIM:
		aud.Kind, aud.Person = audience.Person, user
	case convShared, convUnknown:
		aud.Kind, aud.Chat = audience.Shared, channel
	case convPublic:
		aud.Kind = audience.Team
	default:
		aud.Kind, aud.Chat = audience.Private, channel
	}
	if err := aud.Validate(); err != nil {
		r.a.log.Warn("slack conversation has no audience; message ignored", "chat", channel, "team", team, "user", user, "err", err)
		return audience.Audience{}, false
	}
	return aud, true
}

// conversationKind asks conversations.info what channel is, through the
// cache. A failure is convUnknown, kept convFailTTL.
func (a *Adapter) conversationKind(ctx context.Context, channel string) convKind {
	if k, ok := a.convs.Get(channel); ok {
		return k
	}
	callCtx, cancel := context.WithTimeout(ctx, min(convTimeout, a.apiTimeout))
	c, err := a.api.GetConversationInfoContext(callCtx, &slack.GetConversationInfoInput{ChannelID: channel})
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return convUnknown // stopping: not Slack's failure, nothing to remember
		case slackErrorCode(err) == "missing_scope":
			if a.convNoScope.CompareAndSwap(false, true) {
				a.log.Warn("slack app cannot read what its channels are (it needs the channels:read, groups:read, mpim:read and im:read scopes; reinstall it): every channel's memory is kept apart, reading none of the workspace's", "err", err)
			}
		default:
			a.log.Warn("slack cannot tell what a channel is; keeping its memory apart and reading none of the workspace's, as a shared channel's", "chat", channel, "err", err)
		}
		a.convs.Put(channel, convUnknown, convFailTTL)
		return convUnknown
	}
	k := conversationKindOf(c)
	a.convs.Put(channel, k, convTTL)
	return k
}

// conversationKindOf reads conversations.info's flags. Shared comes first: people of
// another organisation (or workspace) are in a shared private channel too.
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

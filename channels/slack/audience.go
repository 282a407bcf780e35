package slack

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
)

// The audience of a conversation: who can read it, from what Slack says of
// it and of the person speaking, never from the text. A DM is its
// person's (Person), or, when the person is a guest of the workspace or
// belongs to another organisation, a Guest's: their own memory alone. A
// group DM or a private channel is its members' (Private); a public
// channel the workspace's (Team); a channel shared with another
// organisation, or with other workspaces of an Enterprise Grid, is Shared,
// and so is a channel one of whose members is a guest or a person of
// another organisation: it keeps a memory of its own and sees none of the
// workspace's, which is made of channels they cannot read. The workspace
// is the one the event came from, so two workspaces never meet in one
// audience.
//
// Who a person is comes from users.info (people.go); what a channel is,
// and who is in it, from conversations.info and conversations.members
// (convs.go: kept a while, forgotten when Slack announces a change). When
// Slack cannot say, the narrower audience wins: an undescribed person is a
// guest, an undescribed channel a shared one. A DM is the bot's with its
// person when a message event says so (Slack sends none from a DM the bot
// is not in) or conversations.info does: a slash command typed in a DM
// between two people carries the DM's id, and its audience is that DM's
// own, never a person's.

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

// audienceOf decides the audience of a conversation in channel, where user
// spoke. ok is false when Slack's ids make no valid audience (never seen:
// they are uppercase letters and digits), and the message is dropped.
func (r *runner) audienceOf(ctx context.Context, w where, channel, user string) (audience.Audience, bool) {
	team := w.team
	if team == "" {
		team = r.teamID
	}
	aud := audience.Audience{Platform: Name, Team: team}
	who := r.a.standing(ctx, team, user)
	outsider := w.external || who != standingMember
	dm := w.channelType == "im"
	if w.channelType == "" && strings.HasPrefix(channel, "D") {
		// A slash command names no kind, and Slack lets a person type
		// one in a DM with another person, which the bot is not in: a
		// DM is the bot's with user only when Slack says so.
		info := r.channelInfo(ctx, team, channel, "")
		dm = info.kind == convIM && info.person == user
	}
	switch {
	case dm && outsider:
		aud.Kind, aud.Person = audience.Guest, user
	case dm:
		aud.Kind, aud.Person = audience.Person, user
	case outsider:
		// A guest or a person of another organisation is in it.
		aud.Kind, aud.Chat = audience.Shared, channel
	default:
		switch info := r.channelInfo(ctx, team, channel, w.channelType); {
		case info.kind == convShared, info.kind == convUnknown, info.kind == convIM, info.outsiders:
			// A DM here is not the speaker's with the bot.
			aud.Kind, aud.Chat = audience.Shared, channel
		case info.kind == convPublic:
			aud.Kind = audience.Team
		default:
			aud.Kind, aud.Chat = audience.Private, channel
		}
	}
	if err := aud.Validate(); err != nil {
		r.a.log.Warn("slack conversation has no audience; message ignored", "chat", channel, "team", team, "user", user, "err", err)
		return audience.Audience{}, false
	}
	if outsider {
		r.a.log.Debug("slack conversation with a person who is not a full member", "chat", channel, "user", user, "standing", who.String(), "external", w.external)
	}
	return aud, true
}

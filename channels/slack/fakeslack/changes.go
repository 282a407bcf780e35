package fakeslack

import (
	"slices"
	"strings"
)

// Changes to a channel's audience, made as people make them in Slack, and
// the events Slack sends an app about them — only those the app
// subscribed to (Config.Events), in a channel the app is in (the bot is a
// member of every channel the fake describes):
//
//	ConvertToPrivate  message, subtype channel_convert_to_private (channel_type "group")
//	ConvertToPublic   message, subtype channel_convert_to_public (channel_type "channel")
//	                  both to apps subscribed to message.channels or message.groups
//	ShareChannel      channel_shared
//	UnshareChannel    channel_unshared
//	ChangeChannelID   channel_id_changed
//	Join              member_joined_channel
//	Leave             member_left_channel

// Subscribed reports whether the app subscribed to the bot event name
// ("app_mention", "message.channels", …); with no Config.Events, to every
// one.
func (s *Server) Subscribed(name string) bool {
	return s.cfg.Events == nil || slices.Contains(s.cfg.Events, name)
}

// messageSubscription is the bot event that delivers message events of a
// channel_type.
func messageSubscription(channelType string) string {
	switch channelType {
	case "im":
		return "message.im"
	case "mpim":
		return "message.mpim"
	case "group":
		return "message.groups"
	default:
		return "message.channels"
	}
}

// ConvertToPrivate makes channel private, as a person (by) does in its
// settings: conversations.info says so from now on, and an app
// subscribed to message.channels or message.groups gets the message Slack
// posts about it.
func (s *Server) ConvertToPrivate(channel, by string) ([]Delivery, error) {
	return s.convert(channel, by, true)
}

// ConvertToPublic makes channel public, as ConvertToPrivate does the
// other way.
func (s *Server) ConvertToPublic(channel, by string) ([]Delivery, error) {
	return s.convert(channel, by, false)
}

func (s *Server) convert(channel, by string, private bool) ([]Delivery, error) {
	s.mu.Lock()
	c := s.conversationLocked(channel)
	c.Private = private
	s.conversations[channel] = c
	s.mu.Unlock()
	if !s.Subscribed("message.channels") && !s.Subscribed("message.groups") {
		return nil, nil
	}
	ev := Event{Channel: channel, User: by, Subtype: "channel_convert_to_public", ChannelType: "channel",
		Text: "made this channel *public*. Any member in this workspace can see and join it."}
	if private {
		ev.Subtype, ev.ChannelType = "channel_convert_to_private", "group"
		ev.Text = "made this channel *private*. Now, it can only be viewed or joined by invitation."
	}
	d, err := s.Inject(ev)
	if err != nil {
		return nil, err
	}
	return []Delivery{d}, nil
}

// ShareChannel shares channel with another organisation (Slack Connect,
// connectedTeam): conversations.info says is_ext_shared from now on,
// events in it carry is_ext_shared_channel, and an app subscribed to
// channel_shared gets it.
func (s *Server) ShareChannel(channel, connectedTeam string) ([]Delivery, error) {
	s.mu.Lock()
	c := s.conversationLocked(channel)
	c.ExtShared = true
	s.conversations[channel] = c
	s.mu.Unlock()
	return s.injectChange("channel_shared", channel, map[string]any{"connected_team_id": connectedTeam, "channel": channel})
}

// UnshareChannel ends channel's sharing with previousTeam, as
// ShareChannel does the other way (channel_unshared).
func (s *Server) UnshareChannel(channel, previousTeam string) ([]Delivery, error) {
	s.mu.Lock()
	c := s.conversationLocked(channel)
	c.ExtShared = false
	s.conversations[channel] = c
	s.mu.Unlock()
	return s.injectChange("channel_unshared", channel, map[string]any{
		"previously_connected_team_id": previousTeam, "channel": channel, "is_ext_shared": false,
	})
}

// ChangeChannelID gives channel oldID the id newID, as Slack did when a
// channel changed kind: the channel, its members and its kind move to the
// new id (the old one is channel_not_found), and an app subscribed to
// channel_id_changed is told.
func (s *Server) ChangeChannelID(oldID, newID string) ([]Delivery, error) {
	s.mu.Lock()
	c := s.conversationLocked(oldID)
	members := slices.Clone(s.membersLocked(oldID))
	c.ID = newID
	s.conversations[newID] = c
	s.members[newID] = members
	s.conversations[oldID] = Conversation{ID: oldID, Error: "channel_not_found"}
	delete(s.members, oldID)
	s.mu.Unlock()
	return s.injectChange("channel_id_changed", newID, map[string]any{"old_channel_id": oldID, "new_channel_id": newID})
}

// Join makes user a member of channel, invited by inviter ("" when they
// joined by themselves), and tells an app subscribed to
// member_joined_channel. Nothing is sent when they were a member already.
func (s *Server) Join(channel, user, inviter string) ([]Delivery, error) {
	s.mu.Lock()
	added := s.addMemberLocked(channel, user)
	ct := memberChannelType(s.conversationLocked(channel))
	s.mu.Unlock()
	if !added {
		return nil, nil
	}
	ev := map[string]any{"user": user, "channel": channel, "channel_type": ct, "team": s.cfg.TeamID}
	if inviter != "" {
		ev["inviter"] = inviter
	}
	return s.injectChange("member_joined_channel", channel, ev)
}

// Leave takes user out of channel's members and tells an app subscribed
// to member_left_channel. Nothing is sent when they were no member.
func (s *Server) Leave(channel, user string) ([]Delivery, error) {
	s.mu.Lock()
	removed := s.removeMemberLocked(channel, user)
	ct := memberChannelType(s.conversationLocked(channel))
	s.mu.Unlock()
	if !removed {
		return nil, nil
	}
	return s.injectChange("member_left_channel", channel, map[string]any{
		"user": user, "channel": channel, "channel_type": ct, "team": s.cfg.TeamID,
	})
}

// memberChannelType is the channel_type of member events: "C" for a
// public channel, "G" for a private one.
func memberChannelType(c Conversation) string {
	if c.Private || c.MPIM {
		return "G"
	}
	return "C"
}

// injectChange sends one event of type typ about channel, in the
// workspace of Config.TeamID, in its own events_api envelope, when the app
// subscribed to it.
func (s *Server) injectChange(typ, channel string, fields map[string]any) ([]Delivery, error) {
	if !s.Subscribed(typ) {
		return nil, nil
	}
	s.mu.Lock()
	ts := s.nextTSLocked()
	d := Delivery{EnvelopeID: s.nextIDLocked("env-"), EventID: s.nextIDLocked("Ev"), Event: Event{Type: typ, Channel: channel, TS: ts}}
	ext := s.conversationLocked(channel).ExtShared
	s.mu.Unlock()
	inner := map[string]any{"type": typ, "event_ts": ts}
	for k, v := range fields {
		inner[k] = v
	}
	payload, err := s.wrapCallback(d.EventID, "", inner, ext)
	if err != nil {
		return nil, err
	}
	d.payload = payload
	sent, err := s.send(d)
	if err != nil {
		return nil, err
	}
	return []Delivery{sent}, nil
}

// mentionsBot reports whether text mentions the bot.
func (s *Server) mentionsBot(text string) bool {
	return strings.Contains(text, "<@"+s.cfg.BotUserID+">")
}

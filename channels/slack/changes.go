package slack

import (
	"context"
	"log/slog"

	"github.com/slack-go/slack/slackevents"
)

// Slack announces the changes that change a channel's audience, to an app
// subscribed to them (manifest.yaml): a channel made private or public (a
// message of subtype channel_convert_to_private or
// channel_convert_to_public, sent only to apps subscribed to
// message.channels or message.groups), shared with another organisation
// or no longer (channel_shared, channel_unshared), given a new id
// (channel_id_changed), and people joining or leaving it
// (member_joined_channel, member_left_channel: a guest among them makes
// it an audience of its own). Each makes the adapter forget what it knew
// of the channel at once, so the channel's next turn is answered from a
// fresh lookup; a message event whose channel_type or shared flag
// disagrees with what is known does the same. The events themselves are
// never turns: plain channel messages without a mention stay ignored.
//
// A new Socket Mode connection forgets every channel: announcements made
// while the app was not connected may never come.

// convertSubtypes are the message subtypes that announce a change of kind.
var convertSubtypes = map[string]bool{"channel_convert_to_private": true, "channel_convert_to_public": true}

// audienceEvent handles an event that announces a change to channels'
// audiences; it reports whether ev was one.
func (a *Adapter) audienceEvent(ev any) bool {
	switch ev := ev.(type) {
	case *slackevents.MemberJoinedChannelEvent:
		a.audienceChanged("member_joined_channel", ev.Channel)
	case *slackevents.MemberLeftChannelEvent:
		a.audienceChanged("member_left_channel", ev.Channel)
	case *slackevents.ChannelSharedEvent:
		a.audienceChanged("channel_shared", ev.Channel)
	case *slackevents.ChannelUnsharedEvent:
		a.audienceChanged("channel_unshared", ev.Channel)
	case *slackevents.ChannelIDChangedEvent:
		a.audienceChanged("channel_id_changed", ev.OldChannelID, ev.NewChannelID)
	default:
		return false
	}
	return true
}

// noteMessage checks what a message event says of its channel against
// what is known: a change of kind announced, or a kind or shared flag that
// disagrees, makes the channel be looked up again.
func (a *Adapter) noteMessage(channel, channelType, subtype string, extShared bool) {
	if convertSubtypes[subtype] {
		a.audienceChanged(subtype, channel)
		return
	}
	if channelType == "" || channel == "" {
		return
	}
	if info, has, _ := a.convs.get(channel); has && info.kind != convUnknown && !info.agrees(channelType, extShared) {
		a.audienceChanged("channel_type "+channelType, channel)
	}
}

// audienceChanged forgets what was known of the channels. People joining
// and leaving are logged at debug: a large workspace has many.
func (a *Adapter) audienceChanged(why string, channels ...string) {
	for _, ch := range channels {
		if ch != "" {
			a.convs.drop(ch)
		}
	}
	level := slog.LevelInfo
	if why == "member_joined_channel" || why == "member_left_channel" {
		level = slog.LevelDebug
	}
	a.log.Log(context.Background(), level, "slack channel may have a new audience; it is looked up again before its next turn", "event", why, "chat", channels)
}

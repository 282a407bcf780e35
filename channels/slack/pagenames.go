package slack

import (
	"context"
	"time"

	"github.com/slack-go/slack"
)

// Names for the memory page: the name Slack shows for a person (what
// users.info said, through the adapter's cache of people) and a channel's
// name (conversations.info, kept chanNameTTL). The page shows them beside
// the ids its scopes and conversations carry.

const (
	chanNameTTL     = 10 * time.Minute
	chanNameFailTTL = time.Minute
)

// PersonName is the name Slack shows for user, "" when it cannot say.
// team is not needed: a Slack user id is the workspace's.
func (a *Adapter) PersonName(ctx context.Context, _, user string) string {
	return a.person(ctx, user).name
}

// ChatName is channel's name, "" for a DM or when Slack cannot say (a
// failure is kept chanNameFailTTL, so a page does not ask again at once).
func (a *Adapter) ChatName(ctx context.Context, _, channel string) string {
	if channel == "" {
		return ""
	}
	if name, ok := a.chanNames.Get(channel); ok {
		return name
	}
	callCtx, cancel := context.WithTimeout(ctx, min(convTimeout, a.apiTimeout))
	c, err := a.api.GetConversationInfoContext(callCtx, &slack.GetConversationInfoInput{ChannelID: channel})
	cancel()
	switch {
	case err == nil:
		name := ""
		if !c.IsIM {
			name = c.Name
		}
		a.chanNames.Put(channel, name, chanNameTTL)
		return name
	case ctx.Err() == nil:
		a.chanNames.Put(channel, "", chanNameFailTTL)
	}
	return ""
}

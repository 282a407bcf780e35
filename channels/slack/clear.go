package slack

import (
	"context"
	"fmt"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/slack-go/slack"
)

var _ channels.WorkingClearer = (*Adapter)(nil)

// ClearWorking removes the "eyes" reaction a process killed mid-turn left
// on in's message. A reaction that is not there is no error.
func (a *Adapter) ClearWorking(ctx context.Context, in channels.Inbound) error {
	if in.ChatID == "" || in.MessageID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.reactionTimeout)
	defer cancel()
	err := a.api.RemoveReactionContext(ctx, reactionName, slack.NewRefToMessage(in.ChatID, in.MessageID))
	if err != nil && slackErrorCode(err) != "no_reaction" {
		return fmt.Errorf("remove working reaction: %w", err)
	}
	return nil
}

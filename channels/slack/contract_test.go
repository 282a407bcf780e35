package slack

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/channeltest"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// The channel contract, over Socket Mode against fakeslack: a DM from one
// user is the conversation, and a message is taken once its envelope is
// acked.
func TestContract(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channeltest.Rig {
		fake := fakeslack.New(fakeslack.Config{})
		t.Cleanup(fake.Close)
		a, err := New(Config{
			BotToken: fake.BotToken(), AppToken: fake.AppToken(), APIURL: fake.APIURL(),
			ReplyInThread: true,
			Logger:        slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		a.reconnectMin, a.reconnectMax = 20*time.Millisecond, 200*time.Millisecond
		a.sendRetry.Base = 20 * time.Millisecond
		return channeltest.Rig{
			Channel: a,
			Ready:   func(ctx context.Context) error { return fake.WaitConnections(ctx, 1) },
			Post: func(ctx context.Context, text string) error {
				d, err := fake.Inject(fakeslack.Event{Channel: "D1", User: "U1", Text: text})
				if err != nil {
					return err
				}
				return fake.WaitAcked(ctx, d.EnvelopeID)
			},
			Sent: func(ctx context.Context, n int) ([]string, error) {
				posts, err := fake.WaitPosts(ctx, n)
				var texts []string
				for _, p := range posts {
					texts = append(texts, p.Text)
				}
				return texts, err
			},
		}
	})
}

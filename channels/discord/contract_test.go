package discord

import (
	"context"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/channeltest"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// The channel contract, over the Gateway against fakediscord: a DM from one
// user is the conversation, and a message is taken once the adapter has
// read and queued it.
func TestContract(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channeltest.Rig {
		fake, err := fakediscord.Start(fakediscord.Config{HeartbeatInterval: 500 * time.Millisecond})
		if err != nil {
			t.Fatalf("start fake: %v", err)
		}
		t.Cleanup(fake.Close)
		fake.AddChannel(fakediscord.Channel{ID: "D1", Type: fakediscord.ChannelDM})
		a, err := New(Config{Token: fake.Token(), APIURL: fake.URL()})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		a.tune = testTuning
		queued := make(chan string, 256)
		a.onQueued = func(id string) {
			select {
			case queued <- id:
			default:
			}
		}
		return channeltest.Rig{
			Channel: a,
			Ready:   func(ctx context.Context) error { return fake.WaitSessions(ctx, 1) },
			Post: func(ctx context.Context, text string) error {
				id, err := fake.InjectMessage(fakediscord.Message{
					ChannelID: "D1", Content: text, Author: fakediscord.User{ID: "U1", Username: "alice"},
				})
				if err != nil {
					return err
				}
				for {
					select {
					case got := <-queued:
						if got == id {
							return nil
						}
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			},
			Sent: func(ctx context.Context, n int) ([]string, error) {
				sent, err := fake.WaitSent(ctx, n)
				var texts []string
				for _, s := range sent {
					texts = append(texts, s.Content)
				}
				return texts, err
			},
		}
	})
}

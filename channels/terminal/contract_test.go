package terminal

import (
	"context"
	"io"
	"testing"

	"github.com/dreamgate/dreamgate/channels/channeltest"
)

// The channel contract where it applies to the terminal: lines typed are
// delivered in order. It has no platform queue, so the busy, closed and
// hand-over subtests skip.
func TestContract(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channeltest.Rig {
		in, typed := io.Pipe()
		t.Cleanup(func() { typed.Close() })
		a := New(Config{In: in, Out: io.Discard, Err: io.Discard, User: "ana"})
		return channeltest.Rig{
			Channel: a,
			// A pipe write returns once the adapter's reader has the line.
			Post: func(_ context.Context, text string) error {
				_, err := io.WriteString(typed, text+"\n")
				return err
			},
		}
	})
}

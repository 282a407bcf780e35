package discord

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// answeringSink answers every delivered message at once through Send.
type answeringSink struct {
	a    *Adapter
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (s *answeringSink) Deliver(ctx context.Context, in channels.Inbound) error {
	s.wg.Go(func() {
		if err := s.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, "ack "+in.MessageID)); err != nil {
			s.mu.Lock()
			s.errs = append(s.errs, err)
			s.mu.Unlock()
		}
	})
	return nil
}

// BenchmarkRoundTrip injects 500 messages over 50 channels at once per
// iteration and measures, per message, the time from the fake injecting the
// MESSAGE_CREATE to the fake receiving the reply. Every message must be
// answered exactly once.
func BenchmarkRoundTrip(b *testing.B) {
	const nChannels, perChannel = 50, 10
	fake, err := fakediscord.Start(fakediscord.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	chans := make([]fakediscord.Channel, nChannels)
	for i := range chans {
		chans[i] = fakediscord.Channel{ID: fmt.Sprintf("C%02d", i), Type: fakediscord.ChannelText}
	}
	fake.AddGuild("G1", chans...)

	a, err := New(Config{Token: fake.Token(), APIURL: fake.URL(), GroupPolicy: PolicyOpen})
	if err != nil {
		b.Fatal(err)
	}
	a.tune = testTuning
	sink := &answeringSink{a: a}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
	}()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	if err := fake.WaitSessions(wctx, 1); err != nil {
		b.Fatal(err)
	}

	var (
		mu       sync.Mutex
		injected = map[string]time.Time{}
		lat      []time.Duration
		total    int
	)
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for _, c := range chans {
			wg.Go(func() {
				for j := range perChannel {
					at := time.Now()
					id, err := fake.InjectMessage(fakediscord.Message{
						ChannelID: c.ID, Author: fakediscord.User{ID: "U1"}, Content: fmt.Sprintf("message %d", j),
					})
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					injected[id] = at
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		total += nChannels * perChannel
		if _, err := fake.WaitSent(wctx, total); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	sink.wg.Wait()
	if len(sink.errs) > 0 {
		b.Fatalf("%d sends failed, first: %v", len(sink.errs), sink.errs[0])
	}

	sent := fake.Sent()
	answered := map[string]int{}
	for _, s := range sent {
		answered[s.ReplyTo]++
		if at, ok := injected[s.ReplyTo]; ok {
			lat = append(lat, s.At.Sub(at))
		}
	}
	if len(sent) != total || len(answered) != total {
		b.Fatalf("%d replies to %d distinct messages, want %d each", len(sent), len(answered), total)
	}
	for id := range injected {
		if answered[id] != 1 {
			b.Fatalf("message %s answered %d times", id, answered[id])
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "msgs/s")
}

package slack

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
)

// answerSink answers every message at once with Send, from goroutines it
// owns, as the gateway's session workers would.
type answerSink struct {
	a  *Adapter
	wg sync.WaitGroup
	tb testing.TB
}

func (s *answerSink) Deliver(_ context.Context, in channels.Inbound) error {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := s.a.Send(ctx, channels.ReplyTo(in, channels.KindReply, "ok "+in.Text)); err != nil {
			s.tb.Errorf("send: %v", err)
		}
	})
	return nil
}

// loadRig is an adapter with an answering sink, running against a fake.
type loadRig struct {
	fake   *fakeslack.Server
	a      *Adapter
	sink   *answerSink
	cancel context.CancelFunc
	done   chan error
}

func startLoadRig(tb testing.TB) *loadRig {
	tb.Helper()
	fake := fakeslack.New(fakeslack.Config{})
	a, err := New(Config{BotToken: fake.BotToken(), AppToken: fake.AppToken(), APIURL: fake.APIURL(), ReplyInThread: true})
	if err != nil {
		tb.Fatal(err)
	}
	r := &loadRig{fake: fake, a: a, sink: &answerSink{a: a, tb: tb}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- a.Run(ctx, r.sink) }()
	wctx, wcancel := context.WithTimeout(ctx, waitTimeout)
	defer wcancel()
	if err := fake.WaitConnections(wctx, 1); err != nil {
		tb.Fatal(err)
	}
	return r
}

func (r *loadRig) close(tb testing.TB) {
	r.cancel()
	if err := <-r.done; err != nil {
		tb.Errorf("Run: %v", err)
	}
	r.sink.wg.Wait()
	r.fake.Close()
}

// burst injects perChannel mentions in each of nChannels channels at once
// (one goroutine per channel), waits until every one is answered, checks
// each was answered exactly once in its own thread, and returns the
// latencies from the fake writing the event to the fake receiving the reply.
func (r *loadRig) burst(tb testing.TB, round, nChannels, perChannel int) []time.Duration {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	postsBefore := len(r.fake.Posts())
	var (
		mu   sync.Mutex
		sent = map[string]time.Time{} // channel/ts -> written
		wg   sync.WaitGroup
	)
	for c := range nChannels {
		channel := fmt.Sprintf("C%03d", c)
		wg.Go(func() {
			for i := range perChannel {
				d, err := r.fake.Inject(fakeslack.Event{Type: "app_mention", Channel: channel, User: "U1",
					Text: fmt.Sprintf("<@UBOT> r%d m%d", round, i)})
				if err != nil {
					tb.Errorf("inject: %v", err)
					return
				}
				mu.Lock()
				sent[channel+"/"+d.Event.TS] = d.At
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := nChannels * perChannel
	posts, err := r.fake.WaitPosts(ctx, postsBefore+total)
	if err != nil {
		tb.Fatalf("%v (%d of %d answered)", err, len(r.fake.Posts())-postsBefore, total)
	}
	answered := map[string]int{}
	lat := make([]time.Duration, 0, total)
	for _, p := range posts[postsBefore:] {
		key := p.Channel + "/" + p.ThreadTS
		answered[key]++
		if at, ok := sent[key]; ok {
			lat = append(lat, p.At.Sub(at))
		}
	}
	for key := range sent {
		if answered[key] != 1 {
			tb.Fatalf("message %s answered %d times, want exactly once", key, answered[key])
		}
	}
	if len(answered) != total {
		tb.Fatalf("%d distinct threads answered, want %d", len(answered), total)
	}
	return lat
}

func TestBurstAcrossChannelsAnsweredOnce(t *testing.T) {
	r := startLoadRig(t)
	defer r.close(t)
	r.burst(t, 0, 50, 10)
	if un := r.fake.Unacked(); len(un) != 0 {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		if err := r.fake.WaitAcked(ctx, un...); err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkBurst500: 500 mentions over 50 channels at once, each answered
// immediately via Send; reports p50/p99 from event written to reply received.
func BenchmarkBurst500(b *testing.B) {
	r := startLoadRig(b)
	defer r.close(b)
	var all []time.Duration
	round := 0
	for b.Loop() {
		all = append(all, r.burst(b, round, 50, 10)...)
		round++
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[int(p*float64(len(all)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "msgs/s")
}

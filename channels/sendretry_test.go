package channels_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/channeltest"
)

var errLimited = errors.New("HTTP 429")

// A message is retried for its whole window, each wait as long as the
// platform asked, the last one cut at the window's end; then it is dropped
// with one ERROR line that says what was lost, never its text.
func TestSendRetryDropsOnlyAfterTheWindow(t *testing.T) {
	var logs bytes.Buffer
	clock := channeltest.NewClock()
	var waits []channels.SendWait
	p := channels.SendRetry{
		Window: 10 * time.Second, Clock: clock,
		Log:    slog.New(slog.NewTextHandler(&logs, nil)),
		OnWait: func(w channels.SendWait) { waits = append(waits, w) },
	}
	out := channels.Outbound{Channel: "slack", SessionKey: "slack:C1:1.2", Kind: channels.KindReply, Text: "the secret answer"}
	r := p.Start(out)
	start := clock.Now()
	var err error
	tries := 0
	for err == nil {
		tries++
		err = r.RateLimited(t.Context(), 3*time.Second, errLimited)
	}
	if !errors.Is(err, channels.ErrDropped) || !errors.Is(err, errLimited) {
		t.Fatalf("err = %v, want ErrDropped wrapping the last error", err)
	}
	var de *channels.DroppedError
	if !errors.As(err, &de) || de.Tried != 10*time.Second || de.Attempts != 5 {
		t.Fatalf("dropped = %+v, want 10s tried and 5 attempts", de)
	}
	// Waits of 3, 3, 3 and the 1 s left: five attempts in all.
	if tries != 5 || clock.Now().Sub(start) != 10*time.Second {
		t.Fatalf("%d attempts over %v, want 5 over 10s", tries, clock.Now().Sub(start))
	}
	if len(waits) != 4 || !waits[0].RateLimited || waits[0].Delay != 3*time.Second || waits[3].Delay != time.Second || waits[0].SessionKey != "slack:C1:1.2" {
		t.Fatalf("waits = %+v", waits)
	}
	line := logs.String()
	if strings.Count(line, "level=ERROR") != 1 {
		t.Fatalf("want one ERROR line:\n%s", line)
	}
	for _, want := range []string{"session=slack:C1:1.2", "kind=reply", "len=17", "tried=10s", "attempts=5"} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "secret") {
		t.Errorf("log shows the message text:\n%s", line)
	}
}

// Failures without a retry-after back off, doubling from Base to Max.
func TestSendRetryBacksOff(t *testing.T) {
	clock := channeltest.NewClock()
	var delays []time.Duration
	p := channels.SendRetry{Window: time.Hour, Base: time.Second, Max: 4 * time.Second, Clock: clock,
		OnWait: func(w channels.SendWait) { delays = append(delays, w.Delay) }}
	r := p.Start(channels.Outbound{})
	for range 5 {
		if err := r.Failed(t.Context(), errors.New("HTTP 503")); err != nil {
			t.Fatal(err)
		}
	}
	// Jitter takes up to a quarter off.
	for i, max := range []time.Duration{1, 2, 4, 4, 4} {
		if d := delays[i]; d > max*time.Second || d < max*time.Second*3/4 {
			t.Errorf("wait %d = %v, want about %ds", i, d, max)
		}
	}
}

// A wait ends with its context (shutdown): no drop is logged, the error is
// the context's.
func TestSendRetryHonoursContext(t *testing.T) {
	var logs bytes.Buffer
	clock := channeltest.NewClock()
	p := channels.SendRetry{Clock: clock, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	r := p.Start(channels.Outbound{SessionKey: "k"})
	waiting, release := clock.Hold()
	defer release()
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-waiting; cancel() }()
	err := r.RateLimited(ctx, time.Minute, errLimited)
	if !errors.Is(err, context.Canceled) || errors.Is(err, channels.ErrDropped) {
		t.Fatalf("err = %v, want the context's", err)
	}
	if strings.Contains(logs.String(), "ERROR") {
		t.Errorf("a cancelled wait logged a drop:\n%s", logs.String())
	}
}

package discord

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/channeltest"
	"github.com/dreamgate/dreamgate/channels/discord/fakediscord"
)

// syncBuffer is a log destination safe for the adapter's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// retryHarness is a harness, not running (sends only), whose send retries
// wait on clock for window (0: the default) and log to logs.
func retryHarness(t *testing.T, clock *channeltest.Clock, window time.Duration, logs *syncBuffer) *harness {
	t.Helper()
	cfg := Config{SendRetry: window}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	h := newHarness(t, harnessOpts{cfg: cfg, noStart: true})
	h.a.sendRetry.Clock = clock
	return h
}

func limitedAttempts(f *fakediscord.Server, channel string) int {
	n := 0
	for _, a := range f.Attempts() {
		if a.ChannelID == channel && a.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// A rate-limit storm of many more answers than the old five waits: the
// reply, split in two parts, is delivered once, in order, before the
// conversation's next reply, each part under one nonce.
func TestSustainedRateLimitIsWaitedOutInOrder(t *testing.T) {
	t.Parallel()
	clock := channeltest.NewClock()
	var logs syncBuffer
	h := retryHarness(t, clock, 0, &logs)
	const storm = 12
	h.fake.RateLimitChannel("C1", storm, 2*time.Millisecond)
	long := strings.Repeat("a", MaxMessageLen) + " " + strings.Repeat("b", 50)
	h.send(channels.Outbound{ChatID: "C1", SessionKey: "discord:C1", Text: long})
	h.send(channels.Outbound{ChatID: "C1", SessionKey: "discord:C1", Text: "the next reply"})
	sent := h.fake.Sent()
	if len(sent) != 3 || !strings.HasPrefix(sent[0].Content, "aaa") || !strings.HasSuffix(sent[1].Content, "bbb") || sent[2].Content != "the next reply" {
		t.Fatalf("sent %d messages, want part 1, part 2, the next reply, once each", len(sent))
	}
	if n := limitedAttempts(h.fake, "C1"); n != storm {
		t.Errorf("%d attempts answered 429, want the storm's %d", n, storm)
	}
	att := h.fake.Attempts()
	if att[0].Nonce != att[storm].Nonce {
		t.Errorf("the retries of part 1 changed its nonce")
	}
	if n, _ := clock.Slept(); n != storm {
		t.Errorf("waited %d times, want %d", n, storm)
	}
	if strings.Contains(logs.String(), "dropped") {
		t.Errorf("a delivered reply was logged as dropped:\n%s", logs.String())
	}
}

// A storm that outlasts the window drops the reply, then, with one ERROR
// line naming the session, kind, length and time tried, never the text.
func TestRateLimitPastTheWindowDropsWithOneLogLine(t *testing.T) {
	t.Parallel()
	clock := channeltest.NewClock()
	var logs syncBuffer
	const window = 20 * time.Millisecond
	h := retryHarness(t, clock, window, &logs)
	h.fake.RateLimitChannel("C1", -1, 2*time.Millisecond)
	start := clock.Now()
	err := h.a.Send(h.ctx(), channels.Outbound{ChatID: "C1", SessionKey: "discord:C1", Kind: channels.KindError, Text: "the hidden words"})
	if !errors.Is(err, channels.ErrDropped) {
		t.Fatalf("Send = %v, want ErrDropped", err)
	}
	if tried := clock.Now().Sub(start); tried != window {
		t.Errorf("gave up after %v, want the window (%v)", tried, window)
	}
	if n := len(h.fake.Sent()); n != 0 {
		t.Errorf("%d sent", n)
	}
	if n := limitedAttempts(h.fake, "C1"); n != 11 {
		t.Errorf("%d attempts, want 11 (every 2ms and one at the window's end)", n)
	}
	got := logs.String()
	if strings.Count(got, "level=ERROR") != 1 || !strings.Contains(got, "dropped") {
		t.Fatalf("want one ERROR line about the drop:\n%s", got)
	}
	for _, want := range []string{"session=discord:C1", "kind=error", "len=16", "tried=20ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hidden") {
		t.Errorf("log shows the text:\n%s", got)
	}
}

// Server errors too are retried past the old three tries.
func TestServerErrorsRetriedWithinTheWindow(t *testing.T) {
	t.Parallel()
	h := retryHarness(t, channeltest.NewClock(), 0, nil)
	for range 6 {
		h.fake.InjectSendError(http.StatusBadGateway, false)
	}
	h.fake.InjectSendError(http.StatusInternalServerError, true)
	h.send(channels.Outbound{ChatID: "C1", Text: "persist"})
	if sent := h.fake.Sent(); len(sent) != 1 || sent[0].Content != "persist" {
		t.Fatalf("sent = %+v, want one", sent)
	}
	if n := len(h.fake.Attempts()); n != 8 {
		t.Errorf("%d attempts, want 8", n)
	}
}

// One conversation waiting out its channel's rate limit does not hold up
// another channel's reply; it is delivered itself once the storm ends.
func TestRateLimitedConversationDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	clock := channeltest.NewClock()
	h := retryHarness(t, clock, 0, nil)
	h.fake.RateLimitChannel("C1", 8, 2*time.Millisecond)
	waiting, release := clock.Hold()
	defer release()
	done := make(chan error, 1)
	go func() {
		done <- h.a.Send(h.ctx(), channels.Outbound{ChatID: "C1", SessionKey: "discord:C1", Text: "slow"})
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("Send returned %v before waiting", err)
	}
	h.send(channels.Outbound{ChatID: "C2", SessionKey: "discord:C2", Text: "quick"})
	if sent := h.fake.Sent(); len(sent) != 1 || sent[0].Content != "quick" {
		t.Fatalf("sent while C1 waits = %+v, want only C2's", sent)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("rate-limited conversation: %v", err)
	}
	if sent := h.fake.Sent(); len(sent) != 2 || sent[1].Content != "slow" {
		t.Fatalf("sent = %+v, want C2's then C1's", sent)
	}
}

// Shutdown ends a wait at once: the retry honours the context.
func TestRateLimitWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	clock := channeltest.NewClock()
	var logs syncBuffer
	h := retryHarness(t, clock, 0, &logs)
	h.fake.RateLimitChannel("C1", -1, 2*time.Millisecond)
	waiting, release := clock.Hold()
	defer release()
	ctx, cancel := context.WithCancel(h.ctx())
	go func() { <-waiting; cancel() }()
	if err := h.a.Send(ctx, channels.Outbound{ChatID: "C1", SessionKey: "discord:C1", Text: "bye"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want context.Canceled", err)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a cancelled send logged a drop:\n%s", logs.String())
	}
}

package fakeslack

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

// client is a bare Socket Mode connection that acks what it reads, or
// reads one envelope and dies without acking it.
type client struct {
	ws   *websocket.Conn
	mu   sync.Mutex
	got  []string // envelope ids read
	acks bool
}

func dial(t *testing.T, ctx context.Context, s *Server, acks bool) *client {
	t.Helper()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
	_, url, err := api.StartSocketModeContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{ws: ws, acks: acks}
	go c.read()
	t.Cleanup(func() { _ = ws.Close() })
	return c
}

func (c *client) read() {
	for {
		var env struct {
			Type       string `json:"type"`
			EnvelopeID string `json:"envelope_id"`
		}
		if err := c.ws.ReadJSON(&env); err != nil {
			return
		}
		if env.Type != "events_api" {
			continue
		}
		c.mu.Lock()
		c.got = append(c.got, env.EnvelopeID)
		c.mu.Unlock()
		if !c.acks {
			// A process killed with the envelope read and not acked.
			_ = c.ws.Close()
			return
		}
		_ = c.ws.WriteJSON(map[string]string{"envelope_id": env.EnvelopeID})
	}
}

func (c *client) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// Slack sends each envelope to one of an app's connections at random, and
// an envelope nobody acked again, with retry_attempt set, to a live one.
func TestEnvelopesSpreadOverConnectionsAndUnackedOnesComeAgain(t *testing.T) {
	// Long enough that a live connection's slow ack is not taken for a
	// loss on a loaded machine (a resend of it could reach the dead one).
	s := New(Config{RetryUnacked: 2 * time.Second})
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, b := dial(t, ctx, s, true), dial(t, ctx, s, true)
	if err := s.WaitLiveConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	const events = 60
	sent := map[string]bool{}
	for i := range events {
		d, err := s.Inject(Event{Channel: "C1", User: "U1", Text: "m" + string(rune('a'+i%26))})
		if err != nil {
			t.Fatal(err)
		}
		sent[d.EventID] = true
	}
	if err := s.waitFor(ctx, "every envelope read", func() bool { return len(s.acks) >= events }); err != nil {
		t.Fatal(err)
	}
	// Both connections had a share (60 events each to one of two at
	// random: all on one has a chance of 2^-59).
	if a.count() == 0 || b.count() == 0 {
		t.Fatalf("envelopes per connection: %d and %d; want both", a.count(), b.count())
	}

	// A third connection that dies with what it read: its envelope goes
	// to a live connection again, as the same event, retry_attempt 1.
	dead := dial(t, ctx, s, false)
	if err := s.WaitLiveConnections(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for dead.count() == 0 {
		if _, err := s.Inject(Event{Channel: "C2", User: "U1", Text: "again"}); err != nil {
			t.Fatal(err)
		}
		if err := s.waitFor(ctx, "the envelope read or acked", func() bool { return unackedEvents(s) == 0 || dead.count() > 0 }); err != nil {
			t.Fatal(err)
		}
	}
	lost := dead.got[0]
	if err := s.waitFor(ctx, "every event acked", func() bool { return unackedEvents(s) == 0 }); err != nil {
		t.Fatal(err)
	}
	var retried *Delivery
	for _, d := range s.Deliveries() {
		if d.EnvelopeID == lost {
			for _, r := range s.Deliveries() {
				if r.EventID == d.EventID && r.Attempt == 1 && s.Acked(r.EnvelopeID) {
					retried = &r
				}
			}
		}
	}
	if retried == nil || retried.Conn == 3 {
		t.Fatalf("the envelope the dead connection read came again as %+v; want retry_attempt 1 on a live connection", retried)
	}
}

// unackedEvents counts the events none of whose envelopes was acked.
func unackedEvents(s *Server) int {
	acked := map[string]bool{}
	all := map[string]bool{}
	for _, d := range s.deliveries {
		all[d.EventID] = true
		if s.ackedLocked(d.EnvelopeID) {
			acked[d.EventID] = true
		}
	}
	return len(all) - len(acked)
}

// The envelope's retry_attempt is on the wire as Slack sends it.
func TestRetryAttemptOnTheWire(t *testing.T) {
	s := New(Config{})
	defer s.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	api := slack.New(s.BotToken(), slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(s.AppToken()))
	_, url, err := api.StartSocketModeContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := s.WaitLiveConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	d, err := s.Inject(Event{Channel: "C1", User: "U1", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Retry(d); err != nil {
		t.Fatal(err)
	}
	var attempts []float64
	for len(attempts) < 2 {
		var m map[string]any
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := ws.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m["type"] == "events_api" {
			attempts = append(attempts, m["retry_attempt"].(float64))
			raw, _ := json.Marshal(m["payload"])
			var p struct {
				EventID string `json:"event_id"`
			}
			_ = json.Unmarshal(raw, &p)
			if p.EventID != d.EventID {
				t.Errorf("event id %q, want %q", p.EventID, d.EventID)
			}
		}
	}
	if attempts[0] != 0 || attempts[1] != 1 {
		t.Errorf("retry_attempt = %v, want [0 1]", attempts)
	}
}

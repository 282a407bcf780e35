package llm_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

func TestRetriesThenSuccess(t *testing.T) {
	tests := []struct {
		name     string
		stream   bool
		replies  []llmtest.Reply
		mod      func(*llm.Config)
		wantReqs int
		minGap   time.Duration // between the first two requests
	}{
		{
			name:     "429 with Retry-After 1",
			replies:  []llmtest.Reply{llmtest.Status(429, "1"), llmtest.Text("ok")},
			mod:      func(c *llm.Config) { c.MaxDelay = 5 * time.Second },
			wantReqs: 2,
			minGap:   time.Second,
		},
		{
			name:     "500 twice",
			replies:  []llmtest.Reply{llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Text("ok")},
			wantReqs: 3,
		},
		{
			name:     "502 with an HTML body",
			replies:  []llmtest.Reply{{Status: 502, Body: "<html>" + llmtest.BodyMarker + "</html>"}, llmtest.Text("ok")},
			wantReqs: 2,
		},
		{
			name:    "timeout then answer",
			replies: []llmtest.Reply{llmtest.Slow(time.Minute, llmtest.Text("late")), llmtest.Text("ok")},
			// The second try, answered at once, has room on a loaded machine.
			mod:      func(c *llm.Config) { c.Timeout = 5 * time.Second },
			wantReqs: 2,
		},
		{
			name:     "streamed 503 then answer",
			stream:   true,
			replies:  []llmtest.Reply{llmtest.Status(503, ""), llmtest.Text("ok")},
			wantReqs: 2,
		},
		{
			name:     "stream ends without finish before any fragment",
			stream:   true,
			replies:  []llmtest.Reply{{FinishReason: "-"}, llmtest.Text("ok")},
			wantReqs: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.replies...)
			c := newClient(t, srv.URL(), tc.mod)
			req := userReq("hi")
			var col collector
			if tc.stream {
				req.OnDelta = col.add
			}
			resp, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Content != "ok" {
				t.Errorf("Content = %q", resp.Content)
			}
			if tc.stream && !slices.Equal(col.frags, []string{"ok"}) {
				t.Errorf("fragments = %q, want exactly one \"ok\"", col.frags)
			}
			if n := requestCount(t, srv, tc.wantReqs); n != tc.wantReqs {
				t.Fatalf("server saw %d requests, want %d", n, tc.wantReqs)
			}
			reqs := srv.Requests()
			mustValid(t, reqs)
			if gap := reqs[1].Received.Sub(reqs[0].Received); gap < tc.minGap {
				t.Errorf("retry came %v after the first try, want >= %v", gap, tc.minGap)
			}
			if u := c.Usage()[llm.PurposeChat]; u.Calls != 1 {
				t.Errorf("usage calls = %d, want 1 (tries are not calls)", u.Calls)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name       string
		stream     bool
		replies    []llmtest.Reply
		responder  llmtest.Reply // for every request once replies run out
		mod        func(*llm.Config)
		wantKind   error
		wantStatus int
		wantReason string
		wantReqs   int
		wantFrags  int
	}{
		{
			name:       "400 is rejected at once",
			replies:    []llmtest.Reply{llmtest.Status(400, "")},
			wantKind:   llm.ErrRejected,
			wantStatus: 400,
			wantReason: "HTTP 400",
			wantReqs:   1,
		},
		{
			name:       "401 names the code",
			replies:    []llmtest.Reply{llmtest.Status(401, "")},
			wantKind:   llm.ErrRejected,
			wantStatus: 401,
			wantReason: "HTTP 401 (invalid_api_key)",
			wantReqs:   1,
		},
		{
			name:       "streamed 400",
			stream:     true,
			replies:    []llmtest.Reply{llmtest.Status(400, "")},
			wantKind:   llm.ErrRejected,
			wantStatus: 400,
			wantReason: "HTTP 400",
			wantReqs:   1,
		},
		{
			name:       "503 on every try",
			responder:  llmtest.Status(503, ""),
			wantKind:   llm.ErrUnavailable,
			wantStatus: 503,
			wantReason: "HTTP 503 after 5 tries",
			wantReqs:   5,
		},
		{
			name:       "429 on every try",
			responder:  llmtest.Status(429, ""),
			mod:        func(c *llm.Config) { c.MaxTries = 3 },
			wantKind:   llm.ErrUnavailable,
			wantStatus: 429,
			wantReason: "rate limited (HTTP 429) after 3 tries",
			wantReqs:   3,
		},
		{
			name:       "garbage body",
			replies:    []llmtest.Reply{llmtest.Malformed()},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "not a chat completion",
			wantReqs:   1,
		},
		{
			name:       "no choices",
			replies:    []llmtest.Reply{{Body: `{"id":"x","object":"chat.completion","choices":[]}`}},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "no choices",
			wantReqs:   1,
		},
		{
			name:       "error object with status 200",
			replies:    []llmtest.Reply{{Body: `{"error":{"message":"` + llmtest.BodyMarker + `"}}`}},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "no choices",
			wantReqs:   1,
		},
		{
			name:       "streamed garbage",
			stream:     true,
			replies:    []llmtest.Reply{llmtest.Malformed()},
			wantKind:   llm.ErrMalformed,
			wantStatus: 200,
			wantReason: "no completion",
			wantReqs:   1,
		},
		{
			name:       "slow beyond the timeout on every try",
			responder:  llmtest.Slow(time.Minute, llmtest.Text("late")),
			mod:        func(c *llm.Config) { c.Timeout = 300 * time.Millisecond; c.MaxTries = 2 },
			wantKind:   llm.ErrUnavailable,
			wantReason: "timed out after 300ms",
			wantReqs:   2,
		},
		{
			name:       "stream broken after a fragment is not retried",
			stream:     true,
			replies:    []llmtest.Reply{{Text: "one two three", CutAfter: 1}},
			wantKind:   llm.ErrUnavailable,
			wantStatus: 200,
			wantReason: "the answer broke off mid-stream",
			wantReqs:   1,
			wantFrags:  1,
		},
		{
			name:   "stream stalled after a fragment times out",
			stream: true,
			replies: []llmtest.Reply{{
				Fragments: []string{"one", " two"}, FragmentDelay: time.Minute,
			}},
			mod:        func(c *llm.Config) { c.Timeout = 3 * time.Second },
			wantKind:   llm.ErrUnavailable,
			wantStatus: 200,
			wantReason: "timed out after 3s",
			wantReqs:   1,
			wantFrags:  1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.replies...)
			resp := tc.responder
			srv.SetResponder(func(llmtest.Request) llmtest.Reply { return resp })
			c := newClient(t, srv.URL(), tc.mod)
			req := userReq("hi")
			var col collector
			if tc.stream {
				req.OnDelta = col.add
			}
			_, err := c.Chat(t.Context(), req)
			checkError(t, err, tc.wantKind, tc.wantStatus, tc.wantReason)
			if n := requestCount(t, srv, tc.wantReqs); n != tc.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tc.wantReqs)
			}
			if len(col.frags) != tc.wantFrags {
				t.Errorf("fragments = %q, want %d", col.frags, tc.wantFrags)
			}
			if u := c.Usage(); len(u) != 0 {
				t.Errorf("failed call recorded usage: %+v", u)
			}
		})
	}
}

// requestCount is the number of requests the server recorded, after
// waiting a while for want of them: a request the client gave up on at its
// timeout may be recorded a moment after Chat returned.
func requestCount(t *testing.T, srv *llmtest.Server, want int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, _ = srv.WaitRequests(ctx, want)
	return len(srv.Requests())
}

// checkError asserts the error's kind, status and reason, and that neither
// the Reason nor the user's sentence carries a provider body or the key.
func checkError(t *testing.T, err error, kind error, status int, reason string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("err = %v, want kind %v", err, kind)
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("err %T is not *llm.Error", err)
	}
	if status != 0 && le.Status != status {
		t.Errorf("Status = %d, want %d", le.Status, status)
	}
	if !strings.Contains(le.Reason, reason) {
		t.Errorf("Reason = %q, want it to contain %q", le.Reason, reason)
	}
	msg := llm.UserMessage(err)
	for _, s := range []string{le.Reason, msg} {
		if strings.Contains(s, llmtest.BodyMarker) || strings.Contains(s, testKey) {
			t.Errorf("user-facing text leaks a body or the key: %q", s)
		}
	}
	if strings.Count(msg, ".") < 1 || strings.Contains(msg, "\n") {
		t.Errorf("UserMessage = %q, want one sentence", msg)
	}
	t.Logf("UserMessage: %s", msg)
}

// deadURL returns a base URL on a port where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/v1"
}

func TestEndpointDown(t *testing.T) {
	t.Run("closed listener", func(t *testing.T) {
		base := deadURL(t)
		c := newClient(t, base, func(c *llm.Config) { c.MaxTries = 2 })
		_, err := c.Chat(t.Context(), userReq("hi"))
		checkError(t, err, llm.ErrUnavailable, 0, "cannot connect to "+base)
		if got, want := llm.UserMessage(err), "The model is unavailable: cannot connect to "+base+"; check that its server is running and that llm.baseURL is right."; got != want {
			t.Errorf("UserMessage = %q, want %q", got, want)
		}
		if err := c.Ping(t.Context()); !errors.Is(err, llm.ErrUnavailable) {
			t.Errorf("Ping = %v, want ErrUnavailable", err)
		}
	})
	t.Run("refused connection is not retried", func(t *testing.T) {
		// With an hour between tries, a retry would end in the deadline.
		c := newClient(t, deadURL(t), func(c *llm.Config) { c.MaxTries, c.BaseDelay = 5, time.Hour })
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		_, err := c.Chat(ctx, userReq("hi"))
		if !errors.Is(err, llm.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrUnavailable at once", err)
		}
		if !strings.Contains(err.Error(), "1 try") {
			t.Errorf("err = %v, want a single try", err)
		}
	})
	t.Run("credentials stay out of the reason", func(t *testing.T) {
		// The user name, the password and the query each hold a secret
		// that is not the API key (which is redacted on its own), and the
		// error chain quotes the request URL (net/http hides only the
		// password, as "***").
		const user, pass, query = "tokenuser-0451", "pass-word-0452", "query-token-0453"
		base := strings.Replace(deadURL(t), "http://", "http://"+user+":"+pass+"@", 1) + "?key=" + query
		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := newClient(t, base, func(c *llm.Config) { c.MaxTries, c.Logger = 1, log })
		_, err := c.Chat(t.Context(), userReq("hi"))
		checkError(t, err, llm.ErrUnavailable, 0, "cannot connect to http://[redacted]@127.0.0.1:")
		perr := c.Ping(t.Context())
		log.Error("turn failed", "err", err, "ping", perr) // as the gateway logs them
		for name, s := range map[string]string{
			"error": err.Error(), "ping": perr.Error(), "user message": llm.UserMessage(err), "log": logs.String(),
		} {
			for _, secret := range []string{user, pass, query} {
				if strings.Contains(s, secret) {
					t.Errorf("%s holds %q: %s", name, secret, s)
				}
			}
		}
	})
	t.Run("server closed mid-test", func(t *testing.T) {
		srv := llmtest.New(t)
		c := newClient(t, srv.URL(), func(c *llm.Config) { c.MaxTries = 2 })
		if _, err := c.Chat(t.Context(), userReq("hi")); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		_, err := c.Chat(t.Context(), userReq("hi"))
		checkError(t, err, llm.ErrUnavailable, 0, "")
	})
}

func TestBackoffWaits(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		replies []llmtest.Reply
		want    []time.Duration
	}{
		{
			name:    "doubling up to MaxDelay",
			replies: []llmtest.Reply{llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Status(500, "")},
			want:    []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second},
		},
		{
			name:    "Retry-After capped at MaxDelay",
			replies: []llmtest.Reply{llmtest.Status(429, "3600")},
			want:    []time.Duration{5 * time.Second},
		},
		{
			name:    "Retry-After as an HTTP date",
			replies: []llmtest.Reply{llmtest.Status(503, now.Add(3*time.Second).Format(http.TimeFormat))},
			want:    []time.Duration{3 * time.Second},
		},
		{
			name:    "unreadable Retry-After falls back to backoff",
			replies: []llmtest.Reply{llmtest.Status(429, "soon")},
			want:    []time.Duration{time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t)
			srv.Push(tc.replies...)
			c := newClient(t, srv.URL(), func(c *llm.Config) {
				c.BaseDelay, c.MaxDelay = time.Second, 5*time.Second
			})
			llm.SetClock(c, func() time.Time { return now })
			var waits []time.Duration
			llm.SetWait(c, func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			})
			if _, err := c.Chat(t.Context(), userReq("hi")); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !slices.Equal(waits, tc.want) {
				t.Errorf("waits = %v, want %v", waits, tc.want)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 4, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		v, ms  string
		want   time.Duration
		wantOK bool
	}{
		{v: "1", want: time.Second, wantOK: true},
		{v: "0", want: 0, wantOK: true},
		{v: "120", want: 2 * time.Minute, wantOK: true},
		{v: "-3"},
		{v: "1.5"},
		{v: "soon"},
		{},
		{v: now.Add(90 * time.Second).Format(http.TimeFormat), want: 90 * time.Second, wantOK: true},
		{v: now.Add(-time.Minute).Format(http.TimeFormat), want: 0, wantOK: true},
		{v: "99999999999999", want: 24 * time.Hour, wantOK: true},
		{v: "20", ms: "250", want: 250 * time.Millisecond, wantOK: true},
		{ms: "1500.5", want: 1500500 * time.Microsecond, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.v+"/"+tc.ms, func(t *testing.T) {
			got, ok := llm.ParseRetryAfter(tc.v, tc.ms, now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ParseRetryAfter(%q, %q) = %v, %v; want %v, %v", tc.v, tc.ms, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dreamgate/dreamgate/internal/backoff"
)

// failure is what one try learned about an error: how to report it and
// whether another try may help.
type failure struct {
	kind   error
	status int
	// reason is safe for a user: no body, no key, no message text.
	reason string
	// perTry: the reason is about one HTTP answer, so the final Reason
	// says how many tries saw it ("HTTP 503 after 5 tries").
	perTry  bool
	timeout bool
	// code is the provider's error code when it is a safe identifier.
	code string
	// contextLength: the provider said the prompt does not fit the model.
	contextLength bool
	retryable     bool
	hasRetryAfter bool
	retryAfter    time.Duration
	err           error
}

// final turns the last failure of a call into the *Error returned.
func (f *failure) final(tries int) *Error {
	reason := f.reason
	if f.perTry && f.kind == ErrUnavailable {
		reason = fmt.Sprintf("%s after %d %s", reason, tries, plural(tries, "try", "tries"))
	}
	return &Error{
		Kind:          f.kind,
		Status:        f.status,
		Code:          f.code,
		ContextLength: f.contextLength,
		Reason:        reason,
		Err:           fmt.Errorf("%d %s: %w", tries, plural(tries, "try", "tries"), f.err),
	}
}

// classify maps an error from go-openai (with what the doer saw) to a
// failure. tctx is the try's context; its cause tells a per-try timeout.
func (c *Client) classify(err error, d *doer, tctx context.Context, timeout time.Duration) *failure {
	f := &failure{err: c.redactErr(err), status: d.status}
	switch cause := context.Cause(tctx); {
	case errors.Is(cause, errTryTimeout):
		f.kind, f.retryable, f.timeout = ErrUnavailable, true, true
		f.reason = "timed out after " + formatDuration(timeout)
		return f
	case errors.Is(cause, errNoFirstByte):
		// Hanging, as far as a chain with another model can tell.
		f.kind, f.retryable, f.timeout = ErrUnavailable, true, true
		f.reason = "no answer began within " + formatDuration(c.cfg.FirstByte)
		return f
	}

	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0:
		f.contextLength = saysContextLength(apiErr.HTTPStatusCode, apiErr.Code, apiErr.Message)
		return c.statusFailure(f, apiErr.HTTPStatusCode, safeCode(apiErr.Code), d)
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode != 0:
		// Before the mid-stream case: an error body go-openai cannot read
		// ({"error":"…"}) comes as a RequestError wrapping an APIError
		// without a status.
		return c.statusFailure(f, reqErr.HTTPStatusCode, "", d)
	case errors.As(err, &apiErr):
		// An error event inside a 200 stream.
		f.kind, f.retryable = ErrUnavailable, true
		f.reason = "the provider reported an error mid-stream"
		return f
	}

	if !d.sent {
		// go-openai refused before sending (model not valid for chat,
		// parameters a reasoning model rejects, a body it cannot encode).
		f.kind = ErrRejected
		f.reason = "the request is not valid for this model"
		return f
	}
	if d.status == 0 {
		return c.networkFailure(f, err)
	}

	// A 2xx whose body could not be read.
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, io.EOF),
		errors.Is(err, openai.ErrTooManyEmptyStreamMessages):
		f.kind = ErrMalformed
		f.reason = "the response was not a chat completion"
	case d.body.complete():
		// The whole body arrived and still did not parse (JSON that stops
		// half-way): the provider sent a bad answer; the connection was
		// fine, and the same request would get the same answer.
		f.kind = ErrMalformed
		f.reason = "the response was not a complete chat completion"
	default:
		// The body broke off (io.ErrUnexpectedEOF, a reset): transient.
		f.kind, f.retryable = ErrUnavailable, true
		f.reason = "the connection to " + c.endpoint + " broke off"
	}
	return f
}

func (c *Client) statusFailure(f *failure, status int, code string, d *doer) *failure {
	f.status = status
	switch {
	case status == http.StatusTooManyRequests:
		f.kind, f.retryable, f.perTry = ErrUnavailable, true, true
		f.reason = "rate limited (HTTP 429)"
	case status >= 500:
		f.kind, f.retryable, f.perTry = ErrUnavailable, true, true
		f.reason = fmt.Sprintf("HTTP %d", status)
	case status >= 400:
		f.kind = ErrRejected
		f.code = code
		f.reason = fmt.Sprintf("HTTP %d", status)
		if code != "" {
			f.reason += " (" + code + ")"
		}
		return f
	default:
		f.kind = ErrMalformed
		f.reason = fmt.Sprintf("unexpected HTTP %d", status)
		return f
	}
	if d.retryAfter != "" || d.retryAfterMS != "" {
		f.retryAfter, f.hasRetryAfter = parseRetryAfter(d.retryAfter, d.retryAfterMS, c.now())
	}
	return f
}

// contextPhrases are what providers write when a prompt does not fit the
// model (OpenAI, vLLM, OpenRouter, Mistral: "maximum context length";
// Anthropic: "prompt is too long"; Gemini: "input token count"; Groq:
// "reduce the length of the messages"), lower-cased. The message is only
// matched, never kept: it may quote the request.
var contextPhrases = []string{"context length", "context_length", "context window", "prompt is too long", "input token count", "reduce the length of the messages"}

// saysContextLength reports whether a 400 or 413 answer says the prompt is
// longer than the model takes.
func saysContextLength(status int, code any, msg string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	if s, ok := code.(string); ok && s == "context_length_exceeded" {
		return true
	}
	msg = strings.ToLower(msg)
	for _, p := range contextPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// reasonConnect opens the reason of a failure to reach the endpoint at
// all, for which UserMessage names the setting that chose it.
const reasonConnect = "cannot connect to "

func (c *Client) networkFailure(f *failure, err error) *failure {
	f.kind, f.retryable = ErrUnavailable, true
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		// Nothing listens there (most often the default local endpoint,
		// which nobody started): retrying for a minute only makes the
		// user wait for the same sentence, which is said at once.
		f.retryable = false
		f.reason = reasonConnect + c.endpoint
	case errors.As(err, &dnsErr), errors.As(err, &opErr) && opErr.Op == "dial":
		f.reason = reasonConnect + c.endpoint
	case errors.As(err, &netErr) && netErr.Timeout():
		// The base http.Client's own Timeout.
		f.timeout = true
		f.reason = "timed out waiting for " + c.endpoint
	default:
		f.reason = "the connection to " + c.endpoint + " failed"
	}
	return f
}

// safeCode admits provider error codes such as "context_length_exceeded":
// identifiers of 1 to 64 of [A-Za-z0-9_.-], never free text that could
// quote the request. A loop, not a regexp: compiling {1,64} at start-up
// cost every run of the binary a fifth of a millisecond.
func safeCode(code any) string {
	s, ok := code.(string)
	if !ok || len(s) == 0 || len(s) > 64 {
		return ""
	}
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return ""
		}
	}
	return s
}

// backoff is the wait after the given (1-based) failed try: BaseDelay
// doubling, capped at MaxDelay.
func (c *Client) backoff(attempt int) time.Duration {
	return backoff.Delay(attempt-1, c.cfg.BaseDelay, c.cfg.MaxDelay)
}

// parseRetryAfter reads Retry-After (delay-seconds or an HTTP date) and,
// when present, OpenAI's finer retry-after-ms. ok is false when neither
// can be read.
func parseRetryAfter(v, ms string, now time.Time) (time.Duration, bool) {
	if ms != "" {
		if n, err := strconv.ParseFloat(ms, 64); err == nil && n >= 0 {
			return time.Duration(n * float64(time.Millisecond)), true
		}
	}
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		// Cap before multiplying so a huge value cannot overflow.
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// doer is the HTTP client one try runs through. go-openai drops response
// headers, so the doer keeps what the retry logic needs (status and
// Retry-After), and it mends request bodies go-openai encodes in a way
// providers refuse or without a field it does not know (see bodyMend).
type doer struct {
	base *http.Client
	mend bodyMend
	// onFirstByte, when set, is called when the first byte of the
	// response body arrives.
	onFirstByte func()

	sent         bool
	status       int
	retryAfter   string
	retryAfterMS string
	// body watches the response body, to tell a body that arrived whole
	// but is not valid JSON from one whose connection broke off.
	body *bodyWatch
}

func (c *Client) newDoer(mend bodyMend) *doer {
	return &doer{base: c.cfg.HTTPClient, mend: mend}
}

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if d.mend.needed() && req.Body != nil {
		if err := d.mend.apply(req); err != nil {
			return nil, fmt.Errorf("mend request body: %w", err)
		}
	}
	d.sent = true
	resp, err := d.base.Do(req)
	if resp != nil {
		d.status = resp.StatusCode
		d.retryAfter = resp.Header.Get("Retry-After")
		d.retryAfterMS = resp.Header.Get("Retry-After-Ms")
		if resp.Body != nil {
			d.body = &bodyWatch{r: resp.Body, onFirst: d.onFirstByte}
			resp.Body = d.body
		}
	}
	return resp, err
}

// bodyWatch records how reading a response body ended.
type bodyWatch struct {
	r       io.ReadCloser
	onFirst func() // called once, when the first byte arrives
	mu      sync.Mutex
	eof     bool  // the body ended cleanly
	failed  error // reading it failed (reset, cut short)
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 && b.onFirst != nil {
		b.onFirst()
		b.onFirst = nil
	}
	if err != nil {
		b.mu.Lock()
		if errors.Is(err, io.EOF) {
			b.eof = true
		} else if b.failed == nil {
			b.failed = err
		}
		b.mu.Unlock()
	}
	return n, err
}

func (b *bodyWatch) Close() error { return b.r.Close() }

// complete reports whether the body was read to its clean end without a
// read error. A nil watch (no response) is not complete.
func (b *bodyWatch) complete() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof && b.failed == nil
}

// formatDuration writes whole seconds as "120s" and anything finer as Go does.
func formatDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

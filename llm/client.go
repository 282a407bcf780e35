package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/dreamgate/dreamgate/internal/backoff"
)

// DefaultBaseURL is the endpoint used when Config.BaseURL is empty: a local
// OpenAI-compatible server on Ollama's port.
const DefaultBaseURL = "http://127.0.0.1:11434/v1"

const (
	defaultTimeout          = 120 * time.Second
	defaultMaxTries         = 5
	defaultBaseDelay        = time.Second
	defaultMaxDelay         = 60 * time.Second
	defaultBreakerThreshold = 5
	defaultBreakerCooldown  = 30 * time.Second
	// defaultFirstByte: hosted models begin a streamed answer within a few
	// seconds, and a warm local one within the time it reads the prompt; a
	// model that thinks long before its first word needs more
	// (Config.FirstByte).
	defaultFirstByte = 30 * time.Second
	// pingTimeout bounds Ping below the chat timeout: a status check must
	// not hang for two minutes on a dead endpoint.
	pingTimeout = 10 * time.Second
	// defaultConcurrency covers the default gateway turn limit (8) with
	// room for Dream, archive calls and a status check.
	defaultConcurrency = 16
	// idleConnTimeout closes a pooled connection unused this long (net/http's
	// default). One the provider closed first costs a new dial, not an
	// error: net/http retries a request on a connection found dead.
	idleConnTimeout = 90 * time.Second
)

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// BaseURL of the OpenAI-compatible API, including the version path
	// ("https://api.openai.com/v1"); empty means DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token when non-empty. It never appears in
	// an error Reason or a log line.
	APIKey string
	// Model is used for every request that does not name its own.
	Model string
	// MaxTokens limits the completion when > 0 (Request.MaxTokens wins).
	MaxTokens int
	// Temperature is sent as given; 0 asks for greedy decoding (go-openai
	// drops a zero temperature, so it is sent as the smallest positive
	// float); a negative value leaves the provider's default.
	Temperature float32
	// Timeout bounds one try; 0 means 120s. For streamed calls it bounds the
	// wait for the first chunk and then for each next one, so a long answer
	// that keeps flowing is not cut off.
	Timeout time.Duration
	// FirstByte bounds the wait for the first byte of a streamed answer
	// when a chain has another model to ask: a model that has not begun to
	// answer by then is taken as hanging, and the next one is asked. 0
	// means 30s; a value above Timeout is Timeout. Unstreamed calls, whose
	// answer arrives whole, and calls with no other model to go to wait
	// the whole Timeout.
	FirstByte time.Duration
	// MaxTries is the number of tries per call, the first included; 0 means 5.
	MaxTries int
	// BaseDelay is the wait before the second try, doubling for each next
	// one; 0 means 1s.
	BaseDelay time.Duration
	// MaxDelay caps the backoff and a provider's Retry-After; 0 means 60s.
	MaxDelay time.Duration
	// BreakerThreshold is the number of failed calls in a row after which
	// a call with no other model to go to fails fast while the model cools
	// down (the breaker is open); 0 means 5. Chains pass a failing model
	// over from its first failure.
	BreakerThreshold int
	// BreakerCooldown is how long a model is passed over after a failed
	// call, doubled at each cooldown in a row up to ten minutes; then one
	// trial call tries it. 0 means 30s.
	BreakerCooldown time.Duration
	// Concurrency is the most calls expected at once (the gateway's turn
	// limit plus Dream); it sizes the keep-alive pool of the default HTTP
	// client, so a burst reuses connections instead of dialing again. 0
	// means 16. It limits nothing: more calls than this still run.
	Concurrency int
	// HTTPClient is the base client for every request; nil means one with
	// Go's default transport settings and a keep-alive pool of Concurrency
	// connections. A given client is used as it is (Concurrency does not
	// apply); its own Timeout, if any, also applies.
	HTTPClient *http.Client
	// PromptCacheKey sends OpenAI's prompt_cache_key (a hash of
	// Request.CacheKey) to any endpoint. It is sent to api.openai.com
	// regardless; other OpenAI-compatible servers may refuse a field they
	// do not know, so there it waits for this switch.
	PromptCacheKey bool
	// Logger receives debug lines per try and breaker changes; nil discards.
	Logger *slog.Logger
	// Names says where the key, endpoint and model were set, for the
	// operator's hints in UserMessage ("check OPENAI_API_KEY"); the caller
	// knows, this package never reads the environment.
	Names Names
}

// Names are the setting names UserMessage tells the operator to check: a
// config key or an environment variable. An empty field means the config
// key (llm.apiKey, llm.baseURL, llm.model). When no key is set, APIKey
// names where one can be set ("no API key is set (APIKey)").
type Names struct {
	APIKey, BaseURL, Model string
}

func (n Names) withDefaults() Names {
	if n.APIKey == "" {
		n.APIKey = "llm.apiKey"
	}
	if n.BaseURL == "" {
		n.BaseURL = "llm.baseURL"
	}
	if n.Model == "" {
		n.Model = "llm.model"
	}
	return n
}

// named gives an *Error in err the client's setting names, so that
// UserMessage's hint names what the operator actually set.
func (c *Client) named(err error) error {
	var le *Error
	if errors.As(err, &le) {
		le.names = c.cfg.Names
		le.noKey = c.cfg.APIKey == ""
	}
	return err
}

func (cfg Config) withDefaults() Config {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.FirstByte <= 0 {
		cfg.FirstByte = defaultFirstByte
	}
	cfg.FirstByte = min(cfg.FirstByte, cfg.Timeout)
	if cfg.MaxTries <= 0 {
		cfg.MaxTries = defaultMaxTries
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = defaultBaseDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = defaultMaxDelay
	}
	if cfg.BaseDelay > cfg.MaxDelay {
		cfg.BaseDelay = cfg.MaxDelay
	}
	if cfg.BreakerThreshold <= 0 {
		cfg.BreakerThreshold = defaultBreakerThreshold
	}
	if cfg.BreakerCooldown <= 0 {
		cfg.BreakerCooldown = defaultBreakerCooldown
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = defaultConcurrency
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = pooledHTTPClient(cfg.Concurrency)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Names = cfg.Names.withDefaults()
	return cfg
}

// pooledHTTPClient is the default client: Go's default transport (proxy
// from the environment, dial and TLS timeouts, HTTP/2) keeping up to n idle
// connections to the endpoint. The default transport keeps 2, so in a burst
// of n concurrent calls most connections were closed on return and the
// next calls dialed again: a new TCP and TLS handshake each.
func pooledHTTPClient(n int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = n
	t.MaxIdleConns = max(t.MaxIdleConns, n)
	t.IdleConnTimeout = idleConnTimeout
	return &http.Client{Transport: reuseStreams{t}}
}

// reuseStreams keeps a finished stream's connection: go-openai stops
// reading at "data: [DONE]" and closes the body before the chunked
// encoding's last bytes are read, and net/http closes a connection whose
// body was closed unread. So Close reads the rest first, but only after
// [DONE] (a stream cut short by an error is closed at once) and at most
// maxStreamTail bytes.
type reuseStreams struct{ base http.RoundTripper }

// maxStreamTail bounds what Close reads after [DONE]: normally nothing but
// the chunked terminator.
const maxStreamTail = 4 << 10

// sseDone ends an OpenAI stream.
const sseDone = "data: [DONE]"

func (t reuseStreams) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &streamBody{ReadCloser: resp.Body}
	}
	return resp, err
}

// streamBody notes when the bytes read so far hold sseDone.
type streamBody struct {
	io.ReadCloser
	done bool
	// tail holds the last bytes read, to find a marker split across reads.
	tail  [len(sseDone) - 1]byte
	ntail int
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && !b.done {
		b.see(p[:n])
	}
	return n, err
}

func (b *streamBody) see(p []byte) {
	const k = len(sseDone) - 1
	var edge [2 * k]byte
	m := copy(edge[:], b.tail[:b.ntail])
	m += copy(edge[m:], p[:min(len(p), k)])
	if bytes.Contains(edge[:m], []byte(sseDone)) || bytes.Contains(p, []byte(sseDone)) {
		b.done = true
	}
	if len(p) >= k {
		b.ntail = copy(b.tail[:], p[len(p)-k:])
	} else {
		b.ntail = copy(b.tail[:], edge[max(0, m-k):m])
	}
}

func (b *streamBody) Close() error {
	if b.done {
		_, _ = io.CopyN(io.Discard, b.ReadCloser, maxStreamTail)
	}
	return b.ReadCloser.Close()
}

// Client calls one OpenAI-compatible endpoint. It is safe for concurrent
// use; the record of its failures and the usage counters are shared by all
// calls, and by every chain that lists it.
type Client struct {
	cfg Config
	// endpoint is BaseURL with credentials and query redacted, the only form
	// of the URL that may reach a Reason.
	endpoint string
	// cacheHint: prompt_cache_key is sent (Config.PromptCacheKey, or
	// OpenAI's own endpoint).
	cacheHint bool
	log       *slog.Logger
	rec       *record

	// now, wait and afterFunc are the clock; tests replace them.
	now       func() time.Time
	wait      func(ctx context.Context, d time.Duration) error
	afterFunc func(d time.Duration, f func()) timer

	mu    sync.Mutex
	usage map[string]Usage
	state State
}

// New returns a Client for cfg. It does not contact the endpoint; use Ping
// for that.
func New(cfg Config) *Client {
	cfg = cfg.withDefaults()
	return &Client{
		cfg:       cfg,
		endpoint:  RedactURL(cfg.BaseURL),
		cacheHint: cfg.PromptCacheKey || isOpenAI(cfg.BaseURL),
		log:       cfg.Logger,
		rec:       newRecord(cfg.BreakerThreshold, cfg.BreakerCooldown),
		now:       time.Now,
		wait:      backoff.Sleep,
		afterFunc: func(d time.Duration, f func()) timer { return time.AfterFunc(d, f) },
		usage:     make(map[string]Usage),
	}
}

// Model returns the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// Usage returns a snapshot of the tokens used by successful calls, keyed by
// Request.Purpose (an empty purpose is counted as PurposeChat).
func (c *Client) Usage() map[string]Usage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Usage, len(c.usage))
	for k, v := range c.usage {
		out[k] = v
	}
	return out
}

func (c *Client) record(purpose string, u Usage) {
	u.Calls = 1
	c.mu.Lock()
	c.usage[purpose] = c.usage[purpose].Add(u)
	c.mu.Unlock()
}

// Chat sends one chat-completions request, retrying transient failures, and
// returns the model's answer. When req.OnDelta is set the answer is
// streamed: OnDelta is called on the calling goroutine with each content
// fragment, and the returned Response is the same as unstreamed.
//
// Errors: an *Error whose Kind is ErrUnavailable (unreachable, 429/5xx or
// timeouts after all tries, broken stream, open breaker), ErrRejected (a
// 4xx other than 429, or a request the library refuses to send) or
// ErrMalformed (a 2xx that is not a chat completion); or, when ctx ended,
// an error wrapping ctx.Err().
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("chat with %s: %w", c.modelOf(req), err)
	}
	trial, err := c.rec.force(c.now())
	if err != nil {
		return Response{}, c.named(err)
	}
	return c.chat(ctx, req, trial)
}

// modelOf is the model a request is sent to.
func (c *Client) modelOf(req Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.cfg.Model
}

// chat makes a call the record let through; trial: it holds the trial.
func (c *Client) chat(ctx context.Context, req Request, trial bool) (Response, error) {
	model, purpose := c.modelOf(req), req.Purpose
	if purpose == "" {
		purpose = PurposeChat
	}
	if trial {
		c.log.Debug("llm model back from its cooldown: trial call", "model", model, "purpose", purpose)
	}
	call := &call{
		client:  c,
		model:   model,
		purpose: purpose,
		onDelta: req.OnDelta,
	}
	resp, err := call.run(ctx, req)
	err = c.named(err)

	now := c.now()
	c.observe(outcomeOf(ctx, err), err, now)
	switch c.rec.done(trial, coolOutcomeOf(ctx, err), err, now) {
	case recordOpened:
		c.log.Warn("llm breaker open: calls with no other model fail fast while the model cools down", "model", model, "reason", reasonOf(err))
	case recordClosed:
		c.log.Info("llm breaker closed: the model serves again", "model", model)
	}
	if err != nil {
		return Response{}, err
	}
	// Usage.Calls counts completed calls; this Response is one, so callers
	// that sum Response.Usage (the agent loop) count calls right too.
	resp.Usage.Calls = 1
	c.record(purpose, resp.Usage)
	return resp, nil
}

// Ping checks that the endpoint answers (GET {BaseURL}/models), with one
// try bounded by min(Timeout, 10s). Any HTTP answer proves it reachable;
// the error then says what it answered: ErrRejected for a 4xx (a refused
// key, a server without /models), ErrUnavailable for 5xx, network errors
// and timeouts, ErrMalformed for a 2xx that is not a model list. Ping
// neither consults nor feeds the breaker.
func (c *Client) Ping(ctx context.Context) error {
	d := c.newDoer(bodyMend{})
	cl := openai.NewClientWithConfig(c.openaiConfig(d))
	timeout := min(c.cfg.Timeout, pingTimeout)
	tctx, cancel := context.WithTimeoutCause(ctx, timeout, errTryTimeout)
	defer cancel()
	_, err := cl.ListModels(tctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("ping %s: %w", c.endpoint, ctx.Err())
	}
	f := c.classify(err, d, tctx, timeout)
	c.log.Debug("llm ping failed", "status", f.status, "reason", f.reason)
	return c.named(f.final(1))
}

func (c *Client) openaiConfig(d *doer) openai.ClientConfig {
	oc := openai.DefaultConfig(c.cfg.APIKey)
	oc.BaseURL = c.cfg.BaseURL
	oc.HTTPClient = d
	return oc
}

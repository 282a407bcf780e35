package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Named is one model of the config's list: its client, under the name the
// config gives it, and what calls through chains counted of it. A model
// several chains list is one Named, so a failure one purpose meets passes
// it over for all.
//
// Whether it serves is its client's one record (see record): a failure
// that says the model cannot serve (unreachable, overloaded, hanging,
// rate-limited past its retries, a refused key, no credit, an unknown
// model id, an unreadable answer) makes chains pass it over for its
// client's BreakerCooldown (30 s by default), doubled at each failure in a
// row up to ten minutes. After that one call tries it again, with one try
// when another model can answer after it (the other calls still pass it
// over); its success brings it back.
type Named struct {
	name   string
	client *Client

	mu    sync.Mutex
	stats map[string]ModelStats
}

// ModelStats counts one model's calls for one purpose made through chains.
type ModelStats struct {
	// Calls were sent to it; Failures of them failed (a call its caller
	// gave up is neither); after Fallbacks of those the next model of the
	// chain was asked.
	Calls, Failures, Fallbacks int
}

// NewNamed names a client.
func NewNamed(name string, client *Client) *Named {
	return &Named{name: name, client: client, stats: map[string]ModelStats{}}
}

// Name is the model's name in the config.
func (m *Named) Name() string { return m.name }

// Client is the model's client.
func (m *Named) Client() *Client { return m.client }

// Stats returns the call counts by purpose.
func (m *Named) Stats() map[string]ModelStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.stats)
}

// Status is what the model's record says now.
func (m *Named) Status() ModelStatus {
	s := ModelStatus{Name: m.name, ID: m.client.Model(), Endpoint: m.client.endpoint}
	s.CoolingUntil, s.Reason = m.client.rec.status()
	s.BreakerOpen = m.client.rec.isOpen()
	return s
}

// Cooling reports whether chains pass the model over now.
func (m *Named) Cooling() bool { return m.client.rec.cooling(m.client.now()) }

func (m *Named) count(purpose string, f func(*ModelStats)) {
	m.mu.Lock()
	s := m.stats[purpose]
	f(&s)
	m.stats[purpose] = s
	m.mu.Unlock()
}

// Chain is the models that serve one purpose, in order of preference. It
// has the Client's Chat, so the callers do not know there are several.
//
// A call goes to the first model not cooling down; when that model cannot
// serve (see Named) or refuses the prompt as too long for it, the next one
// is asked. When every model cools down, each is tried anyway, in order:
// a call has a chance, a certain failure none. Other refusals (a request
// the provider calls malformed) are returned as they are: the next model
// would be sent the same request.
//
// A streamed answer that failed after some of it reached Request.OnDelta
// is not asked of the next model: its answer would repeat, in the channel,
// what the person has already read. The call fails; the failed model cools
// down, so the next call goes to the next model.
//
// The log says, once, when the chain's calls go to another model and when
// they come back; a refused key, an unknown model, a lack of credit and a
// prompt too long are logged each time they make the chain move on.
type Chain struct {
	purpose string
	models  []*Named
	log     *slog.Logger

	mu       sync.Mutex
	serving  int // the index of the model that answered last
	servedAt time.Time
	served   bool // a call has been answered
}

// NewChain returns the chain of purpose over models (at least one); a nil
// logger discards.
func NewChain(purpose string, models []*Named, logger *slog.Logger) *Chain {
	if len(models) == 0 {
		panic("llm: a chain needs a model")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Chain{purpose: purpose, models: models, log: logger}
}

// Purpose is the purpose the chain serves.
func (c *Chain) Purpose() string { return c.purpose }

// Models are the chain's models, in order.
func (c *Chain) Models() []*Named { return append([]*Named(nil), c.models...) }

// Model is the model id of the model that answered last (the first model's
// before any did).
func (c *Chain) Model() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.models[c.serving].client.Model()
}

// now is the first model's clock (tests set it).
func (c *Chain) now() time.Time { return c.models[0].client.now() }

// Chat sends req to the first model that can serve it. Errors are the
// Client's; when more than one model failed, a *ChainError holding each
// failure, which unwraps to the last one.
func (c *Chain) Chat(ctx context.Context, req Request) (Response, error) {
	if req.Purpose == "" {
		req.Purpose = PurposeChat
	}
	var shown bool
	if onDelta := req.OnDelta; onDelta != nil {
		req.OnDelta = func(s string) {
			shown = true
			onDelta(s)
		}
	}
	order := c.order(c.now())
	var failed []ModelFailure
	for k, p := range order {
		m := c.models[p.i]
		m.count(req.Purpose, func(s *ModelStats) { s.Calls++ })
		var resp Response
		err := p.fast
		if err == nil {
			try := req
			// With another model to ask, this one's retries must not
			// make the caller wait: see call.retry and Config.FirstByte.
			try.fallback = k+1 < len(order)
			if p.trial && try.fallback {
				// Back from its cooldown: one try, not the caller
				// waiting through its retries again.
				try.tries = 1
			}
			resp, err = m.client.chat(ctx, try, p.trial)
		}
		if err == nil {
			c.answered(p.i, req.Purpose, failed, c.now())
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, err // the caller gave up: that says nothing of the model
		}
		m.count(req.Purpose, func(s *ModelStats) { s.Failures++ })
		failed = append(failed, ModelFailure{Model: m.name, Err: err})
		v := verdictOf(err)
		var next *Named
		if k+1 < len(order) {
			next = c.models[order[k+1].i]
		}
		switch {
		case !v.next || next == nil:
			return Response{}, c.failure(failed)
		case shown:
			c.log.Warn("the answer broke off mid-stream; the next model is not asked, so the part already shown is not repeated",
				"model", m.name, "purpose", req.Purpose, "next", next.name, "reason", reasonOf(err))
			return Response{}, c.failure(failed)
		}
		m.count(req.Purpose, func(s *ModelStats) { s.Fallbacks++ })
		c.logFallback(m, next, req.Purpose, v, err)
	}
	return Response{}, c.failure(failed) // unreachable: the last pick returns
}

// pick is a model a call will try, in order: trial, it holds the model's
// trial; fast, the model is not tried but fails fast (its breaker open).
type pick struct {
	i     int
	trial bool
	fast  error
}

// order is the models a call tries: those not cooling down; when every
// one does, each of them anyway (a call has a chance, a certain failure
// none), but for those whose breaker is open.
func (c *Chain) order(now time.Time) []pick {
	var order []pick
	for i, m := range c.models {
		if ok, trial := m.client.rec.available(now); ok {
			order = append(order, pick{i: i, trial: trial})
		}
	}
	if len(order) > 0 {
		return order
	}
	for i, m := range c.models {
		trial, err := m.client.rec.force(now)
		if err != nil {
			err = m.client.named(err)
		}
		order = append(order, pick{i: i, trial: trial, fast: err})
	}
	return order
}

// answered records that model i answered, and logs when that is another
// model than the one that answered the chain's previous call.
func (c *Chain) answered(i int, purpose string, failed []ModelFailure, now time.Time) {
	c.mu.Lock()
	prev := c.serving
	c.serving, c.servedAt, c.served = i, now, true
	c.mu.Unlock()
	switch {
	case i > prev:
		reasons := make([]string, 0, len(failed))
		for _, f := range failed {
			reasons = append(reasons, f.Model+": "+reasonOf(f.Err))
		}
		c.log.Warn("model chain switched: another model answers until the one before it serves again",
			"purpose", purpose, "from", c.models[prev].name, "to", c.models[i].name, "reasons", strings.Join(reasons, "; "))
	case i < prev:
		c.log.Info("model chain switched back: an earlier model serves again",
			"purpose", purpose, "from", c.models[prev].name, "to", c.models[i].name)
	}
}

// logFallback says why the chain asks next after m failed, where the
// operator must act on the cause: a fallback must not hide it.
func (c *Chain) logFallback(m, next *Named, purpose string, v verdict, err error) {
	args := []any{"model", m.name, "purpose", purpose, "next", next.name, "reason", reasonOf(err)}
	switch v.kind {
	case failAuth:
		c.log.Error("the model's provider refused its key; the next model of the chain is asked", append(args, "check", UserMessage(err))...)
	case failCredit:
		c.log.Error("the model's provider wants payment (out of credit); the next model of the chain is asked", args...)
	case failNotFound:
		c.log.Error("the model was not found at its endpoint; the next model of the chain is asked", append(args, "check", UserMessage(err))...)
	case failContext:
		c.log.Warn("the prompt is longer than the model takes; the next model of the chain is asked. Its contextWindow is set larger than the window it serves", args...)
	default:
		c.log.Debug("model failed; the next model of the chain is asked", args...)
	}
}

func (c *Chain) failure(failed []ModelFailure) error {
	if len(failed) == 1 {
		return failed[0].Err
	}
	return &ChainError{Purpose: c.purpose, Failures: failed}
}

// State is what the chain's models last learned of their endpoints, as
// one: reachable when one of them is, failing fast when all are. A chain of
// one model is that model's State.
func (c *Chain) State() State {
	if len(c.models) == 1 {
		return c.models[0].client.State()
	}
	var out State
	out.BreakerOpen = true
	for _, m := range c.models {
		s := m.client.State()
		out.Known = out.Known || s.Known
		out.Reachable = out.Reachable || (s.Known && s.Reachable)
		out.BreakerOpen = out.BreakerOpen && s.BreakerOpen
		if s.LastErrorAt.After(out.LastErrorAt) {
			out.LastErrorAt, out.LastErrorClass = s.LastErrorAt, s.LastErrorClass
		}
		if s.LastCallAt.After(out.LastCallAt) {
			out.LastCallAt = s.LastCallAt
		}
	}
	return out
}

// Status is the chain as /status shows it.
func (c *Chain) Status() ChainStatus {
	s := ChainStatus{Purpose: c.purpose}
	for _, m := range c.models {
		s.Models = append(s.Models, m.Status())
	}
	c.mu.Lock()
	if c.served {
		s.Served, s.ServedAt = c.models[c.serving].name, c.servedAt
	}
	c.mu.Unlock()
	return s
}

// kinds of failure a chain moves on after, for its log.
const (
	failOther = iota
	failAuth
	failCredit
	failNotFound
	failContext
)

// verdict is what a chain does after a model failed: ask the next model
// (next), and cool this one down (cool).
type verdict struct {
	next, cool bool
	kind       int
}

func verdictOf(err error) verdict {
	var le *Error
	if !errors.As(err, &le) {
		return verdict{}
	}
	switch {
	case errors.Is(le.Kind, ErrUnavailable), errors.Is(le.Kind, ErrMalformed):
		return verdict{next: true, cool: true}
	case !errors.Is(le.Kind, ErrRejected):
		return verdict{}
	case le.ContextLength:
		// The prompt, not the model: it stays in for shorter ones.
		return verdict{next: true, kind: failContext}
	case le.Status == http.StatusUnauthorized, le.Status == http.StatusForbidden:
		return verdict{next: true, cool: true, kind: failAuth}
	case le.Status == http.StatusPaymentRequired:
		return verdict{next: true, cool: true, kind: failCredit}
	case le.Status == http.StatusNotFound, le.Code == "model_not_found":
		return verdict{next: true, cool: true, kind: failNotFound}
	}
	return verdict{}
}

// reasonOf is an error's safe reason, for logs and /status.
func reasonOf(err error) string {
	var le *Error
	if errors.As(err, &le) && le.Reason != "" {
		return le.Reason
	}
	if errors.As(err, &le) {
		return le.Kind.Error()
	}
	return "failed"
}

// ModelFailure is one model's failure within a chain's call.
type ModelFailure struct {
	Model string
	Err   error
}

// ChainError is a call on which every model tried failed, in the order
// tried. It unwraps to the last failure, the one that ended the call.
type ChainError struct {
	Purpose  string
	Failures []ModelFailure
}

func (e *ChainError) Error() string {
	parts := make([]string, 0, len(e.Failures))
	for _, f := range e.Failures {
		parts = append(parts, f.Model+": "+f.Err.Error())
	}
	return fmt.Sprintf("%s: no model of the chain answered: %s", e.Purpose, strings.Join(parts, "; "))
}

func (e *ChainError) Unwrap() error { return e.Failures[len(e.Failures)-1].Err }

// ChainStatus is a purpose's chain as /status and `dreamgate status` show
// it.
type ChainStatus struct {
	Purpose string
	Models  []ModelStatus
	// Served names the model that answered the chain's last call, ""
	// before any did; ServedAt is when.
	Served   string
	ServedAt time.Time
}

// ModelStatus is one model of a chain.
type ModelStatus struct {
	Name string
	// ID is the model's id at its provider; Endpoint its URL, redacted.
	ID, Endpoint string
	// CoolingUntil is when a model that failed is tried again (zero when
	// it did not fail); Reason is the failure's safe reason.
	CoolingUntil time.Time
	Reason       string
	BreakerOpen  bool
}

// Text is the chain in one line: its models in order, which answered
// last, and which cool down. The operator reads why and for how long; a
// person in a channel only that a model is not answering.
func (s ChainStatus) Text(now time.Time, operator bool) string {
	names := make([]string, 0, len(s.Models))
	var notes []string
	for _, m := range s.Models {
		names = append(names, m.Name)
		if m.CoolingUntil.IsZero() {
			continue
		}
		switch {
		case !operator:
			notes = append(notes, m.Name+" is not answering right now")
		case now.Before(m.CoolingUntil):
			notes = append(notes, fmt.Sprintf("%s failed (%s), tried again in %s", m.Name, m.Reason, ceilSeconds(m.CoolingUntil.Sub(now))))
		default:
			notes = append(notes, fmt.Sprintf("%s failed (%s), tried again at the next call", m.Name, m.Reason))
		}
	}
	line := s.Purpose + ": " + strings.Join(names, " → ")
	if s.Served != "" && len(s.Models) > 1 {
		line += "; " + s.Served + " answered last"
	}
	if len(notes) > 0 {
		line += "; " + strings.Join(notes, "; ")
	}
	return line
}

// Router sends each call to the chain of its Request.Purpose (the chat
// chain for a purpose without one). It has the Client's Chat, so the
// gateway, the consolidator and Dream take it as their model unchanged.
type Router struct {
	chains map[string]*Chain
	order  []*Chain
}

// NewRouter routes to chains by their purpose; the first is the chat
// chain and serves every purpose without a chain of its own.
func NewRouter(chains ...*Chain) *Router {
	if len(chains) == 0 {
		panic("llm: a router needs a chain")
	}
	r := &Router{chains: map[string]*Chain{}}
	for _, c := range chains {
		if _, dup := r.chains[c.purpose]; !dup {
			r.chains[c.purpose] = c
			r.order = append(r.order, c)
		}
	}
	return r
}

// Chain returns the chain that serves purpose.
func (r *Router) Chain(purpose string) *Chain {
	if c, ok := r.chains[purpose]; ok {
		return c
	}
	return r.order[0]
}

// Chains lists the chains, the chat chain first.
func (r *Router) Chains() []*Chain { return append([]*Chain(nil), r.order...) }

// Models lists every model of the chains once, in the order they first
// appear.
func (r *Router) Models() []*Named {
	var out []*Named
	seen := map[*Named]bool{}
	for _, c := range r.order {
		for _, m := range c.models {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// Chat sends req through the chain of its purpose.
func (r *Router) Chat(ctx context.Context, req Request) (Response, error) {
	purpose := req.Purpose
	if purpose == "" {
		purpose = PurposeChat
	}
	return r.Chain(purpose).Chat(ctx, req)
}

// State is the chat chain's State.
func (r *Router) State() State { return r.order[0].State() }

// Model is the model id of the chat chain's model that answered last.
func (r *Router) Model() string { return r.order[0].Model() }

// Usage is the tokens of every model's successful calls, by purpose.
func (r *Router) Usage() map[string]Usage {
	out := map[string]Usage{}
	for _, m := range r.Models() {
		for p, u := range m.client.Usage() {
			out[p] = out[p].Add(u)
		}
	}
	return out
}

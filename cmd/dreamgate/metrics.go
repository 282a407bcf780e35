package main

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/dreamgate/dreamgate/consolidator"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/metrics"
)

// chatModel is the one call every part makes of the model (gateway.Model,
// consolidator.Model and dream.Model have this method set).
type chatModel interface {
	Chat(ctx context.Context, req llm.Request) (llm.Response, error)
}

// observedModel is the LLM client as chat turns, archives and Dream call it:
// counted per purpose and outcome when the gateway serves /metrics.
func (a *app) observedModel() chatModel {
	if a.metrics == nil {
		return a.model
	}
	return countedModel{m: a.model, obs: a.metrics}
}

// countedModel counts each model call by purpose and outcome; the tokens
// are read from the client's usage at scrape time.
type countedModel struct {
	m   chatModel
	obs *metrics.Metrics
}

func (c countedModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := c.m.Chat(ctx, req)
	purpose := req.Purpose
	if purpose == "" {
		purpose = llm.PurposeChat
	}
	c.obs.ModelCall(purpose, callOutcome(err))
	return resp, err
}

// callOutcome names how a model call ended (llm.Client's error contract).
func callOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, llm.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, llm.ErrRejected):
		return "rejected"
	case errors.Is(err, llm.ErrMalformed):
		return "malformed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	default:
		return "error"
	}
}

// observedArchives counts the archive rounds and raw fallbacks in the
// reports of every consolidator call the gateway makes.
func (a *app) observedArchives(c gateway.Consolidator) gateway.Consolidator {
	if a.metrics == nil {
		return c
	}
	return archiveNotices{Consolidator: c, notice: func(rep consolidator.Report) { a.metrics.Archived(rep.Rounds, rep.Raw) }}
}

// archiveNotices passes every consolidator call on, and tells notice of
// each report that archived something (rounds, or a raw fallback).
type archiveNotices struct {
	gateway.Consolidator
	notice func(consolidator.Report)
}

func (c archiveNotices) Before(ctx context.Context, s consolidator.Session, p consolidator.Prompt) (consolidator.Prompt, consolidator.Report, error) {
	p, rep, err := c.Consolidator.Before(ctx, s, p)
	c.tell(rep)
	return p, rep, err
}

func (c archiveNotices) After(ctx context.Context, s consolidator.Session, p consolidator.Prompt, sent consolidator.Sent) (consolidator.Report, error) {
	rep, err := c.Consolidator.After(ctx, s, p, sent)
	c.tell(rep)
	return rep, err
}

func (c archiveNotices) ArchiveTail(ctx context.Context, s consolidator.Session) (consolidator.Report, error) {
	rep, err := c.Consolidator.ArchiveTail(ctx, s)
	c.tell(rep)
	return rep, err
}

func (c archiveNotices) tell(rep consolidator.Report) {
	if rep.Rounds > 0 || rep.Raw {
		c.notice(rep)
	}
}

// gatewayObserver and dreamObserver are the metrics as each package's
// observer, or nil (never a nil pointer in an interface).
func (a *app) gatewayObserver() gateway.Observer {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
}

func (a *app) dreamObserver() dream.Observer {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
}

// metricsSources are the readers /metrics calls at scrape time: state the
// gateway, the LLM client and the history already keep.
func metricsSources(g *gateway.Gateway, model *llm.Router, ledger *dream.Ledger) metrics.Sources {
	return metrics.Sources{
		QueueDepth: g.QueueDepth,
		Tokens: func() map[string]metrics.Tokens {
			out := map[string]metrics.Tokens{}
			for purpose, u := range model.Usage() {
				out[purpose] = metrics.Tokens{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Cached: u.CachedTokens}
			}
			return out
		},
		// The chat chain: every model of it failing fast.
		BreakerOpen: func() bool { return model.State().BreakerOpen },
		Models: func() []metrics.ModelCalls {
			var out []metrics.ModelCalls
			for _, m := range model.Models() {
				usage, stats := m.Client().Usage(), m.Stats()
				for purpose, st := range stats {
					u := usage[purpose]
					out = append(out, metrics.ModelCalls{Model: m.Name(), Purpose: purpose,
						Calls: st.Calls, Failures: st.Failures, Fallbacks: st.Fallbacks,
						PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens})
				}
			}
			return out
		},
		Cooling: func() map[string]bool {
			out := map[string]bool{}
			for _, m := range model.Models() {
				out[m.Name()] = m.Cooling()
			}
			return out
		},
		DreamBacklog: func() (int, error) {
			return ledger.Backlog()
		},
		Channels: func() map[string]metrics.Channel {
			out := map[string]metrics.Channel{}
			for name, h := range g.Health() {
				out[name] = metrics.Channel{State: h.State, Reconnects: h.Reconnects, RateLimitWaits: h.RateLimitWaits}
			}
			return out
		},
	}
}

// metricsEndpoint serves GET /metrics beside /healthz: 503 until the
// gateway is wired.
type metricsEndpoint struct {
	h atomic.Pointer[http.Handler]
}

func (e *metricsEndpoint) set(h http.Handler) { e.h.Store(&h) }

func (e *metricsEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := e.h.Load()
	if h == nil {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

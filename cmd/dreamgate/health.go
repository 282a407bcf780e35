package main

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/mcp"
)

// healthState serves GET /healthz and GET /readyz, and GET /metrics
// beside them.
type healthState struct {
	g     atomic.Pointer[gateway.Gateway]
	model atomic.Pointer[healthModel]
	// chains, set when the config names several models, adds each
	// purpose's chain to the report.
	chains   atomic.Pointer[llm.Router]
	stopping atomic.Bool
	mcp      atomic.Pointer[mcp.Manager] // nil: no MCP servers
	metrics  metricsEndpoint
	// cluster, set when the gateway is one of a database's processes,
	// lists them (processes.go).
	cluster atomic.Pointer[clusterSource]
}

// modelSource is what the health report reads of the model: an
// *llm.Client, or the *llm.Router of every purpose (its chat chain).
type modelSource interface {
	State() llm.State
	Model() string
}

type healthModel struct{ m modelSource }

func (h *healthState) set(g *gateway.Gateway, model modelSource) {
	h.model.Store(&healthModel{model})
	h.g.Store(g)
}

// healthReport is the JSON of /healthz and /readyz.
type healthReport struct {
	// Status: "starting", "ok", "degraded" (a channel is not connected) or
	// "stopping". Only "ok" answers 200.
	Status   string                     `json:"status"`
	Ready    bool                       `json:"ready"`
	Channels map[string]channels.Health `json:"channels"`
	Model    *modelHealth               `json:"model,omitempty"`
	// MCP details each MCP server; one that is down does not make the
	// gateway degraded (its chats still work).
	MCP []mcp.ServerStatus `json:"mcp,omitempty"`
	// Chains are each purpose's models when the config names several;
	// `dreamgate status` reads which answered last here.
	Chains []chainHealth `json:"chains,omitempty"`
	// Processes are the database's live processes and what each holds,
	// when the gateway is one of them (store.postgres).
	Processes *clusterHealth `json:"processes,omitempty"`
}

// chainHealth is one purpose's chain of models.
type chainHealth struct {
	Purpose string   `json:"purpose"`
	Models  []string `json:"models"`
	// Served names the model that answered last ("" before any did).
	Served   string         `json:"served,omitempty"`
	ServedAt *time.Time     `json:"servedAt,omitempty"`
	Cooling  []coolingModel `json:"cooling,omitempty"`
}

// coolingModel is a model passed over since it failed, until Until.
type coolingModel struct {
	Model  string    `json:"model"`
	Until  time.Time `json:"until"`
	Reason string    `json:"reason"`
}

func chainsHealth(r *llm.Router) []chainHealth {
	var out []chainHealth
	for _, c := range r.Chains() {
		st := c.Status()
		ch := chainHealth{Purpose: st.Purpose, Served: st.Served}
		if !st.ServedAt.IsZero() {
			ch.ServedAt = &st.ServedAt
		}
		for _, m := range st.Models {
			ch.Models = append(ch.Models, m.Name)
			if !m.CoolingUntil.IsZero() {
				ch.Cooling = append(ch.Cooling, coolingModel{Model: m.Name, Until: m.CoolingUntil, Reason: m.Reason})
			}
		}
		out = append(out, ch)
	}
	return out
}

type modelHealth struct {
	Name string `json:"name"`
	// State: "unknown" before the first call, then "reachable" or
	// "unreachable" as the last finished call found it.
	State       string     `json:"state"`
	BreakerOpen bool       `json:"breakerOpen"`
	LastError   string     `json:"lastError,omitempty"`
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
}

func (h *healthState) report() healthReport {
	body := healthReport{Status: "starting", Channels: map[string]channels.Health{}}
	g, hm := h.g.Load(), h.model.Load()
	if m := h.mcp.Load(); m != nil {
		body.MCP = m.Status()
	}
	if r := h.chains.Load(); r != nil {
		body.Chains = chainsHealth(r)
	}
	if c := h.cluster.Load(); c != nil {
		body.Processes = c.report(time.Now())
	}
	if g != nil {
		body.Channels = g.Health()
		body.Status = "ok"
		for _, c := range body.Channels {
			if c.State != channels.StateConnected && c.State != channels.StateStopped && c.State != channels.StateStandby {
				body.Status = "degraded"
			}
		}
	}
	if hm != nil {
		st := hm.m.State()
		m := &modelHealth{Name: hm.m.Model(), State: "unknown", BreakerOpen: st.BreakerOpen, LastError: st.LastErrorClass}
		switch {
		case st.Known && st.Reachable:
			m.State = "reachable"
		case st.Known:
			m.State = "unreachable"
		}
		if !st.LastErrorAt.IsZero() {
			m.LastErrorAt = &st.LastErrorAt
		}
		body.Model = m
	}
	if h.stopping.Load() {
		body.Status = "stopping"
	}
	// Ready to take messages: serving, and the model not known to be down
	// (an open breaker fails every turn fast).
	body.Ready = body.Status == "ok" && (body.Model == nil || !body.Model.BreakerOpen)
	return body
}

func (h *healthState) handler() http.Handler {
	mux := http.NewServeMux()
	serve := func(ok func(healthReport) bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body := h.report()
			w.Header().Set("Content-Type", "application/json")
			if !ok(body) {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			_ = json.NewEncoder(w).Encode(body)
		}
	}
	mux.HandleFunc("GET /healthz", serve(func(b healthReport) bool { return b.Status == "ok" }))
	mux.HandleFunc("GET /readyz", serve(func(b healthReport) bool { return b.Ready }))
	mux.Handle("GET /metrics", &h.metrics)
	return mux
}

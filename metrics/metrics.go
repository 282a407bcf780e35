// Package metrics keeps dreamgate's operational counters and serves them,
// with the usual Go and process series, in the Prometheus text format for
// GET /metrics.
//
// It is built on prometheus/client_golang, the ecosystem's own library: a
// registry of its own (never the library's global one), the library's Go
// and process collectors (named as promtool and dashboards expect), and
// promhttp for the exposition. VictoriaMetrics/metrics, the lighter
// choice, writes no help text and types process_io_* as gauges, which
// promtool reports; docs/development.md has the size and start-up cost of
// both.
//
// It imports no package of ours: the packages that see events declare
// small observer interfaces of their own (gateway.Observer,
// dream.Observer), which *Metrics satisfies, and cmd/dreamgate wires it in.
// State that is already kept elsewhere (token usage, channel health, the
// queues, the Dream backlog) is read at scrape time through Sources, which
// cmd passes to Handler. Only cmd imports this package; third-party types
// stay inside it.
package metrics

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// Bucket upper bounds, in seconds.
var (
	// A turn's parts: a tool-free gateway part takes milliseconds, a model
	// part seconds to minutes.
	turnBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// A Dream: nothing new is instant; a full run is up to Dream's timeout.
	dreamBuckets = []float64{.1, 1, 5, 10, 30, 60, 120, 300, 600, 1200}
)

// Metrics holds the counters of events. Its methods are safe for
// concurrent use, never block on I/O, and do nothing on a nil *Metrics.
type Metrics struct {
	reg *prometheus.Registry

	turns         *prometheus.CounterVec
	turnModel     prometheus.Histogram
	turnGateway   prometheus.Histogram
	commands      *prometheus.CounterVec
	busy          *prometheus.CounterVec
	modelCalls    *prometheus.CounterVec
	archiveRounds prometheus.Counter
	archiveRaw    prometheus.Counter
	dreamRuns     *prometheus.CounterVec
	dreamDuration prometheus.Histogram
	takeovers     prometheus.Counter
	claimWaits    prometheus.Histogram

	// backlog keeps the last Dream backlog a source could read.
	backlog lastValue
}

// New returns Metrics with every counter at zero, registered with the Go
// and process collectors.
func New() *Metrics {
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	}
	m := &Metrics{
		reg:           prometheus.NewRegistry(),
		turns:         counterVec("dreamgate_turns_total", "Chat turns, by channel and outcome.", "channel", "outcome"),
		turnModel:     histogram("dreamgate_turn_model_seconds", "Time of each chat turn in its model calls.", turnBuckets),
		turnGateway:   histogram("dreamgate_turn_gateway_seconds", "Time of each chat turn outside its model calls.", turnBuckets),
		commands:      counterVec("dreamgate_commands_total", "Chat commands, by channel and command.", "channel", "command"),
		busy:          counterVec("dreamgate_busy_refusals_total", "Messages refused because their conversation's queue was full.", "channel"),
		modelCalls:    counterVec("dreamgate_model_calls_total", "Model calls, by purpose and outcome.", "purpose", "outcome"),
		archiveRounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "dreamgate_archive_rounds_total", Help: "Archive rounds run."}),
		archiveRaw: prometheus.NewCounter(prometheus.CounterOpts{Name: "dreamgate_archive_raw_fallbacks_total",
			Help: "Archives in which a summary failed so the turns were stored as they were."}),
		dreamRuns:     counterVec("dreamgate_dream_runs_total", "Dream runs, by outcome.", "outcome"),
		dreamDuration: histogram("dreamgate_dream_duration_seconds", "Time each Dream run took.", dreamBuckets),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "dreamgate_takeovers_total",
			Help: "Conversations this process took over from a process of the store that died holding them."}),
		claimWaits: histogram("dreamgate_claim_wait_seconds",
			"Waits for a conversation another process of the store held, before a command could run in it.", turnBuckets),
	}
	m.reg.MustRegister(
		m.turns, m.turnModel, m.turnGateway, m.commands, m.busy, m.modelCalls,
		m.archiveRounds, m.archiveRaw, m.dreamRuns, m.dreamDuration, m.takeovers, m.claimWaits,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// TurnDone counts one chat turn of channel ended with outcome; modelTime
// is the time its chat model calls took, gatewayTime the rest.
func (m *Metrics) TurnDone(channel, outcome string, modelTime, gatewayTime time.Duration) {
	if m == nil {
		return
	}
	m.turns.WithLabelValues(label(channel), label(outcome)).Inc()
	m.turnModel.Observe(modelTime.Seconds())
	m.turnGateway.Observe(gatewayTime.Seconds())
}

// CommandDone counts one chat command. command must come from a fixed
// table (the gateway reports unknown ones as "unknown"): every value makes
// a series.
func (m *Metrics) CommandDone(channel, command string) {
	if m != nil {
		m.commands.WithLabelValues(label(channel), label(command)).Inc()
	}
}

// Busy counts one message refused because its conversation's queue was
// full.
func (m *Metrics) Busy(channel string) {
	if m != nil {
		m.busy.WithLabelValues(label(channel)).Inc()
	}
}

// ModelCall counts one model call of purpose ("chat", "archive",
// "dream-analysis", "dream-edit") ended with outcome.
func (m *Metrics) ModelCall(purpose, outcome string) {
	if m != nil {
		m.modelCalls.WithLabelValues(label(purpose), label(outcome)).Inc()
	}
}

// Archived counts the archive rounds of one consolidator call, and whether
// a slice fell back to being archived raw (its summary failed).
func (m *Metrics) Archived(rounds int, raw bool) {
	if m == nil {
		return
	}
	// A counter never goes down.
	m.archiveRounds.Add(float64(max(rounds, 0)))
	if raw {
		m.archiveRaw.Inc()
	}
}

// DreamDone counts one finished Dream run and its duration.
func (m *Metrics) DreamDone(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.dreamRuns.WithLabelValues(label(outcome)).Inc()
	m.dreamDuration.Observe(took.Seconds())
}

// Takeover counts one conversation taken over from a process of the store
// that died holding it.
func (m *Metrics) Takeover() {
	if m != nil {
		m.takeovers.Inc()
	}
}

// ClaimWait counts one wait for a conversation another process held.
func (m *Metrics) ClaimWait(d time.Duration) {
	if m != nil {
		m.claimWaits.Observe(d.Seconds())
	}
}

// label is a label value as the format takes it: bytes that are not
// UTF-8 become U+FFFD (the library refuses them, and a series is better
// than a panic).
func label(v string) string { return strings.ToValidUTF8(v, "\uFFFD") }

// gatherer is the counters with what src says now.
func (m *Metrics) gatherer(src Sources) prometheus.Gatherer {
	scraped := prometheus.NewRegistry()
	scraped.MustRegister(sourceCollector{src: src, backlog: &m.backlog})
	return prometheus.Gatherers{m.reg, scraped}
}

// Handler serves GET /metrics, reading src on every scrape. A failure to
// gather (a source's label values that clash) is served as a 500 with the
// error, as promhttp does.
func (m *Metrics) Handler(src Sources) http.Handler {
	if m == nil {
		m = New()
	}
	return promhttp.HandlerFor(m.gatherer(src), promhttp.HandlerOpts{})
}

// WritePrometheus writes every metric to w in the Prometheus text format,
// reading src first: what Handler serves to a scraper that asks for text.
func (m *Metrics) WritePrometheus(w io.Writer, src Sources) error {
	if m == nil {
		m = New()
	}
	families, err := m.gatherer(src).Gather()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

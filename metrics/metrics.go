// Package metrics keeps dreamgate's operational counters and renders them
// in the Prometheus text format for GET /metrics.
//
// It wraps github.com/VictoriaMetrics/metrics, whose types never leave this
// package. It imports no package of ours: the packages that see events
// declare small observer interfaces of their own (gateway.Observer,
// dream.Observer), which *Metrics satisfies, and cmd/dreamgate wires it in.
// State that is already kept elsewhere (token usage, channel health, the
// queues, the Dream backlog) is read at scrape time through Sources, which
// cmd passes to Handler. Only cmd imports this package.
//
// The library was chosen over prometheus/client_golang for start-up cost,
// which every command pays because package initialisation runs whether or
// not metrics are served: measured in this binary with GODEBUG=inittrace=1,
// about 0.5 ms against 0.8 ms for client_golang, which registers Go and
// process collectors at init and links protobuf (2.9 MB of binary). This
// package itself does nothing at init.
package metrics

import (
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
)

// Sources read state that is kept elsewhere, at scrape time. Any may be
// nil; its metrics are then left out. They are called on the scraping
// goroutine and must be safe for concurrent use.
type Sources struct {
	// QueueDepth is the number of messages waiting behind a running turn.
	QueueDepth func() int
	// Tokens are the tokens used by successful model calls so far, by
	// purpose.
	Tokens func() map[string]Tokens
	// BreakerOpen reports whether model calls are failing fast.
	BreakerOpen func() bool
	// DreamBacklog is the number of history entries Dream has not read.
	DreamBacklog func() (int, error)
	// Channels reports each channel's connection.
	Channels func() map[string]Channel
}

// Tokens counts the tokens of one purpose.
type Tokens struct {
	Prompt, Completion int
}

// Channel is one channel's connection as its health reports it.
type Channel struct {
	// State is one of the channels.State* values ("connected", …).
	State string
	// Reconnects and RateLimitWaits count since the process started.
	Reconnects     int
	RateLimitWaits int
}

// channelStates are the states a channel may report (channels.State*);
// each gets a series of dreamgate_channel_state, 1 for the current one.
var channelStates = []string{"connecting", "connected", "reconnecting", "stopped", "failed"}

// Bucket upper bounds, in seconds.
var (
	// A turn's parts: a tool-free gateway part takes milliseconds, a model
	// part seconds to minutes.
	turnBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// A Dream: nothing new is instant; a full run is up to Dream's timeout.
	dreamBuckets = []float64{.1, 1, 5, 10, 30, 60, 120, 300, 600, 1200}
)

// Metrics holds the counters. Its methods are safe for concurrent use, never
// block on I/O, and do nothing on a nil *Metrics.
type Metrics struct {
	set *vm.Set

	// scrape serialises the copying of Sources into the set, so two
	// scrapes never interleave their writes of one snapshot.
	scrape sync.Mutex
}

// New returns Metrics with every counter at zero.
func New() *Metrics {
	// The library leaves out # TYPE lines unless told; without them every
	// series is "untyped" to Prometheus. The switch is the library's own
	// (process-wide), and this process has only one exposition.
	vm.ExposeMetadata(true)
	m := &Metrics{set: vm.NewSet()}
	// Series that exist from the start, so rate() sees their first
	// increase and a dashboard shows 0 rather than nothing.
	m.set.GetOrCreatePrometheusHistogramExt(`dreamgate_turn_model_seconds`, turnBuckets)
	m.set.GetOrCreatePrometheusHistogramExt(`dreamgate_turn_gateway_seconds`, turnBuckets)
	m.set.GetOrCreatePrometheusHistogramExt(`dreamgate_dream_duration_seconds`, dreamBuckets)
	m.set.GetOrCreateCounter(`dreamgate_archive_rounds_total`)
	m.set.GetOrCreateCounter(`dreamgate_archive_raw_fallbacks_total`)
	return m
}

// TurnDone counts one chat turn of channel ended with outcome; modelTime
// is the time its chat model calls took, gatewayTime the rest.
func (m *Metrics) TurnDone(channel, outcome string, modelTime, gatewayTime time.Duration) {
	if m == nil {
		return
	}
	m.counter("dreamgate_turns_total", "channel", channel, "outcome", outcome).Inc()
	m.set.GetOrCreatePrometheusHistogramExt(`dreamgate_turn_model_seconds`, turnBuckets).Update(modelTime.Seconds())
	m.set.GetOrCreatePrometheusHistogramExt(`dreamgate_turn_gateway_seconds`, turnBuckets).Update(gatewayTime.Seconds())
}

// CommandDone counts one chat command. command must come from a fixed
// table (the gateway reports unknown ones as "unknown"): every value makes
// a series.
func (m *Metrics) CommandDone(channel, command string) {
	if m == nil {
		return
	}
	m.counter("dreamgate_commands_total", "channel", channel, "command", command).Inc()
}

// Busy counts one message refused because its conversation's queue was
// full.
func (m *Metrics) Busy(channel string) {
	if m == nil {
		return
	}
	m.counter("dreamgate_busy_refusals_total", "channel", channel).Inc()
}

// ModelCall counts one model call of purpose ("chat", "archive",
// "dream-analysis", "dream-edit") ended with outcome.
func (m *Metrics) ModelCall(purpose, outcome string) {
	if m == nil {
		return
	}
	m.counter("dreamgate_model_calls_total", "purpose", purpose, "outcome", outcome).Inc()
}

// Archived counts the archive rounds of one consolidator call, and whether
// a slice fell back to being archived raw (its summary failed).
func (m *Metrics) Archived(rounds int, raw bool) {
	if m == nil {
		return
	}
	m.set.GetOrCreateCounter(`dreamgate_archive_rounds_total`).Add(rounds)
	if raw {
		m.set.GetOrCreateCounter(`dreamgate_archive_raw_fallbacks_total`).Inc()
	}
}

// DreamDone counts one finished Dream run and its duration.
func (m *Metrics) DreamDone(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.counter("dreamgate_dream_runs_total", "outcome", outcome).Inc()
	m.set.GetOrCreatePrometheusHistogramExt(`dreamgate_dream_duration_seconds`, dreamBuckets).Update(took.Seconds())
}

// WritePrometheus writes every metric to w in the Prometheus text format,
// reading src first, then the usual go_* and process_* series (memory,
// CPU, goroutines, open files), which the library reads only now.
func (m *Metrics) WritePrometheus(w io.Writer, src Sources) {
	m.scrape.Lock()
	m.refresh(src)
	m.scrape.Unlock()
	m.set.WritePrometheus(w)
	vm.WriteProcessMetrics(w)
}

// Handler serves GET /metrics, reading src on every scrape.
func (m *Metrics) Handler(src Sources) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WritePrometheus(w, src)
	})
}

// refresh copies the sources' current values into the set, so one
// exposition (with one # TYPE line per family) holds both kinds.
func (m *Metrics) refresh(src Sources) {
	if f := src.QueueDepth; f != nil {
		m.gauge("dreamgate_queue_depth").Set(float64(f()))
	}
	if f := src.BreakerOpen; f != nil {
		m.gauge("dreamgate_model_breaker_open").Set(boolFloat(f()))
	}
	if f := src.DreamBacklog; f != nil {
		// An unreadable history leaves the last value: a scrape is no
		// place to report it, and Dream logs it when it reads.
		if n, err := f(); err == nil {
			m.gauge("dreamgate_dream_backlog_entries").Set(float64(n))
		}
	}
	if f := src.Tokens; f != nil {
		for purpose, t := range f() {
			m.counter("dreamgate_model_tokens_total", "purpose", purpose, "kind", "prompt").Set(uint64(max(t.Prompt, 0)))
			m.counter("dreamgate_model_tokens_total", "purpose", purpose, "kind", "completion").Set(uint64(max(t.Completion, 0)))
		}
	}
	if f := src.Channels; f != nil {
		chs := f()
		names := make([]string, 0, len(chs))
		for name := range chs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			c := chs[name]
			for _, st := range channelStates {
				m.gauge("dreamgate_channel_state", "channel", name, "state", st).Set(boolFloat(c.State == st))
			}
			m.counter("dreamgate_channel_reconnects_total", "channel", name).Set(uint64(max(c.Reconnects, 0)))
			m.counter("dreamgate_channel_rate_limit_waits_total", "channel", name).Set(uint64(max(c.RateLimitWaits, 0)))
		}
	}
}

func (m *Metrics) counter(name string, labels ...string) *vm.Counter {
	return m.set.GetOrCreateCounter(series(name, labels...))
}

func (m *Metrics) gauge(name string, labels ...string) *vm.Gauge {
	return m.set.GetOrCreateGauge(series(name, labels...), nil)
}

// series renders name{k="v",…} from key, value pairs, escaping the values
// as the text format wants (backslash, double quote, newline).
func series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		for _, r := range labels[i+1] {
			switch r {
			case '\\':
				b.WriteString(`\\`)
			case '"':
				b.WriteString(`\"`)
			case '\n':
				b.WriteString(`\n`)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

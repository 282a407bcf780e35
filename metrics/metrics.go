// Package metrics keeps dreamgate's operational counters and renders them
// in the Prometheus text format for GET /metrics.
//
// It imports no package of ours: the packages that see events declare
// small observer interfaces of their own (gateway.Observer,
// dream.Observer), which *Metrics satisfies, and cmd/dreamgate wires it in.
// State that is already kept elsewhere (token usage, channel health, the
// queues, the Dream backlog) is read at scrape time through Sources, which
// cmd passes to Handler. Only cmd imports this package.
//
// It writes the text format itself rather than use a library, for start-up
// cost: every command pays package initialisation whether or not metrics
// are served, and the one-shot `dreamgate chat` is mostly start-up.
// prometheus/client_golang registers Go and process collectors at init and
// links protobuf (2.9 MB of binary). VictoriaMetrics/metrics, used before,
// took 0.36 ms in its init and 0.08 ms in that of runtime/metrics, which it
// imports (medians of 30 runs of GODEBUG=inittrace=1 dreamgate --help),
// started goroutines that read cgroup pressure files, and printed an INFO
// line on stderr at every start on cgroup-v2 hosts without them. This
// package does nothing at init (its package-level state is constant
// tables and zero values), imports only standard packages that the binary
// links anyway or that have no init work (a test keeps it so), starts no
// goroutine, and reads the go_* and process_* figures only when scraped.
// The series it serves are few and of fixed shape, which is what keeps
// writing the format small: every family, its type and its label names
// are in one table (families).
package metrics

import (
	"io"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"
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
	// Models reports each named model's calls and tokens by purpose, and
	// Cooling whether each is passed over now since it failed.
	Models  func() []ModelCalls
	Cooling func() map[string]bool
}

// ModelCalls counts one named model's calls for one purpose: those sent
// to it, those that failed, those after which the next model of the
// purpose's chain was asked, and the tokens of its successful ones.
type ModelCalls struct {
	Model, Purpose                 string
	Calls, Failures, Fallbacks     int
	PromptTokens, CompletionTokens int
}

// Tokens counts the tokens of one purpose. Cached is the part of Prompt
// the provider reported as served from its cache.
type Tokens struct {
	Prompt, Completion, Cached int
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
var channelStates = [...]string{"connecting", "connected", "reconnecting", "stopped", "failed"}

// Bucket upper bounds, in seconds.
var (
	// A turn's parts: a tool-free gateway part takes milliseconds, a model
	// part seconds to minutes.
	turnBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// A Dream: nothing new is instant; a full run is up to Dream's timeout.
	dreamBuckets = []float64{.1, 1, 5, 10, 30, 60, 120, 300, 600, 1200}
)

// family indexes families.
type family int

// The families, in the order of their names, which is the order they are
// written in (a test checks it).
const (
	archiveRawFallbacks family = iota
	archiveRounds
	busyRefusals
	channelRateLimitWaits
	channelReconnects
	channelState
	commands
	dreamBacklog
	dreamDuration
	dreamRuns
	llmCalls
	llmCompletionTokens
	llmCoolingDown
	llmFailures
	llmFallbacks
	llmPromptTokens
	modelBreakerOpen
	modelCachedTokens
	modelCalls
	modelTokens
	queueDepth
	turnGateway
	turnModel
	turns
	familyCount
)

// familySpec is one family's fixed shape. A family has at most two
// labels, whose names are fixed here, so a series is keyed by its values.
type familySpec struct {
	name, typ, help string
	labels          []string
	buckets         []float64 // histograms only
}

// families is the table of every dreamgate_* family. It is static data:
// the linker lays it out, no code runs for it at init.
var families = [familyCount]familySpec{
	archiveRawFallbacks:   {"dreamgate_archive_raw_fallbacks_total", "counter", "Archives in which a summary failed so the turns were stored as they were.", nil, nil},
	archiveRounds:         {"dreamgate_archive_rounds_total", "counter", "Archive rounds run.", nil, nil},
	busyRefusals:          {"dreamgate_busy_refusals_total", "counter", "Messages refused because their conversation's queue was full.", []string{"channel"}, nil},
	channelRateLimitWaits: {"dreamgate_channel_rate_limit_waits_total", "counter", "Rate limits waited out, by channel.", []string{"channel"}, nil},
	channelReconnects:     {"dreamgate_channel_reconnects_total", "counter", "Reconnections, by channel.", []string{"channel"}, nil},
	channelState:          {"dreamgate_channel_state", "gauge", "1 for each channel's current connection state.", []string{"channel", "state"}, nil},
	commands:              {"dreamgate_commands_total", "counter", "Chat commands, by channel and command.", []string{"channel", "command"}, nil},
	dreamBacklog:          {"dreamgate_dream_backlog_entries", "gauge", "History entries Dream has not read yet.", nil, nil},
	dreamDuration:         {"dreamgate_dream_duration_seconds", "histogram", "Time each Dream run took.", nil, dreamBuckets},
	dreamRuns:             {"dreamgate_dream_runs_total", "counter", "Dream runs, by outcome.", []string{"outcome"}, nil},
	llmCalls:              {"dreamgate_llm_calls_total", "counter", "Calls sent to each named model, by model and purpose.", []string{"model", "purpose"}, nil},
	llmCompletionTokens:   {"dreamgate_llm_completion_tokens_total", "counter", "Completion tokens of each named model's successful calls, by model and purpose.", []string{"model", "purpose"}, nil},
	llmCoolingDown:        {"dreamgate_llm_cooling_down", "gauge", "1 while a named model is passed over since it failed.", []string{"model"}, nil},
	llmFailures:           {"dreamgate_llm_failures_total", "counter", "Calls each named model failed, by model and purpose.", []string{"model", "purpose"}, nil},
	llmFallbacks:          {"dreamgate_llm_fallbacks_total", "counter", "Calls a named model failed that went on to the next model of the purpose's chain, by model and purpose.", []string{"model", "purpose"}, nil},
	llmPromptTokens:       {"dreamgate_llm_prompt_tokens_total", "counter", "Prompt tokens of each named model's successful calls, by model and purpose.", []string{"model", "purpose"}, nil},
	modelBreakerOpen:      {"dreamgate_model_breaker_open", "gauge", "1 while model calls fail fast.", nil, nil},
	// Cached tokens are a part of the prompt tokens, so a family of their
	// own: as a kind of dreamgate_model_tokens_total a sum over kinds would
	// count them twice.
	modelCachedTokens: {"dreamgate_model_cached_tokens_total", "counter", "Prompt tokens of successful model calls that the provider served from its prompt cache (a part of kind=prompt), by purpose.", []string{"purpose"}, nil},
	modelCalls:        {"dreamgate_model_calls_total", "counter", "Model calls, by purpose and outcome.", []string{"purpose", "outcome"}, nil},
	modelTokens:       {"dreamgate_model_tokens_total", "counter", "Tokens used by successful model calls, by purpose and kind.", []string{"purpose", "kind"}, nil},
	queueDepth:        {"dreamgate_queue_depth", "gauge", "Messages waiting behind a running turn.", nil, nil},
	turnGateway:       {"dreamgate_turn_gateway_seconds", "histogram", "Time of each chat turn outside its model calls.", nil, turnBuckets},
	turnModel:         {"dreamgate_turn_model_seconds", "histogram", "Time of each chat turn in its model calls.", nil, turnBuckets},
	turns:             {"dreamgate_turns_total", "counter", "Chat turns, by channel and outcome.", []string{"channel", "outcome"}, nil},
}

// labelValues are one series' label values, in its family's label order;
// unused ones are empty.
type labelValues [2]string

// cell is one series' value: v for a counter or gauge; for a histogram the
// observations per bucket (not cumulative, the last one +Inf) and their sum.
type cell struct {
	v      float64
	counts []uint64
	sum    float64
}

// Metrics holds the counters. Its methods are safe for concurrent use, never
// block on I/O, and do nothing on a nil *Metrics.
type Metrics struct {
	// mu guards series. It is held only to update or copy values, never
	// while reading Sources or writing to the scraper.
	mu     sync.Mutex
	series [familyCount]map[labelValues]*cell

	// scrape serialises reading Sources and storing what they said, so
	// two scrapes never interleave their writes of one snapshot.
	scrape sync.Mutex
}

// New returns Metrics with every counter at zero.
func New() *Metrics {
	m := &Metrics{}
	// Series that exist from the start, so rate() sees their first
	// increase and a dashboard shows 0 rather than nothing.
	for _, f := range [...]family{turnModel, turnGateway, dreamDuration, archiveRounds, archiveRawFallbacks} {
		m.cell(f, labelValues{})
	}
	return m
}

// TurnDone counts one chat turn of channel ended with outcome; modelTime
// is the time its chat model calls took, gatewayTime the rest.
func (m *Metrics) TurnDone(channel, outcome string, modelTime, gatewayTime time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cell(turns, labelValues{channel, outcome}).v++
	m.observe(turnModel, modelTime.Seconds())
	m.observe(turnGateway, gatewayTime.Seconds())
}

// CommandDone counts one chat command. command must come from a fixed
// table (the gateway reports unknown ones as "unknown"): every value makes
// a series.
func (m *Metrics) CommandDone(channel, command string) {
	m.add(commands, labelValues{channel, command}, 1)
}

// Busy counts one message refused because its conversation's queue was
// full.
func (m *Metrics) Busy(channel string) {
	m.add(busyRefusals, labelValues{channel}, 1)
}

// ModelCall counts one model call of purpose ("chat", "archive",
// "dream-analysis", "dream-edit") ended with outcome.
func (m *Metrics) ModelCall(purpose, outcome string) {
	m.add(modelCalls, labelValues{purpose, outcome}, 1)
}

// Archived counts the archive rounds of one consolidator call, and whether
// a slice fell back to being archived raw (its summary failed).
func (m *Metrics) Archived(rounds int, raw bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// A counter never goes down.
	m.cell(archiveRounds, labelValues{}).v += float64(max(rounds, 0))
	if raw {
		m.cell(archiveRawFallbacks, labelValues{}).v++
	}
}

// DreamDone counts one finished Dream run and its duration.
func (m *Metrics) DreamDone(outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cell(dreamRuns, labelValues{outcome}).v++
	m.observe(dreamDuration, took.Seconds())
}

// WritePrometheus writes every metric to w in the Prometheus text format,
// reading src first, then the usual go_* and process_* series (memory,
// CPU, goroutines, open files), which are read only now.
func (m *Metrics) WritePrometheus(w io.Writer, src Sources) {
	// One buffer for the whole exposition (about 12 KiB).
	buf := make([]byte, 0, 16<<10)
	if m != nil {
		m.scrape.Lock()
		m.refresh(src)
		m.scrape.Unlock()
		m.mu.Lock()
		buf = m.appendSeries(buf)
		m.mu.Unlock()
	}
	buf = appendRuntime(buf)
	buf = appendProcess(buf)
	// The scraper's connection is written to with no lock held, so a slow
	// scraper never holds up the events.
	_, _ = w.Write(buf)
}

// Handler serves GET /metrics, reading src on every scrape.
func (m *Metrics) Handler(src Sources) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WritePrometheus(w, src)
	})
}

// refresh stores the sources' current values among the events' series, so
// one exposition (with one # TYPE line per family) holds both kinds. The
// sources are called with mu not held: they may take their own locks.
func (m *Metrics) refresh(src Sources) {
	type setting struct {
		f  family
		lv labelValues
		v  float64
	}
	var set []setting
	if f := src.QueueDepth; f != nil {
		set = append(set, setting{queueDepth, labelValues{}, float64(f())})
	}
	if f := src.BreakerOpen; f != nil {
		set = append(set, setting{modelBreakerOpen, labelValues{}, boolFloat(f())})
	}
	if f := src.DreamBacklog; f != nil {
		// An unreadable history leaves the last value: a scrape is no
		// place to report it, and Dream logs it when it reads.
		if n, err := f(); err == nil {
			set = append(set, setting{dreamBacklog, labelValues{}, float64(n)})
		}
	}
	if f := src.Tokens; f != nil {
		for purpose, t := range f() {
			set = append(set,
				setting{modelTokens, labelValues{purpose, "prompt"}, float64(max(t.Prompt, 0))},
				setting{modelTokens, labelValues{purpose, "completion"}, float64(max(t.Completion, 0))},
				setting{modelCachedTokens, labelValues{purpose}, float64(max(t.Cached, 0))})
		}
	}
	if f := src.Models; f != nil {
		for _, mc := range f() {
			lv := labelValues{mc.Model, mc.Purpose}
			set = append(set,
				setting{llmCalls, lv, float64(max(mc.Calls, 0))},
				setting{llmFailures, lv, float64(max(mc.Failures, 0))},
				setting{llmFallbacks, lv, float64(max(mc.Fallbacks, 0))},
				setting{llmPromptTokens, lv, float64(max(mc.PromptTokens, 0))},
				setting{llmCompletionTokens, lv, float64(max(mc.CompletionTokens, 0))})
		}
	}
	if f := src.Cooling; f != nil {
		for name, cooling := range f() {
			set = append(set, setting{llmCoolingDown, labelValues{name}, boolFloat(cooling)})
		}
	}
	if f := src.Channels; f != nil {
		for name, c := range f() {
			for _, st := range channelStates {
				set = append(set, setting{channelState, labelValues{name, st}, boolFloat(c.State == st)})
			}
			set = append(set,
				setting{channelReconnects, labelValues{name}, float64(max(c.Reconnects, 0))},
				setting{channelRateLimitWaits, labelValues{name}, float64(max(c.RateLimitWaits, 0))})
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range set {
		m.cell(s.f, s.lv).v = s.v
	}
}

// add adds d to a counter.
func (m *Metrics) add(f family, lv labelValues, d float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.cell(f, lv).v += d
	m.mu.Unlock()
}

// observe records v in histogram f, whose bucket bounds are ascending; a
// value equal to a bound belongs to that bound's bucket (le). mu is held.
func (m *Metrics) observe(f family, v float64) {
	c := m.cell(f, labelValues{})
	c.counts[sort.SearchFloat64s(families[f].buckets, v)]++
	c.sum += v
}

// cell returns the series of f with label values lv, creating it at zero.
// mu is held (or m not yet shared).
func (m *Metrics) cell(f family, lv labelValues) *cell {
	if c, ok := m.series[f][lv]; ok {
		return c
	}
	if m.series[f] == nil {
		m.series[f] = map[labelValues]*cell{}
	}
	c := &cell{}
	if bs := families[f].buckets; bs != nil {
		c.counts = make([]uint64, len(bs)+1)
	}
	m.series[f][lv] = c
	return c
}

// appendSeries appends every dreamgate_* family that has a series, in
// the table's (name) order, each series sorted by its label values. mu is
// held.
func (m *Metrics) appendSeries(b []byte) []byte {
	var keys []labelValues
	for f := range familyCount {
		spec := &families[f]
		if len(m.series[f]) == 0 {
			continue
		}
		b = appendHeader(b, spec.name, spec.typ, spec.help)
		keys = keys[:0]
		for lv := range m.series[f] {
			keys = append(keys, lv)
		}
		slices.SortFunc(keys, compareLabels)
		for _, lv := range keys {
			c := m.series[f][lv]
			pairs := labelPairs(spec.labels, lv)
			if spec.buckets == nil {
				b = appendSample(b, spec.name, "", pairs, c.v)
				continue
			}
			b = appendHistogram(b, spec.name, pairs, spec.buckets, c.counts, c.sum)
		}
	}
	return b
}

func compareLabels(a, b labelValues) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// labelPairs pairs a family's label names with one series' values.
func labelPairs(names []string, lv labelValues) [2][2]string {
	var p [2][2]string
	for i, n := range names {
		p[i] = [2]string{n, lv[i]}
	}
	return p
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
